#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# /init of the vhost IOMMU suite's guest (tests/vhost_iommu/run.sh builds the initramfs
# around it): binds the virtio-net-pci function (its backend: tide's vhost port on the host)
# to vfio-pci and runs iotlb_guest on it, then DPDK's net_virtio on it as the reference;
# then the guest's IOMMU faults. Results are
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
echo "VIOTLB time tide-start $(cut -d' ' -f1 /proc/uptime)"
iotlb_guest $BDF $COUNT
echo "VIOTLB guest_exit rc=$?"
# The reference: DPDK's net_virtio on the same device, io forwarding in a loop started
# twice with one burst sent first (start tx_first): the burst goes round through the
# host's macswap until testpmd stops. The first round may lose its burst on the host (its
# Tx misses in the IOTLB for buffers of a page it has not asked for yet, and tide-fwd drops
# what a burst hands back); the second, counted one runs on pages the host has.
if command -v dpdk-testpmd >/dev/null; then
	echo "VIOTLB time testpmd-start $(cut -d' ' -f1 /proc/uptime)"
	mkfifo /run/tp.in
	dpdk-testpmd --lcores 0@0,1@0 -a $BDF --file-prefix g --huge-dir /dev/hugepages -- \
		-i --forward-mode=io --port-topology=loop --nb-cores=1 \
		--total-num-mbufs=8192 --rxd=256 --txd=256 </run/tp.in >/run/tp.log 2>&1 &
	tp=$!
	exec 4>/run/tp.in
	for _ in $(seq 300); do grep -aq "testpmd>" /run/tp.log && break; sleep 0.1; done
	echo "start tx_first" >&4
	sleep 1
	echo "stop" >&4
	sleep 0.5
	echo "start tx_first" >&4
	sleep 3
	echo "stop" >&4
	sleep 0.5
	echo "quit" >&4
	exec 4>&-
	wait $tp
	echo "VIOTLB testpmd_exit rc=$?"
	echo "VIOTLB time testpmd-end $(cut -d' ' -f1 /proc/uptime)"
	grep -a -A3 "Forward statistics for port 0" /run/tp.log | tail -3 | tr -s ' ' | sed 's/^/VIOTLB testpmd: /'
	grep -aiE "cause|fail" /run/tp.log | head -5 | sed 's/^/VIOTLB testpmd-log: /'
else
	echo "VIOTLB testpmd none"
fi
echo "VIOTLB dmar $(dmesg | grep -c DMAR:.*fault)"
echo "VIOTLB guest-done"
poweroff -f
