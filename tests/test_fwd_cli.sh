#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tide-fwd's command line: --help, bad options and bad spec keys of every driver (a table:
# input, exit 2, the one line printed naming the value), short real runs that end with a
# summary and parsable --json, stop by exactly --packets and by SIGINT, and a malformed route
# file (or one prefix given two ports) reported as FILE:LINE; TIDE_LOG_LEVEL and
# TIDE_POOL_DEBUG values not understood are reported; the active window of the JSON idle
# shares with a memif generator that connects late.
# usage: [TIDE_BENCH_VARIANTS=0|1] test_fwd_cli.sh PATH_TO_TIDE_FWD [cpus]
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

# wait_banner OUT: until a tide-fwd started in the background with its output in OUT has
# installed its signal handlers, which it announces ("Ctrl-C stops"; at most 30 s).
wait_banner() {
	i=0
	while ! grep -q "Ctrl-C stops" "$1" && [ $i -lt 600 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}

# The cases that need two CPUs and taskset (argument "cpus", the test fwd_cli_cpus: exit 77,
# a skip, without them).
if [ "${2:-}" = cpus ]; then
	if ! command -v taskset >/dev/null || [ "$(nproc --all)" -lt 2 ] || ! taskset -c 1 true 2>/dev/null; then
		echo "skip: needs taskset and two CPUs this process may run on"
		exit 77
	fi
	# Under taskset the defaults stay inside the mask: the lcore (first allowed CPU) and the
	# simnic device thread (last allowed CPU; a CPU outside the mask is refused, see cpu=1023).
	if taskset -c 1 "$fwd" --port simnic:ports=2,mode=thread --packets 20000 --quiet \
		>"$tmp/ts.out" 2>&1 && grep -q "lcores 1," "$tmp/ts.out"; then
		echo "ok: taskset -c 1: lcore and device thread on CPU 1"
	else
		fail "taskset -c 1: $(cat "$tmp/ts.out")"
	fi
	taskset -c 1 "$fwd" --port simnic:ports=2,mode=thread,cpu=0 --duration 0.2 \
		>/dev/null 2>"$tmp/ts.err"
	rc=$?
	if [ $rc -eq 2 ] && grep -q "cpu=0: this process may not run on CPU 0" "$tmp/ts.err"; then
		echo "ok: taskset -c 1, cpu=0 -> $(cat "$tmp/ts.err")"
	else
		fail "taskset -c 1, cpu=0: rc $rc: $(cat "$tmp/ts.err")"
	fi

	# Two lcores share the --packets budget: still exact.
	if "$fwd" --port simnic:ports=2,queues=2,mode=inline,wire=gen \
		--lcores 0,1 --fwd io --packets 100001 --quiet --json "$tmp/two.json" >"$tmp/two.out" 2>&1 &&
		python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["total"]
assert t["rx_packets"] == 100001, t
' "$tmp/two.json"; then
		echo "ok: two lcores, --packets 100001 exact"
	else
		fail "two lcores --packets: $(cat "$tmp/two.out")"
	fi
	[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
	[ $fails -eq 0 ]
	exit
fi

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

# --free-thresh 0 (the default) leaves the threshold to each port, and says so; a number is
# passed on as it is.
for ft in "" 0 64; do
	shown=$ft
	[ "${ft:-0}" = 0 ] && shown=auto
	if "$fwd" --port $inline ${ft:+--free-thresh $ft} --packets 1000 --json "$tmp/ft.json" \
		>"$tmp/ft.out" 2>&1 && grep -q "free-thresh $shown," "$tmp/ft.out" &&
		grep -q "\"free_thresh\": ${ft:-0}," "$tmp/ft.json"; then
		echo "ok: --free-thresh '${ft}'"
	else
		fail "--free-thresh '$ft': $(cat "$tmp/ft.out")"
	fi
done

# The bad-input table: what the one stderr line must contain | the arguments. Every option
# and every spec key of every driver, each with a value it must refuse. Rows are run with
# --duration 0.2 first, so that a value wrongly accepted ends the run (and the row fails) instead
# of hanging.
# bench KEY VALUE: what a benchmark-only key given a bad value prints; in a build without
# them (meson option bench_variants, TIDE_BENCH_VARIANTS=0 here) any value is refused so.
bench() {
	if [ "${TIDE_BENCH_VARIANTS:-1}" = 1 ]; then
		echo "$1=$2:"
	else
		echo "$1: a benchmark key, only in builds with -Dbench_variants=true"
	fi
}
: >"$tmp/empty.txt"
long=nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn
while IFS='|' read -r want args; do
	case "$want" in '' | '#'*) continue ;; esac
	eval "set -- $args"
	expect_bad "$want" --duration 0.2 "$@"
done <<EOF
# options
--port: needs a value|--port
--lcores 'x'|--port $inline --lcores x
--lcores '100000'|--port $inline --lcores 100000
--map: port 1 (simnic1.1) is not polled|--port $inline --map 0:0
--rxq '0'|--port $inline --rxq 0
--fwd 'nope'|--port $inline --fwd nope
--burst '010'|--port $inline --burst 010
--burst '513'|--port $inline --burst 513
--rxd '0'|--port $inline --rxd 0
--rxd 100): Invalid argument (simnic|--port $inline --rxd 100
--txd '65537'|--port $inline --txd 65537
--pool '0'|--port $inline --pool 0
--pool 1: too few buffers|--port $inline --pool 1
--cache '1'|--port $inline --cache 1
--cache '513'|--port $inline --cache 513
--mbuf-size '63'|--port $inline --mbuf-size 63
--mbuf-size '0x100'|--port $inline --mbuf-size 0x100
--txfree 'never'|--port $inline --txfree never
--rs 'x'|--port $inline --rs x
--rs-thresh '0'|--port $inline --rs-thresh 0
--free-thresh '+1'|--port $inline --free-thresh +1
--fast-free|--port $inline --fast-free=yes
--routes $tmp/empty.txt: only --fwd l3fwd|--port $inline --routes $tmp/empty.txt
--routes $tmp/empty.txt: no routes|--port $inline --fwd l3fwd --routes $tmp/empty.txt
--routes: /dev/zero:1: not a text file|--port $inline --fwd l3fwd --routes /dev/zero
--routes: $tmp/nofile: No such file|--port $inline --fwd l3fwd --routes $tmp/nofile
--telemetry $tmp/no/t.sock: No such file|--port $inline --telemetry $tmp/no/t.sock
--prom $tmp/no/x.prom: No such file|--port $inline --prom $tmp/no/x.prom
--txonly-size '41'|--port $inline --fwd txonly --txonly-size 41
--txonly-size 3000: must be 42..2048|--port $inline --fwd txonly --txonly-size 3000
--flows '65537'|--port $inline --fwd txonly --flows 65537
--rate 1000: only --fwd txonly|--port $inline --rate 1000
--rate '0'|--port $inline --fwd txonly --rate 0
--rate '5000Gbit'|--port $inline --fwd txonly --rate 5000Gbit
--rate '1.5'|--port $inline --fwd txonly --rate 1.5
--duration '0'|--port $inline --duration 0
--packets '0'|--port $inline --packets 0
--packets ' 5'|--port $inline --packets ' 5'
--stats-period 'x'|--port $inline --stats-period x
--json $tmp/no/dir.json: cannot write|--port $inline --json $tmp/no/dir.json
--quiet|--port $inline --quiet=1
--mtu '67'|--port $inline --mtu 67
--mtu '65536'|--port $inline --mtu 65536
--mtu 9000: Operation not supported|--port $inline --port vhost:socket=$tmp/v.sock --mtu 9000
--mtu 3000: Invalid argument (the port takes 68..2030)|--port memif:socket=$tmp/m.sock,buffer=1024,max_chain=2 --port $inline --mtu 3000
unexpected argument 'stray'|--port $inline stray
# simnic keys
ports=010: not a decimal|--port simnic:ports=010
ports=0x2: not a decimal|--port simnic:ports=0x2
ports= 2: not a decimal|--port 'simnic:ports= 2'
ports=17: must be in 1..16|--port simnic:ports=17
queues=0:|--port simnic:queues=0
mode=fast:|--port simnic:mode=fast
cpu=1023: this process may not run on CPU 1023|--port simnic:mode=thread,cpu=1023
wire=air:|--port simnic:wire=air
size=59:|--port simnic:size=59
flows=0:|--port simnic:flows=0
count=-1:|--port simnic:count=-1
rate=0x10:|--port simnic:rate=0x10
ondie=1:|--port simnic:ondie=1
wb=never:|--port simnic:wb=never
unknown key 'colour'|--port simnic:ports=2,colour=blue
# null keys
size=65536:|--port null:size=65536
queues=+1:|--port null:queues=+1
fill=maybe:|--port null:fill=maybe
# ring keys
name=(missing)|--port ring:queues=1
peer=2:|--port ring:name=cli$$,peer=2
queues=99:|--port ring:name=cli$$,queues=99
size=3:|--port ring:name=cli$$,size=3
# pcap keys
rx=$tmp/none.pcap: No such file|--port pcap:rx=$tmp/none.pcap
tx=$tmp/no/out.pcap: cannot create|--port pcap:tx=$tmp/no/out.pcap
loop= 1:|--port 'pcap:tx=/dev/null,loop= 1'
pace=sometimes:|--port pcap:tx=/dev/null,pace=sometimes
neither rx=|--port pcap:loop=2
tx=/dev/full: cannot write the file header: No space left|--port pcap:tx=/dev/full
# memif keys
socket=:|--port memif:socket=
role=boss:|--port memif:socket=$tmp/m.sock,role=boss
id=4294967296:|--port memif:socket=$tmp/m.sock,id=4294967296
rings=0:|--port memif:socket=$tmp/m.sock,rings=0
ring_size=1000:|--port memif:socket=$tmp/m.sock,ring_size=1000
buffer=1:|--port memif:socket=$tmp/m.sock,buffer=1
zero_copy=perhaps:|--port memif:socket=$tmp/m.sock,zero_copy=perhaps
tx_stores=fast:|--port memif:socket=$tmp/m.sock,tx_stores=fast
$(bench txfree_loop 2)|--port memif:socket=$tmp/m.sock,txfree_loop=2
abstract=x:|--port memif:socket=x,abstract=x
name=$long:|--port memif:socket=$tmp/m.sock,name=$long
secret: 40 characters, at most 23|--port memif:socket=$tmp/m.sock,secret=$long
# afxdp keys (refused before any interface is touched)
dev=IFNAME is required|--port afxdp:dev=
dev=nosuch$$: no such interface|--port afxdp:dev=nosuch$$
queue=1024:|--port afxdp:dev=lo,queue=1024
queues=0:|--port afxdp:dev=lo,queues=0
mode=turbo:|--port afxdp:dev=lo,mode=turbo
zero_copy=2:|--port afxdp:dev=lo,zero_copy=2
need_wakeup=x:|--port afxdp:dev=lo,need_wakeup=x
frame=1024:|--port afxdp:dev=lo,frame=1024
prog=/etc/passwd: not an ELF object|--port afxdp:dev=lo,prog=/etc/passwd
prog=: empty path|--port afxdp:dev=lo,prog=
busy_poll=1000001:|--port afxdp:dev=lo,busy_poll=1000001
$(bench txc_walk y)|--port afxdp:dev=lo,txc_walk=y
EOF

# More /25s in distinct /24s than the LPM has tbl8 groups (32768): the message names it.
awk 'BEGIN { for (i = 0; i <= 32768; i++) printf "10.%d.%d.128/25 0\n", i / 256, i % 256 }' \
	>"$tmp/tbl8.txt"
expect_bad "more than 32768 distinct /24s" --port $inline --fwd l3fwd --routes "$tmp/tbl8.txt"

# A run of 100 packets: cycles per packet would measure the waiting, so none is shown.
if "$fwd" --port $inline --packets 100 --quiet >"$tmp/few.out" 2>&1 &&
	grep -Eq '^total +100 +100 .* - ' "$tmp/few.out"; then
	echo "ok: no cycles per packet for 100 packets"
else
	fail "cyc/pkt with 100 packets: $(grep '^total' "$tmp/few.out")"
fi

# --json is checked before the run: nothing ran, so nothing was printed on stdout.
"$fwd" --port $inline --json "$tmp/no/dir.json" -d 5 >"$tmp/out" 2>/dev/null
[ -s "$tmp/out" ] && fail "--json to a bad path: a run happened: $(cat "$tmp/out")"

printf '10.0.0.0/16 0\n10.1.0.0/33 1\n' >"$tmp/routes.txt"
expect_bad "routes.txt:2:" --port $inline --fwd l3fwd --routes "$tmp/routes.txt"
# One prefix, two ports: refused before the run at the second line; the same route twice
# runs, with one warning line.
printf '10.0.0.0/16 0\n10.1.0.0/16 1\n10.0.0.0/16 1\n' >"$tmp/twice.txt"
expect_bad "twice.txt:3: 10.0.0.0/16 again with port 1 (line 1 gives port 0)" \
	--port $inline --fwd l3fwd --routes "$tmp/twice.txt"
printf '10.0.0.0/16 0\n10.1.0.0/16 1\n10.0.0.0/16 0\n' >"$tmp/twice.txt"
if "$fwd" --port $inline --fwd l3fwd --packets 1000 --quiet --routes "$tmp/twice.txt" \
	>"$tmp/out" 2>"$tmp/err" &&
	[ "$(grep -c . "$tmp/err")" -eq 1 ] &&
	grep -q "warning: --routes: .*twice.txt:3: 10.0.0.0/16 repeats line 1" "$tmp/err"; then
	echo "ok: an exact repeat runs with a warning: $(cat "$tmp/err")"
else
	fail "exact repeat in --routes: $(cat "$tmp/err")"
fi

# A short real run: exit 0, a summary, JSON that parses and shows no leak.
if "$fwd" --port $inline --fwd l3fwd --duration 1 --stats-period 0.3 --xstats --mtu 9000 \
	--json "$tmp/run.json" >"$tmp/run.out" 2>"$tmp/run.err"; then
	grep -q "port 1 (simnic.*): simnic, mtu 9000 (max 65517" "$tmp/run.out" ||
		fail "--mtu: no port line with it"

	grep -Eq "^  simnic_gen_packets +[1-9]" "$tmp/run.out" || fail "--xstats: no simnic counters"
	grep -q "tide-fwd summary" "$tmp/run.out" || fail "no summary: $(cat "$tmp/run.out")"
	grep -q "buffers outstanding after stop: 0" "$tmp/run.out" || fail "outstanding buffers"
	grep -q "cyc/pkt" "$tmp/run.out" || fail "no live statistics"
	python3 -m json.tool "$tmp/run.json" >/dev/null || fail "--json does not parse"
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == 1 and d["tool"] == "tide-fwd", d
assert d["buffers_outstanding"] == 0, d
assert d["total"]["rx_packets"] > 0, d
assert d["total"]["tx_packets"] > 0, d
assert d["config"]["fwd"] == "l3fwd", d
assert set(d["total"]["drops"]) >= {"not_ipv4", "bad_header", "bad_checksum", "ttl_expired", "no_route", "same_port"}
x = d["ports"][0]["xstats"]
assert x["rx_good_packets"] >= d["ports"][0]["rx_packets"] > 0, x
assert x["simnic_gen_packets"] > 0, x
for p in d["ports"]:
    assert (p["mtu"], p["max_mtu"], p["max_frame"]) == (9000, 65517, 65535), p
' "$tmp/run.json" || fail "--json content"
	echo "ok: 1 s l3fwd run"
else
	fail "1 s run exited $?: $(cat "$tmp/run.err")"
fi

# idle_time_pct: the share of the lcores' time in polls that moved nothing. A null port's
# Rx never comes back empty and its Tx takes every packet (0%); the lone end of a ring pair
# never receives anything (all of it).
for c in "null: rxonly lt 1" "null: txonly lt 1" "ring:name=idle rxonly gt 99"; do
	set -- $c
	if "$fwd" --port "$1" --fwd "$2" --duration 0.3 --quiet --json "$tmp/idle.json" \
		>"$tmp/idle.out" 2>&1; then
		python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["total"]
v = t["idle_time_pct"]
assert 0 <= v <= 100 and (v < float(sys.argv[3]) if sys.argv[2] == "lt" else v > float(sys.argv[3])), t
' "$tmp/idle.json" "$3" "$4" || fail "$1 $2: idle_time_pct"
		echo "ok: idle_time_pct, $1 $2"
	else
		fail "$1 $2: $(cat "$tmp/idle.out")"
	fi
done

# The active window (active_s, active_idle_*_pct): from the first poll that moved packets to
# the last. A memif sink waits 1 s for its generator, which sends 100000 packets at 100000
# per second, and 0.5 s after it: the window lies inside the generator's run (the whole run
# is 2.5 s longer), and its idle share is at most the whole run's. Each on a CPU of its own
# where there are two (both would take the first by default and run by turns).
set -- $(python3 -c 'import os; c = sorted(os.sched_getaffinity(0)); print(c[0], c[-1])')
"$fwd" --port "memif:socket=$tmp/aw.sock,role=server" --fwd rxonly --lcores $1 --stats-period 0 \
	--json "$tmp/aw_sink.json" >"$tmp/aw_sink.out" 2>&1 &
sink=$!
wait_banner "$tmp/aw_sink.out"
sleep 1
if "$fwd" --port "memif:socket=$tmp/aw.sock,role=client" --fwd txonly --lcores $2 --rate 100000 \
	--packets 100000 --quiet --json "$tmp/aw_gen.json" >"$tmp/aw_gen.out" 2>&1; then
	sleep 0.5
	kill -INT $sink
	if wait $sink; then
		python3 -c '
import json, sys
s = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2]))
t = s["total"]
assert t["rx_packets"] == 100000, t
assert 0.8 <= t["active_s"] <= g["duration_s"] + 0.3, (t["active_s"], g["duration_s"])
assert s["duration_s"] >= t["active_s"] + 1.4, (s["duration_s"], t["active_s"])
assert 0 <= t["active_idle_time_pct"] <= t["idle_time_pct"] + 0.01, t
assert 0 <= t["active_idle_poll_pct"] <= 100, t
print("ok: active window %.2f s of a %.2f s sink run (generator %.2f s); idle time %.1f%% in it, %.1f%% in all" %
      (t["active_s"], s["duration_s"], g["duration_s"], t["active_idle_time_pct"], t["idle_time_pct"]))
' "$tmp/aw_sink.json" "$tmp/aw_gen.json" || fail "active window: $(cat "$tmp/aw_sink.json")"
	else
		fail "active window: the sink exited $?: $(cat "$tmp/aw_sink.out")"
	fi
else
	fail "active window: the generator: $(cat "$tmp/aw_gen.out")"
	kill -KILL $sink
	wait $sink
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


# SIGINT stops the run with the summary and status 0. A background job of a script starts
# with SIGINT ignored until tide-fwd installs its handler, which it announces ("Ctrl-C
# stops"): the signal goes after that line (a slow start, as under ThreadSanitizer on a
# loaded machine, lost it and the run went on), and a run still going 30 s later is killed.
"$fwd" --port $inline --fwd macswap --stats-period 1000 >"$tmp/sig.out" 2>&1 &
pid=$!
wait_banner "$tmp/sig.out"
kill -INT $pid
(sleep 30 && kill -KILL $pid) >/dev/null 2>&1 &
dog=$!
wait $pid
rc=$?
pkill -P $dog 2>/dev/null
kill $dog 2>/dev/null
if [ $rc -ne 0 ] || ! grep -q "stopped by SIGINT" "$tmp/sig.out"; then
	fail "SIGINT: rc $rc: $(cat "$tmp/sig.out")"
else
	echo "ok: SIGINT"
fi

# The library's settings from the environment: a value it does not understand is named in a
# warning and the run goes on with the default (exit 0, a summary). The tests run at level
# err: notice here, so that warnings are delivered.
for setting in "TIDE_LOG_LEVEL=loud|TIDE_LOG_LEVEL=loud is not a level" \
	"TIDE_POOL_DEBUG=10|TIDE_POOL_DEBUG=10 is not 0 or 1"; do
	var=${setting%%|*}
	want=${setting#*|}
	env TIDE_LOG_LEVEL=notice "$var" "$fwd" --port $inline --duration 0.2 >"$tmp/env.out" 2>"$tmp/env.err"
	rc=$?
	if [ $rc -ne 0 ] || ! grep -q "WARNING.*$want" "$tmp/env.err" ||
		! grep -q "stopped by duration" "$tmp/env.out"; then
		fail "$var: rc $rc: $(cat "$tmp/env.err")"
	else
		echo "ok: $var -> $(grep "$want" "$tmp/env.err")"
	fi
done

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
[ $fails -eq 0 ]
