#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tide's virtio frontend with checksum and TSO offloads against DPDK's vhost-user backend
# (dpdk-testpmd with net_vhost, io forwarding: it sends back what it receives), tide as
# client. tide's side is test_virtio_ol_peer: it sends COUNT TCP packets asking for their
# checksums (csum) or for TSO (tso, 8000-byte payloads in chains of 2 KiB mbufs), and
# checks every frame that comes back (made whole first: a GSO packet cut, a partial
# checksum completed): IPv4 and TCP checksums good, every payload byte where its sequence
# number says, none missing.
#
# Cases: csum against net_vhost as it comes (VIRTIO_NET_F_CSUM offered: tide writes
# NEEDS_CSUM headers, nothing in software); tso with tso=1 (HOST_TSO4 offered: tide sends
# each packet whole with a GSO header); tso without it (no HOST_TSO4: tide cuts every packet
# in software, counted in virtio_tx_sw_tso); and with testpmd's csum engine asking
# net_vhost for checksums and TSO on the way back, so that tide receives partial checksums
# and GSO packets (with tso=1: GUEST_TSO4, over mergeable buffers). testpmd's RX-packets
# and TX-packets must equal what tide put on the ring: COUNT packets, or the pieces of the
# software cut. Every case runs twice: on split virtqueues, then on packed ones (packed=yes;
# DPDK 22.11's net_vhost offers VIRTIO_F_RING_PACKED, and each packed session's log must
# show it negotiated).
#
# testpmd runs on 2 MiB hugepages as DPDK is deployed (bench/hugepages.py); only when none
# can be had does it fall back to --no-huge, and the output says so.
#
# usage: test_virtio_dpdk_ol.sh PATH/TO/test_virtio_ol_peer     (exit 77 without dpdk-testpmd)
set -u
peer=$1
root=$(cd "$(dirname "$0")/.." && pwd)
testpmd=$(command -v dpdk-testpmd) || { echo "skip: dpdk-testpmd not installed" >&2; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/tide-virtio-dpdk-ol-XXXXXX")
tp_px=tidevol$$
# shellcheck source=tests/testpmd_lib.sh
. "$root/tests/testpmd_lib.sh"
tp_memory 256
count=${VIRTIO_OL_COUNT:-2000}
fail=0
n=0

field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p; s/^$1=\([0-9]*\).*/\1/p" "$dir/peer.out" | head -1; }

# packed_check NAME: the session negotiated VIRTIO_F_RING_PACKED (bit 34), from tide's log.
packed_check() {
	local f
	f=$(sed -n 's/.*connected to the backend on .*: features \(0x[0-9a-f]*\).*/\1/p' "$dir/peer.err" | head -1)
	if [ -z "$f" ] || [ $((f >> 34 & 1)) -ne 1 ]; then
		echo "FAIL: $1: features ${f:-none logged} without VIRTIO_F_RING_PACKED"; fail=1
	fi
}

# run MODE VHOST_EXTRA EXPECT_SW_CKSUM EXPECT_SW_TSO EXPECT_TP_RX [ENGINE COUNTER]
#   (tide's keys gain $layout: "" or ",packed=yes")
#   ENGINE csum: testpmd's csum forwarding engine with TCP and IPv4 checksums and TSO
#   (MSS 1448) asked of net_vhost, so that the packets come back to tide with partial
#   checksums, the large ones as GSO packets; tide's COUNTER (gso_in, partial_in) must
#   then be COUNT.
run() {
	local mode=$1 extra=$2 sw_ck=$3 sw_tso=$4 want_rx=$5 engine=${6:-io} ctr=${7:-} tag sock rc
	n=$((n + 1)); tag=t$n; sock=$dir/$tag.sock
	tp_launch "$tag" "$testpmd" "${mem[@]}" --no-pci --file-prefix="$tp_px-$tag" \
		--lcores='0@0,1@0' --vdev="net_vhost0,iface=$sock,queues=1$extra" -- -i \
		--total-num-mbufs=16384 --nb-cores=1 --no-flush-rx --max-pkt-len=9600
	tp_cmd "$tag" "set burst tx delay 10 retry 100000"
	if [ "$engine" = csum ]; then
		tp_cmd "$tag" "port stop 0"
		tp_cmd "$tag" "csum set ip hw 0"
		tp_cmd "$tag" "csum set tcp hw 0"
		tp_cmd "$tag" "tso set 1448 0"
		tp_cmd "$tag" "port start 0"
		tp_cmd "$tag" "set fwd csum retry"
	else
		tp_cmd "$tag" "set fwd io retry"
	fi
	tp_cmd "$tag" "start"
	wait_for 10 test -S "$sock" || { echo "FAIL: no socket"; fail=1; return; }
	TIDE_LOG_LEVEL=info "$peer" "virtio:path=$sock,role=client$layout" 60 "$count" "$mode" \
		>"$dir/peer.out" 2>"$dir/peer.err"
	rc=$?
	tp_stats "$tag"
	tp_quit "$tag"
	echo "$mode${extra:+ ($extra)}${layout:+ [$layout]}: tide $(cat "$dir/peer.out"); testpmd rx=${tp_rx:-?} tx=${tp_tx:-?}"
	if [ $rc -ne 0 ] || [ "$(field bad)" != 0 ] || [ "$(field refused)" != 0 ] ||
		[ "$(field faults)" != 0 ] || [ "$(field sw_cksum)" != "$sw_ck" ] ||
		[ "$(field sw_tso)" != "$sw_tso" ] || [ "${tp_rx:-0}" != "$want_rx" ] ||
		[ "${tp_tx:-0}" != "$want_rx" ] || { [ -n "$ctr" ] && [ "$(field "$ctr")" != "$count" ]; }; then
		echo "FAIL: $mode$extra$layout (exit $rc)"; tail -n 5 "$dir"/*.log "$dir/peer.err"; fail=1
	fi
	[ -z "$layout" ] || packed_check "$mode$extra$layout"
}

for layout in "" ",packed=yes"; do
	run csum "" 0 0 "$count"
	run tso ",tso=1" 0 0 "$count"
	# 8000 payload bytes at MSS 1448: 6 frames a packet.
	run tso "" 0 "$count" $((count * 6))
	# testpmd's csum engine: the packets come back with partial checksums, and as GSO
	# packets.
	run csum "" 0 0 "$count" csum partial_in
	run tso ",tso=1" 0 0 "$count" csum gso_in
done
exit $fail
