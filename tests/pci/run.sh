#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The PCI suite: tide's e1000e driver in a QEMU guest (software CPU, q35 with the emulated
# Intel IOMMU, an e1000e NIC on a unix-datagram wire to tests/pci/wire.c), beside DPDK's
# net_e1000_em on the same device in the same boot (tests/pci/guest_init.sh says what runs).
#
# Passes when every PCITEST check the guest prints is ok, the counts of tide-fwd and of
# dpdk-testpmd equal COUNT per size both ways and equal each other, and the IOMMU reported a
# fault (QEMU "vtd_" on stderr, "DMAR" in the guest log) only for the one deliberate bad
# mapping. Exit 77 when QEMU or the guest kernel cannot be had.
#
# usage: run.sh PCI_GUEST TIDE_FWD WIRE TEST_PORT CACHE_DIR [COUNT]
#   The guest kernel, initramfs, QEMU, the wire and the checks: tests/guest/lib.sh.
set -u
guest=$1 fwd=$2 wire=$3 test_port=$4 cache=$5 count=${6:-${PCI_COUNT:-10000}}
. "$(dirname "$0")/../guest/lib.sh"
guest_preflight
guest_kernel "$cache"
guest_tmpdir

# ---- the initramfs (in this run's temp dir) ----
guest_rootfs
guest_vfio_modules
guest_bin pci_guest "$guest"
guest_bin tide-fwd "$fwd"
guest_bin test_port "$test_port"
guest_dpdk bus_pci mempool_ring net_e1000
guest_pack "$(dirname "$0")/guest_init.sh"

# ---- one guest ----
guest_wire_start "$wire" 175
guest_wire_args
start=$SECONDS
guest_qemu 170 "hugepages=64 pcicount=$count pciphases=${PCI_PHASES:-main,tide,dpdk,badmap}${PCI_VERBOSE:+ pciverbose=1}" \
	"${wire_args[@]}" -device e1000e,netdev=n0,mac=52:54:00:12:34:56
guest_wait
guest_wire_wait
echo "guest ran $((SECONDS - start)) s (QEMU exit $qrc, wire exit $wrc), $count frames per size"
grep -a "PCITEST\|^fwd:\|^testpmd:\|DMAR" "$dir/console.log"
grep -a "^wire:" "$dir/wire.log" | grep -v "^wire: [<>] RX\|OK RX" | tail -40

pci_checks bind bad_config open mac link_up port_conformance rx_60 rx_1514 rx_8996 tx_60 tx_1514 \
	tx_8996 stats tx_unmapped tx_mapped_later tx_ring_full intr link stop_start_polling \
	stop_pool_whole close_pool_whole rx_no_chain fwd_interrupt iommu_quiet_before_badmap \
	badmap_fault_seen badmap_nothing_sent badmap_pool_whole offload_capa offload_tx_mixed \
	offload_tx_control offload_tx_refused offload_rx_good offload_rx_bad_l4 offload_rx_bad_ip \
	offload_rx_not_ip offload_rx_off offload_rx_off_bad offload_tx_restart offload_rx_dropped \
	offload_pool_whole
pci_echo_checks "$count"
# The IOMMU: silent until the deliberate fault, which it must report (QEMU's side: the
# guest asked the wire to count QEMU's fault lines just before and just after it).
vtd_all=$(grep -ac vtd_ "$dir/qemu.out")
dmar_before=$(sed -n '/PCITEST badmap-begin/q;p' "$dir/console.log" | grep -ac DMAR)
dmar_after=$(sed -n '/PCITEST badmap-begin/,$p' "$dir/console.log" | grep -ac DMAR)
[ "$dmar_before" = 0 ] || fail "$dmar_before DMAR lines in the guest before the deliberate fault"
[ "$vtd_all" -gt 0 ] || fail "the deliberate bad mapping raised no vtd_ line in QEMU"
[ "$dmar_after" -gt 0 ] || fail "the deliberate bad mapping raised no DMAR line in the guest"
echo "IOMMU faults: QEMU $vtd_all line(s), all after the deliberate one; guest DMAR $dmar_after"
guest_verdict pci
