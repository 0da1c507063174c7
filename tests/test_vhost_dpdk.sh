#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# vhost-user interoperability with DPDK's virtio-user frontend (dpdk-testpmd, io forwarding:
# it sends back what it receives). tide's side is vhost_peer: per session it sends COUNT
# checked packets per queue and checks what comes back. For every case the counts must
# agree exactly from both sides: testpmd's RX-packets equals what tide sent (nothing lost
# tide -> guest: a full guest ring holds tide back instead of dropping), what tide received
# equals testpmd's TX-packets, and every packet came back intact.
#
# tide sends only once testpmd's port has started (START_FILE, see vhost_peer.c): DPDK's
# virtio PMD posts its receive buffers before its port start ends and then frees, without
# counting them, the packets the backend completed in the meantime. Under load that window
# is long enough for a burst or more, and testpmd then never counts them.
#
# Cases: both socket roles; 64, 1500 and 9000 bytes; mrg_rxbuf on and off; in_order on and
# off; 2 queue pairs; kill -9 and restart of the frontend (both roles) and of tide (client
# role: tide reconnects to the same testpmd; server role: a stale socket file is taken over).
#
# testpmd runs on 2 MiB hugepages as DPDK is deployed (bench/hugepages.py reserves and mounts
# them; --single-file-segments keeps virtio-user's memory table to a few regions); only when
# none can be had does it fall back to --no-huge, and the output says so.
#
# usage: test_vhost_dpdk.sh PATH/TO/vhost_peer [held|packed]
#   without a mode: every case but the held one; exit 77 (skip) without dpdk-testpmd
#   packed: packed virtqueues (virtio-user packed_vq=1; Meson test vhost_dpdk_packed):
#           both roles, 64, 1500 and 9000 bytes, mrg_rxbuf on and off, in_order on and
#           off, 2 queue pairs, rings of 1000 (not a power of two); kill -9 and restart of testpmd (both roles) and of tide
#           (client role), each second session exact; every session must have negotiated
#           VIRTIO_F_RING_PACKED; and tide with packed=no: the same frontend must then run
#           split virtqueues
#   held: only the case with testpmd's port start held under gdb (Meson test
#         vhost_dpdk_held); exit 77 (skip) without dpdk-testpmd or gdb
set -u
peer=$1
mode=${2:-main}
case $mode in
main | held | packed) ;;
*) echo "usage: $0 PATH/TO/vhost_peer [held|packed]" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
testpmd=$(command -v dpdk-testpmd) || { echo "skip: dpdk-testpmd not installed" >&2; exit 77; }
if [ "$mode" = held ]; then
	gdb=$(command -v gdb) || { echo "skip: gdb not installed (it holds testpmd inside its port start)" >&2; exit 77; }
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/tide-vhost-dpdk-XXXXXX")
tp_px=tidevh$$
# shellcheck source=tests/testpmd_lib.sh
. "$root/tests/testpmd_lib.sh"
# 64 pages per testpmd (-m 128); two may hold pages at once (a killed one's files are
# removed right after the kill, but leave room).
tp_memory 160 --iova-mode=va
count=${VHOST_COUNT:-5000}
fail=0
n=0

# testpmd, interactive, fed from a FIFO so that the test can ask it for its counters.
# tp_start TAG VDEV_ARGS [EXTRA testpmd options]; with $stall set, testpmd runs under gdb,
# which holds its port start for 2 s (see the stall case below).
tp_start() {
	local tag=$1 vdev=$2; shift 2
	tp_launch "$tag" ${stall:+"$gdb" -q -batch -x "$stall" --args} "$testpmd" "${mem[@]}" --no-pci \
		--file-prefix="$tp_px-$tag" --lcores='0@0,1@0' --vdev="net_virtio_user0,$vdev" -- -i \
		--total-num-mbufs=8192 --forward-mode=io --auto-start --nb-cores=1 "$@"
}
# link_is TAG up|down: a fresh "show port info" of testpmd TAG says its link is up/down.
link_is() {
	local before; before=$(grep -ac 'Link status:' "$dir/$1.log")
	tp_cmd "$1" "show port info 0"
	wait_for 5 bash -c "[ \$(grep -ac 'Link status:' '$dir/$1.log') -gt $before ]" || return 1
	grep -a 'Link status:' "$dir/$1.log" | tail -n 1 | grep -q "$2"
}
# delivered TAG N: testpmd's port has received N packets (all of tide's).
delivered() { tp_stats "$1" >/dev/null && [ "${tp_rx:-0}" -ge "$2" ]; }
# settle TAG N SESSION: once testpmd holds all N of tide's packets, let the peer's session
# end (after a quiet period in which it takes in what testpmd still sends back).
settle() {
	wait_for 40 delivered "$1" "$2" || { echo "FAIL: testpmd $1 did not receive $2 (rx=${tp_rx:-?})"; fail=1; }
	touch "$dir/stop.$3"
}
# ready TAG SESSION: testpmd TAG has started its port; session SESSION may send.
tp_started() { grep -aqs 'Start automatic packet forwarding' "$dir/$1.log"; }
ready() {
	wait_for 30 tp_started "$1" || { echo "FAIL: testpmd $1 did not start its port"; fail=1; }
	touch "$dir/start.$2"
}

# peer_start SPEC SIZE QUEUES SESSIONS: tide in the background, output in $dir/peer.out.
peer_start() {
	rm -f "$dir"/stop.*
	rm -f "$dir"/start.*
	# With a ring size of our choice: tide's debug log shows the sizes the frontend set.
	env ${qsize:+TIDE_LOG_LEVEL=debug} START_FILE=$dir/start STOP_FILE=$dir/stop QUIET_MS=1000 "$peer" "$1" 60 "$count" "$2" "$3" "$4" >"$dir/peer.out" 2>"$dir/peer.err" &
	peerpid=$!
	pids+=("$peerpid")
}
# listening PATH: a process listens on the unix socket PATH (/proc/net/unix: the flags of
# a listening socket are 00010000; a stale file has no entry).
listening() { awk -v p="$1" '$4 == "00010000" && $8 == p { f = 1 } END { exit !f }' /proc/net/unix; }
sessions_done() { test "$(grep -c '^session=' "$dir/peer.out")" -ge "$1"; }
field() { sed -n "${1}p" "$dir/peer.out" | sed -n "s/.* $2=\([0-9]*\).*/\1/p"; }

# check NAME SESSION_LINE QUEUES: compare the peer's session line with testpmd's counters.
check() {
	local name=$1 line=$2 nq=$3 tx rx bad pk want=0
	tx=$(field "$line" tx); rx=$(field "$line" rx); bad=$(field "$line" bad)
	pk=$(field "$line" packed); [ "$mode" = packed ] && want=1
	[ -n "${want_packed:-}" ] && want=$want_packed
	echo "$name: tide tx=${tx:-?} rx=${rx:-?} bad=${bad:-?} packed=${pk:-?}; testpmd rx=${tp_rx:-?} tx=${tp_tx:-?}"
	if [ "${tx:-0}" -ne $((count * nq)) ] || [ "${tp_rx:-0}" -ne "${tx:-0}" ] ||
		[ "${pk:-x}" != "$want" ] ||
		[ "${rx:-0}" -ne "${tp_tx:--1}" ] || [ "${rx:-0}" -eq 0 ] || [ "${bad:-1}" -ne 0 ]; then
		echo "FAIL: $name"; tail -n 5 "$dir"/*.log "$dir/peer.err"; fail=1
	fi
}

# One connection: tide role $1, packet size $2, queues $3, extra virtio-user args $4.
run() {
	local role=$1 size=$2 nq=$3 extra=$4 sock tag
	n=$((n + 1)); tag=t$n; sock=$dir/$tag.sock
	local qopt=(); [ "$nq" -gt 1 ] && qopt=(--rxq="$nq" --txq="$nq")
	local big=(); [ "$size" -gt 1500 ] && big=(--max-pkt-len=9600 --enable-scatter)
	if [ "$role" = server ]; then
		peer_start "vhost:socket=$sock,unsealed_mem=yes,role=server,queues=$nq${spec_extra:-}" "$size" "$nq" 1
		wait_for 10 test -S "$sock" || { echo "FAIL: no socket"; fail=1; return; }
		tp_start "$tag" "path=$sock,queues=$nq,queue_size=${qsize:-1024}$extra" "${qopt[@]}" "${big[@]}"
	else
		tp_start "$tag" "path=$sock,server=1,queues=$nq,queue_size=${qsize:-1024}$extra" "${qopt[@]}" "${big[@]}"
		wait_for 10 test -S "$sock" || { echo "FAIL: no socket"; fail=1; return; }
		peer_start "vhost:socket=$sock,unsealed_mem=yes,role=client,queues=$nq${spec_extra:-}" "$size" "$nq" 1
	fi
	ready "$tag" 1
	settle "$tag" $((count * nq)) 1
	wait "$peerpid"; local rc=$?
	tp_stats "$tag"
	tp_quit "$tag"
	[ $rc -eq 0 ] || { echo "FAIL: vhost_peer exit $rc"; cat "$dir/peer.err"; fail=1; }
	# SET_VRING_NUM's payload: the vring index, then the size (debug: the 8 bytes in hex).
	if [ -n "${qsize:-}" ] && ! grep -q "SET_VRING_NUM size 8 0x$(printf %x "$qsize")00000001$" "$dir/peer.err"; then
		echo "FAIL: the frontend did not set vring 1 to $qsize entries"; fail=1
	fi
	check "tide $role, $size B, $nq queue(s)${extra:+, $extra}${qsize:+, rings of $qsize}${stall:+, port start held}" 1 "$nq"
}

# The window the start gate closes, made wide (mode held): gdb stops testpmd inside its
# port start (rte_intr_enable, between posting its receive buffers and discarding what is
# already in them) for 2 s. Sending before the gate would lose a ring's worth, uncounted by
# testpmd.
stall=
if [ "$mode" = held ]; then
	stall=$dir/stall.gdb
	cat >"$stall" <<'EOF'
set pagination off
set breakpoint pending on
handle SIGPIPE nostop noprint pass
break rte_intr_enable
commands 1
  silent
  printf "gdb: testpmd's port start held for 2 s\n"
  shell sleep 2
  continue
end
run
EOF
	run server 64 1 ""
	grep -aq "port start held" "$dir/t$n.log" || { echo "FAIL: gdb did not hold testpmd's port start"; fail=1; }
	exit $fail
fi

# Kill -9 of the frontend: tide (server) accepts the next testpmd; tide (client) reconnects
# to a restarted testpmd. Each session must again be exact.
# kill_frontend ROLE [EXTRA virtio-user args]
kill_frontend() {
	local role=$1 extra=${2:-} sock tag1 tag2
	n=$((n + 1)); tag1=k${n}a; tag2=k${n}b; sock=$dir/k$n.sock
	local srv=""; [ "$role" = client ] && srv=",server=1"
	if [ "$role" = server ]; then
		peer_start "vhost:socket=$sock,unsealed_mem=yes,role=server" 64 1 2
		wait_for 10 test -S "$sock"
		tp_start "$tag1" "path=$sock,queues=1,queue_size=1024$extra"
	else
		tp_start "$tag1" "path=$sock$srv,queues=1,queue_size=1024$extra"
		wait_for 10 test -S "$sock"
		peer_start "vhost:socket=$sock,unsealed_mem=yes,role=client" 64 1 2
	fi
	ready "$tag1" 1
	settle "$tag1" "$count" 1
	wait_for 30 sessions_done 1 || { echo "FAIL: first session"; fail=1; return; }
	tp_kill "$tag1"
	rm -f "$sock.lock"
	[ "$role" = client ] && rm -f "$sock"
	tp_start "$tag2" "path=$sock$srv,queues=1,queue_size=1024$extra"
	ready "$tag2" 2
	settle "$tag2" "$count" 2
	wait "$peerpid"; local rc=$?
	tp_stats "$tag2"; tp_quit "$tag2"
	[ $rc -eq 0 ] || { echo "FAIL: vhost_peer exit $rc"; cat "$dir/peer.err"; fail=1; }
	grep -q 'disconnects=1 ' "$dir/peer.out" || { echo "FAIL: no disconnect seen"; fail=1; }
	check "tide $role, testpmd killed and restarted${extra:+ ($extra)}: second session" 2 1
}
# Kill -9 of tide (client role): the same testpmd (server=1) takes the restarted tide.
# tide_client_restart [EXTRA virtio-user args]
tide_client_restart() {
	local extra=${1:-} sock rc before_rx before_tx
	n=$((n + 1)); sock=$dir/r$n.sock
	tp_start r$n "path=$sock,server=1,queues=1,queue_size=1024$extra"
	wait_for 10 test -S "$sock"
	peer_start "vhost:socket=$sock,unsealed_mem=yes,role=client" 64 1 2
	ready r$n 1
	settle r$n "$count" 1
	wait_for 30 sessions_done 1 || { echo "FAIL: first tide session"; fail=1; return; }
	kill -9 "$peerpid"; wait "$peerpid" 2>/dev/null
	# Let testpmd see the old connection gone (its link goes down) before the new tide
	# connects, so that the new session's counts start from a quiet port.
	wait_for 10 link_is r$n down || echo "note: testpmd r$n did not report its link down"
	tp_stats r$n; before_rx=$tp_rx; before_tx=$tp_tx
	peer_start "vhost:socket=$sock,unsealed_mem=yes,role=client" 64 1 1
	ready r$n 1
	settle r$n $((before_rx + count)) 1
	wait "$peerpid"; rc=$?
	tp_stats r$n; tp_quit r$n
	tp_rx=$((tp_rx - before_rx)); tp_tx=$((tp_tx - before_tx))
	[ $rc -eq 0 ] || { echo "FAIL: vhost_peer exit $rc"; fail=1; }
	check "tide client killed and restarted${extra:+ ($extra)}: the new tide's session" 1 1
}

if [ "$mode" = packed ]; then
	run server 64 1 ",packed_vq=1"
	run server 1500 1 ",packed_vq=1,mrg_rxbuf=0"
	run client 1500 1 ",packed_vq=1,mrg_rxbuf=1,in_order=0"
	run client 9000 1 ",packed_vq=1,mrg_rxbuf=1,in_order=1"
	run server 9000 1 ",packed_vq=1,mrg_rxbuf=1,in_order=0"
	run client 64 2 ",packed_vq=1,cq=1"
	# Packed rings of a size that is not a power of two (virtio 1.1 allows any).
	qsize=1000
	run server 64 1 ",packed_vq=1"
	run client 1500 1 ",packed_vq=1,mrg_rxbuf=1,in_order=0"
	qsize=
	# packed=no: not offered, so the same frontend runs split virtqueues.
	spec_extra=,packed=no want_packed=0
	run server 64 1 ",packed_vq=1"
	spec_extra= want_packed=
	# Kill -9 and restart of either side, on packed rings.
	kill_frontend server ",packed_vq=1"
	kill_frontend client ",packed_vq=1"
	tide_client_restart ",packed_vq=1"
	exit $fail
fi

# (The kill cases below run 64 B in both roles once more.)
run server 64 1 ""
run server 1500 1 ",mrg_rxbuf=0"
run client 1500 1 ",mrg_rxbuf=1,in_order=0"
run client 9000 1 ",mrg_rxbuf=1,in_order=1"
run server 64 2 ",cq=1"

kill_frontend server
kill_frontend client

tide_client_restart

# Kill -9 of tide (server role): its socket file stays behind; a restarted tide takes it
# over and a new testpmd connects.
n=$((n + 1)); sock=$dir/s$n.sock
peer_start "vhost:socket=$sock,unsealed_mem=yes,role=server" 64 1 2
wait_for 10 test -S "$sock"
kill -9 "$peerpid"; wait "$peerpid" 2>/dev/null
test -S "$sock" || { echo "FAIL: expected a stale socket file"; fail=1; }
peer_start "vhost:socket=$sock,unsealed_mem=yes,role=server" 64 1 1
# The file is there already: wait until the new tide listens on it (testpmd does not retry
# a refused connection).
wait_for 20 listening "$sock" || { echo "FAIL: the restarted tide does not listen"; fail=1; }
tp_start s$n "path=$sock,queues=1,queue_size=1024"
ready s$n 1
settle s$n "$count" 1
wait "$peerpid"; rc=$?
tp_stats s$n; tp_quit s$n
[ $rc -eq 0 ] || { echo "FAIL: vhost_peer exit $rc"; fail=1; }
check "tide server killed and restarted on its stale socket" 1 1
exit $fail
