#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tide-fwd's command line: --help, bad options (exit 2, one line, nothing left running),
# short real runs that end with a summary and parsable --json, stop by --packets and by
# SIGINT, and a malformed route file reported as FILE:LINE.
# usage: test_fwd_cli.sh PATH_TO_TIDE_FWD
set -u
fwd=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-fwd-cli.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
inline=simnic:ports=2,mode=inline,wire=gen,size=64

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# expect_bad "what stderr must contain" ARGS...: exit 2, exactly one line on stderr.
expect_bad() {
	want=$1
	shift
	"$fwd" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	lines=$(wc -l <"$tmp/err")
	if [ $rc -ne 2 ] || [ "$lines" -ne 1 ] || ! grep -q -- "$want" "$tmp/err"; then
		fail "$* -> rc $rc, $lines stderr lines: $(cat "$tmp/err")"
	else
		echo "ok: $* -> $(cat "$tmp/err")"
	fi
}

"$fwd" --help >"$tmp/help" || fail "--help exit status"
grep -q "Examples:" "$tmp/help" || fail "--help has no examples"
grep -q -- "--map" "$tmp/help" || fail "--help does not document --map"

expect_bad "no --port" --fwd io
expect_bad "unknown option" --port $inline --frobnicate
expect_bad "--burst" --port $inline --burst 0
expect_bad "--burst" --port $inline --burst
expect_bad "unknown engine" --port $inline --fwd nope
expect_bad "--txfree" --port $inline --txfree sometimes
expect_bad "--rs " --port $inline --rs never
expect_bad "--duration" --port $inline --duration -1
expect_bad "--lcores" --port $inline --lcores 100000
expect_bad "--map" --port $inline --map 0:1/x
expect_bad "--map" --port $inline --map 0:7/0
expect_bad "not polled" --port $inline --map 0:0/0
expect_bad "unknown driver" --port nosuch:x=1
expect_bad "unknown key" --port simnic:ports=2,colour=blue
expect_bad "Tx queue" --port $inline --txd 64 --rs-thresh 64
expect_bad "Tx queue" --port $inline --txfree fast
expect_bad "--txonly-size" --port $inline --fwd txonly --txonly-size 20
expect_bad "unexpected argument" --port $inline stray

printf '10.0.0.0/16 0\n10.1.0.0/33 1\n' >"$tmp/routes.txt"
expect_bad "routes.txt:2:" --port $inline --fwd l3fwd --routes "$tmp/routes.txt"

# A short real run: exit 0, a summary, JSON that parses and shows no leak.
if "$fwd" --port $inline --fwd l3fwd --duration 1 --stats-period 0.3 \
	--json "$tmp/run.json" >"$tmp/run.out" 2>"$tmp/run.err"; then
	grep -q "tide-fwd summary" "$tmp/run.out" || fail "no summary: $(cat "$tmp/run.out")"
	grep -q "buffers outstanding after stop: 0" "$tmp/run.out" || fail "outstanding buffers"
	grep -q "cyc/pkt" "$tmp/run.out" || fail "no live statistics"
	python3 -m json.tool "$tmp/run.json" >/dev/null || fail "--json does not parse"
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["buffers_outstanding"] == 0, d
assert d["total"]["rx_packets"] > 0, d
assert d["total"]["tx_packets"] > 0, d
assert d["config"]["fwd"] == "l3fwd", d
assert set(d["total"]["drops"]) >= {"not_ipv4", "bad_header", "bad_checksum", "ttl_expired", "no_route", "same_port"}
' "$tmp/run.json" || fail "--json content"
	echo "ok: 1 s l3fwd run"
else
	fail "1 s run exited $?: $(cat "$tmp/run.err")"
fi

# Stop by packet count; every engine starts and stops cleanly with a route file too.
printf '# demo\n10.0.0.0/16 0\n10.1.0.0/16\t1  # back\n' >"$tmp/good.txt"
for e in io mac macswap l3fwd txonly rxonly; do
	routes=""
	[ $e = l3fwd ] && routes="--routes $tmp/good.txt"
	if "$fwd" --port $inline --fwd $e --packets 100001 --quiet $routes \
		--txfree bulk --rs burst --json "$tmp/e.json" >"$tmp/e.out" 2>&1; then
		grep -q "stopped by packets" "$tmp/e.out" || fail "$e: not stopped by packets"
		# Exactly the count asked for, not the bursts in flight when the main thread looked.
		python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
t = d["total"]
n = t["tx_packets"] if sys.argv[2] == "txonly" else t["rx_packets"]
assert n == 100001, n
' "$tmp/e.json" $e || fail "$e: --packets 100001 not exact"
		echo "ok: --fwd $e --packets"
	else
		fail "--fwd $e: $(cat "$tmp/e.out")"
	fi
done

# SIGINT stops the run with the summary and status 0.
"$fwd" --port $inline --fwd macswap --quiet >"$tmp/sig.out" 2>&1 &
pid=$!
sleep 0.5
kill -INT $pid
wait $pid
rc=$?
if [ $rc -ne 0 ] || ! grep -q "stopped by SIGINT" "$tmp/sig.out"; then
	fail "SIGINT: rc $rc: $(cat "$tmp/sig.out")"
else
	echo "ok: SIGINT"
fi

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
[ $fails -eq 0 ]
