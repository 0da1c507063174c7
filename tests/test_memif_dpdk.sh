#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# memif interoperability with DPDK: tide client <-> dpdk-testpmd server and tide server <->
# dpdk-testpmd client, testpmd in io forwarding (it sends back what it receives). tide sends
# COUNT packets with checked payloads; the counts must agree from both sides: testpmd's
# RX-packets equals what tide sent, and what tide received equals testpmd's TX-packets
# (read from its per-period port stats lines: a disconnect zeroes them).
#
# testpmd runs as DPDK is deployed, on 2 MiB hugepages: bench/hugepages.py reserves and
# mounts them (and gives back what it added), each testpmd has its own --file-prefix, and
# its page files and runtime directory are removed on every exit path. Each run checks that
# testpmd holds page files while it forwards. Only when no hugepages can be had at all does
# testpmd run --no-huge, and the output says so.
#
# usage: test_memif_dpdk.sh PATH/TO/memif_peer      exit 77 (skip) without dpdk-testpmd
set -u
peer=$1
testpmd=$(command -v dpdk-testpmd) || { echo "skip: dpdk-testpmd not installed" >&2; exit 77; }
huge_py=$(cd "$(dirname "$0")/../bench" && pwd)/hugepages.py
dir=$(mktemp -d "${TMPDIR:-/tmp}/tide-memif-dpdk-XXXXXX")
prefixes=""
cleanup() {
	if [ -n "${tp:-}" ]; then kill "$tp" 2>/dev/null; wait "$tp" 2>/dev/null; fi
	for p in $prefixes; do
		[ -f "$dir/huge-$p.json" ] &&
			python3 "$huge_py" release --state "$dir/huge-$p.json" --prefix "$p"
		rm -rf "/var/run/dpdk/$p"
	done
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
count=20000
fail=0

# shellcheck source=tests/wait_for.sh
. "$(dirname "$0")/wait_for.sh"

run() { # $1 testpmd role, $2 tide role, $3 size, [$4 more tide keys, $5 a tag for names]
	sock=$dir/$1-$3${5:-}.sock
	log=$dir/testpmd-$1-$3${5:-}.log
	px="tide$$$1$3${5:-}"
	prefixes="$prefixes $px"
	# Right before each testpmd (other tests take free pages too): 96 pages for its 32768
	# mbufs (about 80 MiB) and its memif regions.
	if hout=$(python3 "$huge_py" reserve --pages 96 --state "$dir/huge-$px.json" 2>&1); then
		eval "$hout"
		mem="--huge-dir $HUGE_DIR"
	else
		mem="--no-huge -m 512"
		HUGE_DIR=
		echo "no hugepages to be had ($hout): this testpmd runs --no-huge"
	fi
	# shellcheck disable=SC2086 # $mem is several options
	timeout 16 "$testpmd" $mem --no-pci --file-prefix="$px" \
		--lcores='0@0,1@0' \
		--vdev="net_memif,role=$1,socket=$sock,socket-abstract=no,id=3" \
		-- --total-num-mbufs=32768 --forward-mode=io --stats-period 1 >"$log" 2>&1 &
	tp=$!
	# Connect once testpmd forwards: its socket exists before the port starts, and a client
	# that connects and goes away in between can make testpmd 22.11's interrupt thread
	# panic ("Error adding fd ... epoll_ctl").
	[ "$1" = server ] && wait_for grep -qs "start packet forwarding" "$log"
	out=$("$peer" "memif:socket=$sock,role=$2,id=3${4:-}" 7 "$count" "$3")
	# testpmd prints its port counters every period: wait until they show every packet.
	wait_for sh -c "[ \$(awk '/RX-packets:.*RX-missed:/ {if (\$2 > m) m = \$2} END {print m + 0}' '$log') -ge $count ]"
	on_huge=no
	if [ -n "$HUGE_DIR" ] && python3 "$huge_py" check --dir "$HUGE_DIR" --prefix "$px"; then
		on_huge=yes
	fi
	kill "$tp" 2>/dev/null
	wait "$tp" 2>/dev/null
	tp=
	if [ -f "$dir/huge-$px.json" ]; then
		python3 "$huge_py" release --state "$dir/huge-$px.json" --prefix "$px"
	fi
	tp_rx=$(awk '/RX-packets:.*RX-missed:/ {if ($2 > m) m = $2} END {print m + 0}' "$log")
	tp_tx=$(awk '/TX-packets:.*TX-errors:/ {if ($2 > m) m = $2} END {print m + 0}' "$log")
	echo "tide $2${4:-} <-> testpmd $1, $3 bytes: tide $out; testpmd rx=$tp_rx tx=$tp_tx hugepages=$on_huge"
	tx=$(echo "$out" | sed -n 's/.* tx=\([0-9]*\).*/\1/p')
	rx=$(echo "$out" | sed -n 's/.* rx=\([0-9]*\).*/\1/p')
	bad=$(echo "$out" | sed -n 's/.* bad=\([0-9]*\).*/\1/p')
	# How many testpmd sends back depends on timing (it drops what finds its ring full), so
	# that is not checked against a share; what must hold exactly is that both sides count
	# every packet alike, in both directions, and that packets came back intact.
	if [ "${tx:-0}" -ne "$count" ] || [ "$tp_rx" -ne "$count" ] || [ "${rx:-0}" -ne "$tp_tx" ] ||
		[ "${rx:-0}" -eq 0 ] || [ "${bad:-1}" -ne 0 ]; then
		echo "FAIL"; tail -n 20 "$log"; fail=1
	fi
	if [ -n "$HUGE_DIR" ] && [ "$on_huge" != yes ]; then
		echo "FAIL: testpmd held no page files in $HUGE_DIR while it forwarded"; fail=1
	fi
}

run server client 64
run client server 64
run server client 1500
run client server 1500
# tide's streaming stores (tx_stores=stream: frames of 256 bytes or more written to memory
# past the caches, fenced before the index) read by testpmd and sent back intact.
run server client 1500 ,tx_stores=stream s
run client server 1500 ,tx_stores=stream s
exit $fail
