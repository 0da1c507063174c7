#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# /init of the virtio-pci suite's guest (tests/virtio_pci/run.sh builds the initramfs around
# it). Binds the virtio-net-pci functions to vfio-pci, then on the first, in one boot:
#   1. vpci_guest: tide's virtio driver over the PCI transport against the host's wire
#   2. the port conformance row virtio_pci (tests/test_port.c), the wire echoing
#   3. tide-fwd io: the wire sends COUNT frames per size, tide-fwd sends them back; then
#      tide-fwd sleeping on the Rx interrupt
#   4. dpdk-testpmd io (net_virtio): the same traffic, the reference
# or, with pciphases=mq (the suite virtio_pci_mq), vpci_guest on the two-pair device alone;
# or, with pciphases=packed (the suite virtio_pci_packed: the device offers packed rings),
# steps 1 to 3 with packed=yes on tide's ports. (DPDK 22.11's net_virtio, which takes
# packed rings when offered, is no reference there: its 8996-byte frames do not come back.)
# Results are "PCITEST ..." lines on the console; the host checks them. The shared steps:
# tests/guest/init.sh.
. /lib/guest-init.sh
guest_mounts hugepages
pci_cmdline main,tide,dpdk
guest_insmod PCITEST irqbypass vfio_virqfd vfio vfio_iommu_type1 vfio-pci-core vfio-pci
guest_vfio_bind 0x1af4:0x1041
# The device at 00:05.0, when there is one, is the two-pair device (run.sh: a two-queue tap).
MQBDF=""
for d in $BDFS; do
	if [ $d = 0000:00:05.0 ]; then MQBDF=$d; else BDF=$d; fi
done
drv=$(readlink /sys/bus/pci/devices/$BDF/driver)
grp=$(readlink /sys/bus/pci/devices/$BDF/iommu_group)
echo "PCITEST bind $([ "${drv##*/}" = vfio-pci ] && echo ok || echo FAIL) $BDF driver=${drv##*/} group=${grp##*/}"
guest_wire /dev/ttyS1

phase main && vpci_guest $BDF /dev/ttyS1 $COUNT
if phase mq; then
	if [ -n "$MQBDF" ]; then
		vpci_guest $BDF /dev/ttyS1 $COUNT $MQBDF
	else
		echo "PCITEST mq_pairs FAIL no device at 00:05.0"
	fi
fi
phase packed && vpci_guest -p $BDF /dev/ttyS1 $COUNT
phase packed && pci_conformance virtio_pci_packed
phase main && pci_conformance virtio_pci
# The wire keeps at most WINDOW frames in flight: the forwarders' Tx rings hold 256 (the
# device's queue size), and QEMU, blocked on a wire the host has not read yet, can hold
# more received frames than that; a forwarder drops (and counts) what its Tx ring refuses.
WINDOW=128
phase tide && pci_fwd pci:$BDF 256
phase tide && pci_fwd_interrupt virtio:pci=$BDF 20000
if phase packed; then
	# tide-fwd ran packed rings: VIRTIO_F_RING_PACKED (bit 34) in the features it logged.
	export TIDE_LOG_LEVEL=info
	pci_fwd pci:$BDF,packed=yes 256
	unset TIDE_LOG_LEVEL
	_f=$(grep -o "features 0x[0-9a-f]*" /run/fwd.log | tail -n 1)
	_f=${_f#features }
	echo "PCITEST fwd_packed $([ -n "$_f" ] && [ $(((_f >> 34) & 1)) = 1 ] && echo ok || echo FAIL) features ${_f:-none}"
	pci_fwd_interrupt virtio:pci=$BDF,packed=yes 20000
fi
phase dpdk && pci_testpmd 256
ask "FAULTS" | sed 's/^/PCITEST iommu_faults /'
echo BYE >&3
echo "PCITEST guest-done"
poweroff -f
