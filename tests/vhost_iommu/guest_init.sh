#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# /init of the vhost IOMMU suite's guest (tests/vhost_iommu/run.sh builds the initramfs
# around it): binds the virtio-net-pci function (its backend: tide's vhost port on the host)
# to vfio-pci and runs iotlb_guest on it; then the guest's IOMMU faults. Results are
# "VIOTLB ..." lines on the console; the host checks them.
export PATH=/bin:/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs run /run
mkdir -p /tmp /dev/hugepages
mount -t tmpfs tmp /tmp
mount -t hugetlbfs hugetlbfs /dev/hugepages
COUNT=500
for a in $(cat /proc/cmdline); do
	case $a in
	viotlbcount=*) COUNT=${a#viotlbcount=} ;;
	esac
done
for m in irqbypass vfio_virqfd vfio vfio_iommu_type1 vfio-pci-core vfio-pci; do
	[ -f /lib/modules/$m.ko ] && { insmod /lib/modules/$m.ko || echo "VIOTLB insmod FAIL $m"; }
done
BDF=""
for d in /sys/bus/pci/devices/*; do
	[ "$(cat $d/vendor):$(cat $d/device)" = "0x1af4:0x1041" ] || continue
	echo vfio-pci >$d/driver_override
	echo ${d##*/} >/sys/bus/pci/drivers_probe
	BDF=${d##*/}
done
drv=$(readlink /sys/bus/pci/devices/$BDF/driver)
echo "VIOTLB bind $([ "${drv##*/}" = vfio-pci ] && echo ok || echo FAIL) $BDF driver=${drv##*/}"
iotlb_guest $BDF $COUNT
echo "VIOTLB guest_exit rc=$?"
echo "VIOTLB dmar $(dmesg | grep -c DMAR:.*fault)"
echo "VIOTLB guest-done"
poweroff -f
