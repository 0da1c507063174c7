#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The vhost-kernel suite: the virtio driver over the guest kernel's vhost-net and a tap, in
# a QEMU guest (software CPU, no NIC: the traffic runs between tide and the guest kernel's
# stack). guest_init.sh loads tun and vhost_net, then in MODE main (the suite vhost_kernel)
# runs vkern_test (what it checks: its header) and the port conformance row on a tap that
# sends every frame back; in MODE dpdk (the suite vhost_kernel_dpdk), the reference: DPDK's
# virtio-user on the same vhost-net answering the same pings. Results are "VKTEST" lines on
# the console.
#
# Passes when the guest printed every expected VKTEST line as ok and none as FAIL, within
# one boot. Exit 77 when QEMU or the guest kernel cannot be had, and in MODE dpdk without
# dpdk-testpmd.
#
# usage: run.sh MODE VKERN_TEST TEST_PORT CACHE_DIR [COUNT [PINGS]]
set -u
mode=$1 vkern=$2 test_port=$3 cache=$4 count=${5:-${VKERN_COUNT:-500}} pings=${6:-${VKERN_PINGS:-20}}
. "$(dirname "$0")/../guest/lib.sh"
guest_preflight
[ "$mode" = dpdk ] && ! command -v dpdk-testpmd >/dev/null &&
	guest_skip "dpdk-testpmd not installed (the reference run)"
guest_kernel "$cache"
guest_tmpdir

guest_rootfs
guest_modules drivers/net/tun drivers/net/tap drivers/vhost/vhost_iotlb drivers/vhost/vhost drivers/vhost/vhost_net \
	net/sched/sch_ingress net/sched/cls_matchall net/sched/act_mirred
guest_bin vkern_test "$vkern"
guest_bin test_port "$test_port"
# iproute2's ip (tuntap) and tc (the reflecting tap of the port conformance row), when
# here, under names of their own: busybox's shell runs its own applets of the same names.
for t in ip tc; do
	p=$(PATH=$PATH:/usr/sbin:/sbin command -v $t) && guest_bin iproute2-$t "$p"
done
# The reference: DPDK's virtio-user on vhost-net.
[ "$mode" = dpdk ] && guest_dpdk bus_vdev bus_pci net_virtio mempool_ring
guest_pack "$(dirname "$0")/guest_init.sh"

start=$SECONDS
# no_timer_check: on a loaded host the TCG guest's boot-time timer check through the
# remapped IO-APIC can fail and panic the kernel ("timer doesn't work through
# Interrupt-remapped IO-APIC"); this suite needs neither the check nor the IOMMU.
guest_qemu 120 "no_timer_check hugepages=64 vkcount=$count vkpings=$pings vkphase=$mode"
guest_wait
echo "guest ran $((SECONDS - start)) s (QEMU exit $qrc), $count frames per size, $pings pings per size"
grep -a "VKTEST\|^vkern:\|^conformance:\|^testpmd:" "$dir/console.log"

failed=0
[ $qrc -eq 0 ] || fail "QEMU exit status $qrc (124: the guest timed out)"
grep -a "^VKTEST" "$dir/console.log" | grep -a " FAIL" && fail "a check failed in the guest"
if [ "$mode" = dpdk ]; then
	checks="insmod dpdk_ping_64 dpdk_ping_1400 dpdk_exit"
else
	checks="insmod open link intr udp_tx_64 udp_rx_64 udp_tx_1400 udp_rx_1400 udp_tx_8000
		udp_rx_8000 ping_64 ping_1400 ping_8000 restart restart_after close existing_rx
		existing_tx intr_event_idx existing multiqueue_rx multiqueue_tx multiqueue_one_pair
		multiqueue multiqueue_close tcp_echo tcp_echo_close exit port_conformance"
fi
for name in $checks; do
	grep -aq "^VKTEST $name ok" "$dir/console.log" || fail "no 'VKTEST $name ok'"
done
guest_verdict "vhost_kernel ($mode)"
