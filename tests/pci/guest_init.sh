#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# /init of the PCI suite's guest (tests/pci/run.sh builds the initramfs around it). Binds
# the e1000e to vfio-pci, then on that one device, in one boot:
#   1. pci_guest main: tide's driver through its API against the host's wire
#   2. tide-fwd io: the wire sends COUNT frames per size, tide-fwd sends them back
#   3. dpdk-testpmd io (net_e1000_em): the same traffic, the reference
#   4. pci_guest badmap: the one deliberate IOMMU fault
# Results are "PCITEST ..." lines on the console; the host checks them. The shared steps:
# tests/guest/init.sh.
. /lib/guest-init.sh
guest_mounts hugepages
pci_cmdline main,tide,dpdk,badmap
guest_insmod PCITEST irqbypass vfio_virqfd vfio vfio_iommu_type1 vfio-pci-core vfio-pci
guest_vfio_bind 0x8086:0x10d3
drv=$(readlink /sys/bus/pci/devices/$BDF/driver)
grp=$(readlink /sys/bus/pci/devices/$BDF/iommu_group)
echo "PCITEST bind $([ "${drv##*/}" = vfio-pci ] && echo ok || echo FAIL) $BDF driver=${drv##*/} group=${grp##*/}"
guest_wire /dev/ttyS1

phase main && pci_guest $BDF /dev/ttyS1 $COUNT main
phase main && pci_conformance e1000e
phase tide && pci_fwd pci:$BDF 1024
# The driver by name, not promiscuous (the frames are addressed to the NIC).
phase tide && pci_fwd_interrupt e1000e:pci=$BDF,promisc=no
phase dpdk && pci_testpmd 512
phase badmap && pci_guest $BDF /dev/ttyS1 1 badmap
echo BYE >&3
echo "PCITEST guest-done"
poweroff -f
