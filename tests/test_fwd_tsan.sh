#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tide-fwd under ThreadSanitizer (registered in the TSan build only): two lcores on
#  1. simnic inline, queues=2, wire=cross, txonly: both lcores' Tx queues deliver into the
#     same Rx queues of the other port (several producers into one Rx queue);
#  2. simnic inline generators piped through a ring pair, io forwarding both ways;
#  3. the same through a memif server/client pair in one process.
# Each run stops after a packet count (no timing), must end with exit 0, no TSan report,
# packets moved, and every buffer back.
set -u
fwd=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-fwd-tsan.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}"
fail=0

run() {
	name=$1
	shift
	timeout 300 "$fwd" --lcores 0,1 --quiet "$@" >"$tmp/out" 2>&1
	rc=$?
	if [ $rc -ne 0 ] || grep -q ThreadSanitizer "$tmp/out"; then
		echo "FAIL $name: exit $rc"
		sed -n 1,60p "$tmp/out"
		fail=1
		return
	fi
	# The summary's total line: rx-packets and tx-packets are columns 2 and 3.
	moved=$(awk '$1 == "total" { print $2 + $3; exit }' "$tmp/out")
	if [ -z "$moved" ] || [ "$moved" -eq 0 ]; then
		echo "FAIL $name: no packets moved"
		cat "$tmp/out"
		fail=1
		return
	fi
	if ! grep -q "buffers outstanding after stop: 0 of" "$tmp/out"; then
		echo "FAIL $name: buffers not returned"
		cat "$tmp/out"
		fail=1
		return
	fi
	echo "ok   $name: $moved packets, no report"
}

run "simnic inline cross, 2 Tx queues into one Rx queue" \
	--port simnic:ports=2,queues=2,mode=inline,wire=cross --fwd txonly --packets 200000
ring=tsan$$
run "simnic -> ring pair -> simnic, io" \
	--port simnic:ports=1,queues=2,mode=inline,wire=gen \
	--port ring:name=$ring,queues=2 --port ring:name=$ring,queues=2,peer=yes \
	--port simnic:ports=1,queues=2,mode=inline,wire=gen --packets 200000
sock=$tmp/memif.sock
run "simnic -> memif server/client -> simnic, io" \
	--port simnic:ports=1,queues=2,mode=inline,wire=gen \
	--port memif:role=server,socket=$sock,rings=2 --port memif:role=client,socket=$sock,rings=2 \
	--port simnic:ports=1,queues=2,mode=inline,wire=gen --packets 200000
exit $fail
