#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tide's virtio frontend against DPDK's vhost-user backend (dpdk-testpmd with net_vhost, io
# forwarding: it sends back what it receives). tide's side is test_virtio_peer: per session
# it sends COUNT checked packets and checks what comes back. Each case must agree exactly
# from both sides: testpmd's RX-packets equals what tide sent, what tide received equals
# testpmd's TX-packets and equals what it sent (testpmd forwards with retry: nothing is
# dropped for a full receive ring), every packet came back intact, and no fault was seen.
#
# Cases: tide as client (net_vhost listens) and as server (net_vhost client=1); 64, 1518
# and 9000 bytes; in_order and mrg_rxbuf on and off, event_idx on; kill -9 and restart of
# testpmd (tide as client reconnects to the new one, and the second session is exact too).
# Then the same over packed virtqueues (packed=yes): each such session must also have
# negotiated VIRTIO_F_RING_PACKED (bit 34 of the features tide logs at connect).
#
# testpmd runs on 2 MiB hugepages as DPDK is deployed (bench/hugepages.py); only when none
# can be had does it fall back to --no-huge, and the output says so.
#
# usage: test_virtio_dpdk.sh PATH/TO/test_virtio_peer     (exit 77 without dpdk-testpmd)
set -u
peer=$1
root=$(cd "$(dirname "$0")/.." && pwd)
testpmd=$(command -v dpdk-testpmd) || { echo "skip: dpdk-testpmd not installed" >&2; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/tide-virtio-dpdk-XXXXXX")
tp_px=tidevio$$
# shellcheck source=tests/testpmd_lib.sh
. "$root/tests/testpmd_lib.sh"
tp_memory 160
count=${VIRTIO_COUNT:-10000}
fail=0
n=0

# tp_start TAG VDEV_ARGS [testpmd options]: interactive testpmd fed from a FIFO.
tp_start() {
	local tag=$1 vdev=$2; shift 2
	tp_launch "$tag" "$testpmd" "${mem[@]}" --no-pci --file-prefix="$tp_px-$tag" \
		--lcores='0@0,1@0' --vdev="net_vhost0,$vdev" -- -i --total-num-mbufs=8192 \
		--nb-cores=1 --no-flush-rx "$@"
	# io forwarding that retries a full receive ring (for up to 1 s) instead of dropping at
	# once, since the two share CPUs with whatever else runs here; and no
	# flush of the receive queue at the start of forwarding (--no-flush-rx): tide may send
	# as soon as the link is up, before testpmd's forwarding starts, and a flush would
	# discard those packets after counting them as received.
	tp_cmd "$tag" "set burst tx delay 10 retry 100000"
	tp_cmd "$tag" "set fwd io retry"
	tp_cmd "$tag" "start"
}
peer_start() {
	TIDE_LOG_LEVEL=info "$peer" "$1" 60 "$count" "$2" "$3" >"$dir/peer.out" 2>"$dir/peer.err" &
	peerpid=$!
	pids+=("$peerpid")
}
sessions_done() { test "$(grep -c '^session=' "$dir/peer.out")" -ge "$1"; }
field() { sed -n "${1}p" "$dir/peer.out" | sed -n "s/.* $2=\([0-9]*\).*/\1/p"; }

# check NAME SESSION_LINE: the peer's session line against testpmd's counters.
check() {
	local name=$1 line=$2 tx rx bad faults
	tx=$(field "$line" tx); rx=$(field "$line" rx); bad=$(field "$line" bad)
	faults=$(field "$line" faults)
	echo "$name: tide tx=${tx:-?} rx=${rx:-?} bad=${bad:-?} faults=${faults:-?}; testpmd rx=${tp_rx:-?} tx=${tp_tx:-?}"
	if [ "${tx:-0}" -ne "$count" ] || [ "${tp_rx:-0}" -ne "${tx:-0}" ] || [ "${rx:-0}" -ne "$count" ] ||
		[ "${rx:-0}" -ne "${tp_tx:--1}" ] || [ "${rx:-0}" -eq 0 ] || [ "${bad:-1}" -ne 0 ] ||
		[ "${faults:-1}" -ne 0 ]; then
		echo "FAIL: $name"; tail -n 5 "$dir"/*.log "$dir/peer.err"; fail=1
	fi
	case $name in *packed=yes*) packed_check "$name" ;; esac
}

# packed_check NAME: every connection of the session negotiated VIRTIO_F_RING_PACKED.
packed_check() {
	local f n=0
	for f in $(sed -n 's/.*connected to the backend on .*: features \(0x[0-9a-f]*\).*/\1/p' "$dir/peer.err"); do
		n=$((n + 1))
		if [ $((f >> 34 & 1)) -ne 1 ]; then
			echo "FAIL: $1: features $f without VIRTIO_F_RING_PACKED"; fail=1
		fi
	done
	[ $n -gt 0 ] || { echo "FAIL: $1: no features line"; fail=1; }
}

# run ROLE SIZE EXTRA_TIDE_KEYS: one connection, one session.
run() {
	local role=$1 size=$2 extra=$3 sock tag rc
	n=$((n + 1)); tag=t$n; sock=$dir/$tag.sock
	local big=(); [ "$size" -gt 1500 ] && big=(--max-pkt-len=9600)
	[ "$size" -gt 2048 ] && big+=(--mbuf-size=10240) # net_vhost has no Rx scatter
	if [ "$role" = client ]; then
		tp_start "$tag" "iface=$sock,queues=1" "${big[@]}"
		wait_for 10 test -S "$sock" || { echo "FAIL: no socket"; fail=1; return; }
		peer_start "virtio:path=$sock,role=client$extra" "$size" 1
	else
		peer_start "virtio:path=$sock,role=server$extra" "$size" 1
		wait_for 10 test -S "$sock" || { echo "FAIL: no socket"; fail=1; return; }
		tp_start "$tag" "iface=$sock,queues=1,client=1" "${big[@]}"
	fi
	wait "$peerpid"; rc=$?
	tp_stats "$tag"
	tp_quit "$tag"
	[ $rc -eq 0 ] || { echo "FAIL: test_virtio_peer exit $rc"; cat "$dir/peer.err"; fail=1; }
	check "tide $role, $size B${extra:+, $extra}" 1
}

# Kill -9 of testpmd while tide (client) is connected: tide drops the connection, retries,
# and runs a second exact session against the restarted testpmd.
killrun() {
	local extra=$1 rc
	n=$((n + 1)); sock=$dir/k$n.sock
	tp_start k${n}a "iface=$sock,queues=1"
	wait_for 10 test -S "$sock"
	peer_start "virtio:path=$sock,role=client$extra" 64 2
	wait_for 30 sessions_done 1 || { echo "FAIL: first session"; fail=1; }
	tp_stats k${n}a
	check "tide client${extra:+, $extra}, before testpmd is killed" 1
	tp_kill k${n}a
	rm -f "$sock"
	tp_start k${n}b "iface=$sock,queues=1"
	wait "$peerpid"; rc=$?
	tp_stats k${n}b; tp_quit k${n}b
	[ $rc -eq 0 ] || { echo "FAIL: test_virtio_peer exit $rc"; cat "$dir/peer.err"; fail=1; }
	check "tide client${extra:+, $extra}, testpmd killed and restarted: second session" 2
}

for layout in "" ",packed=yes"; do
	run client 64 "$layout"
	run client 1518 "$layout"
	run server 64 "$layout"
	run server 1518 ",mrg_rxbuf=no$layout"
	run client 64 ",in_order=no$layout"
	run client 64 ",event_idx=yes$layout"
	# 9000 bytes: tide sends chains of 2 KiB mbufs through indirect tables and receives
	# them over mergeable buffers.
	run client 9000 "$layout"
	run client 1518 ",in_order=no,mrg_rxbuf=no$layout"
	killrun "$layout"
done
exit $fail
