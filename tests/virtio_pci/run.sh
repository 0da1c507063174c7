#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The virtio-pci suite: tide's virtio driver over its PCI transport in a QEMU guest
# (software CPU, q35 with the emulated Intel IOMMU, a modern virtio-net-pci with
# iommu_platform=on on a unix-datagram wire to tests/pci/wire.c), beside DPDK's net_virtio
# on the same device in the same boot (tests/virtio_pci/guest_init.sh says what runs).
#
# MODE main (the suite virtio_pci): passes when every PCITEST check the guest prints is ok,
# the counts of tide-fwd and of dpdk-testpmd equal COUNT per size both ways and equal each
# other, and the IOMMU reported no fault at all (QEMU "vtd_" on stderr, "DMAR" in the guest
# log). MODE packed (the suite virtio_pci_packed): the device offers packed rings (QEMU
# packed=on) and tide runs them (packed=yes): the same checks, the layout checked too
# (packed_rings, fwd_packed), tide-fwd's counts equal to COUNT (DPDK does not run there:
# guest_init.sh says why). MODE mq (the suite virtio_pci_mq): two queue pairs on a second
# device (packed rings offered), on a two-queue tap in a network namespace of its own with
# mqpeer.py at the tap's end, split and then packed rings; passes on 'PCITEST mq_pairs ok',
# 'PCITEST mq_pairs_packed ok' and no IOMMU fault. Exit 77 when QEMU or the guest kernel
# cannot be had, and in MODE mq without root, ip, /dev/net/tun, python3 or a new namespace.
#
# usage: run.sh MODE VPCI_GUEST TIDE_FWD WIRE TEST_PORT CACHE_DIR [COUNT]
set -u
mode=$1 guest=$2 fwd=$3 wire=$4 test_port=$5 cache=$6 count=${7:-${PCI_COUNT:-1000}}
. "$(dirname "$0")/../guest/lib.sh"
guest_preflight
if [ "$mode" = mq ]; then
	[ "$(id -u)" = 0 ] || guest_skip "the two-pair device needs root (a tap in a network namespace)"
	command -v ip >/dev/null || guest_skip "the two-pair device needs iproute2 (ip)"
	[ -c /dev/net/tun ] || guest_skip "the two-pair device needs /dev/net/tun"
	command -v python3 >/dev/null || guest_skip "the two-pair device needs python3 (mqpeer.py)"
fi
guest_kernel "$cache"
guest_tmpdir

guest_rootfs
guest_vfio_modules
guest_bin vpci_guest "$guest"
guest_bin tide-fwd "$fwd"
guest_bin test_port "$test_port"
guest_dpdk bus_pci mempool_ring net_virtio
guest_pack "$(dirname "$0")/guest_init.sh"

guest_wire_start "$wire" 155
guest_wire_args
start=$SECONDS
# Two queue pairs need a multi-queue netdev: a second device on a two-queue tap in a network
# namespace of its own, QEMU in it, mqpeer.py at the tap's end.
mq=()
phases=${PCI_PHASES:-main,tide,dpdk}
packed_on=""
if [ "$mode" = packed ]; then
	phases=packed
	packed_on=,packed=on
fi
if [ "$mode" = mq ]; then
	phases=mq
	ip netns add "tide-vpcimq-$$" 2>/dev/null || guest_skip "cannot create a network namespace"
	guest_netns=tide-vpcimq-$$
	trap 'guest_cleanup; wait 2>/dev/null; ip netns del "$guest_netns"' EXIT
	ip -n "$guest_netns" tuntap add dev vq0 mode tap multi_queue &&
		ip netns exec "$guest_netns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1 &&
		ip -n "$guest_netns" link set vq0 up || guest_skip "cannot create a multi-queue tap"
	mq=(-netdev tap,id=n1,ifname=vq0,script=no,downscript=no,queues=2,vhost=off
		-device virtio-net-pci,netdev=n1,mac=52:54:00:12:34:57,disable-legacy=on,iommu_platform=on,mq=on,packed=on,vectors=6,addr=0x5)
	ip netns exec "$guest_netns" python3 "$(dirname "$0")/mqpeer.py" vq0 >"$dir/mqpeer.log" 2>&1 &
	pids+=($!)
	mqpid=$!
	for _ in $(seq 50); do grep -q ready "$dir/mqpeer.log" && break; sleep 0.1; done
fi
# ioeventfd=off: QEMU then reads a queue only when the driver notifies it (with ioeventfd,
# DRIVER_OK kicks every queue once, which would answer the control command that the guest's
# ctrl_stuck and ctrl_wait keep from the device).
guest_qemu 150 "hugepages=64 pcicount=$count pciphases=$phases${PCI_VERBOSE:+ pciverbose=1}" \
	"${wire_args[@]}" \
	-device virtio-net-pci,netdev=n0,mac=52:54:00:12:34:56,disable-legacy=on,iommu_platform=on,mq=on,ioeventfd=off$packed_on \
	"${mq[@]}"
guest_wait
guest_wire_wait
echo "guest ran $((SECONDS - start)) s (QEMU exit $qrc, wire exit $wrc), $count frames per size"
grep -a "PCITEST\|^fwd:\|^testpmd:\|^conformance:\|^vpci_guest:\|DMAR\|virtio" "$dir/console.log"
grep -a "^wire:" "$dir/wire.log" | grep -v "^wire: [<>] RX\|OK RX" | tail -40

if [ "$mode" = mq ]; then
	pci_checks bind mq_pairs mq_pairs_packed
	kill "$mqpid" 2>/dev/null && wait "$mqpid"
	grep -a "^mqpeer:" "$dir/mqpeer.log" | tail -3
elif [ "$mode" = packed ]; then
	pci_checks bind bad_config open packed_rings mac link_up mq_ctrl reset_stuck reset_wait \
		ctrl_stuck ctrl_wait port_conformance rx_60 rx_1514 rx_8996 tx_60 tx_1514 tx_8996 stats tx_bounced \
		intr link fault stop_start_polling stop_pool_whole close_pool_whole fwd_packed \
		fwd_interrupt
	for size in 60 1514 8996; do
		t=$(grep -a "^PCITEST echo_tide_$size " "$dir/console.log" | grep -o "sent=.*")
		[ "$t" = "sent=$count back=$count bad=0 order=0" ] ||
			fail "tide-fwd at $size bytes: '$t', expected 'sent=$count back=$count bad=0 order=0'"
	done
	grep -aq "PCITEST fwd_exit rc=0" "$dir/console.log" || fail "tide-fwd did not exit 0 (buffers or errors)"
else
	pci_checks bind bad_config open mac link_up mq_ctrl reset_stuck reset_wait ctrl_stuck \
		ctrl_wait port_conformance rx_60 rx_1514 rx_8996 tx_60 tx_1514 tx_8996 stats \
		tx_bounced intr link fault stop_start_polling stop_pool_whole close_pool_whole \
		fwd_interrupt
	pci_echo_checks "$count"
fi
# The IOMMU: not one fault, on either side (the wire counted QEMU's lines at the end too).
vtd=$(grep -ac vtd_ "$dir/qemu.out")
dmar=$(grep -ac DMAR "$dir/console.log")
grep -aq "^PCITEST iommu_faults FAULTS 0" "$dir/console.log" || fail "QEMU's fault count at the end was not 0"
[ "$vtd" = 0 ] || fail "$vtd vtd_ lines in QEMU's stderr"
[ "$dmar" = 0 ] || fail "$dmar DMAR lines in the guest"
echo "IOMMU faults: QEMU $vtd, guest DMAR $dmar"
guest_verdict "virtio_pci ($mode)"
