#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# memif interoperability with FD.io VPP's libmemif, tide in both roles. libmemif is built
# from ../shared/peers/libmemif-src.tar.gz into the build directory (once; exit 77 when the
# tarball or cmake is missing), with our own libmemif test peer (lm_peer.c: echo, count,
# gen) and libmemif's icmp_responder example.
#
# Each case: tide (tests/memif_peer) sends COUNT frames with sequence numbers and a payload
# pattern, the libmemif peer echoes them, tide checks every byte of every frame that comes
# back. Exact counts on both sides: tide tx = COUNT = libmemif rx = libmemif tx = tide rx,
# bad = 0. Covered: both roles, libmemif in interrupt and polling mode, tide copy and
# zero-copy, chained frames over 2048 bytes, ring sizes 64..16384, two rings, a libmemif
# client with 4096-byte buffers, secret and id mismatch refused with the reason logged,
# kill -9 and restart of either side, icmp_responder answering every echo request.
#
# usage: test_libmemif.sh BUILD_DIR PATH/TO/memif_peer PATH/TO/tide-fwd PATH/TO/icmp_ping
set -u
build=$(cd "$1" && pwd)
peer=$2
fwd=$3
ping=$4
# The cases read tide's link and refusal lines (notice and warning level).
export TIDE_LOG_LEVEL=notice
src=$(cd "$(dirname "$0")" && pwd)
tarball=${LIBMEMIF_TARBALL:-$src/../../../shared/peers/libmemif-src.tar.gz}
[ -f "$tarball" ] || tarball=/work/shared/peers/libmemif-src.tar.gz
[ -f "$tarball" ] || { echo "skip: libmemif source tarball not found" >&2; exit 77; }
command -v cmake >/dev/null || { echo "skip: cmake not installed (scripts/install-deps)" >&2; exit 77; }
command -v git >/dev/null || { echo "skip: git not installed (libmemif's build runs git describe)" >&2; exit 77; }

lm=$build/libmemif
lmlib=$lm/extras/libmemif/build/lib/libmemif.so
# Build once per build directory; concurrent runs wait for each other.
(
	flock 9
	if [ ! -f "$lmlib" ] || [ ! -x "$lm/extras/libmemif/build/examples/icmp_responder" ]; then
		rm -rf "$lm" && mkdir -p "$lm" && tar -xzf "$tarball" -C "$lm" || exit 1
		cd "$lm" || exit 1
		# Its CMakeLists runs `git describe --match v*`: give it a repository with a tag.
		git init -q && git add -A && git -c user.email=t@t -c user.name=t commit -qm libmemif &&
			git -c user.email=t@t -c user.name=t tag -a v26.10-rc0 -m rc0 || exit 1
		mkdir -p extras/libmemif/build && cd extras/libmemif/build || exit 1
		cmake .. -DCMAKE_BUILD_TYPE=Release >cmake.log 2>&1 &&
			make memif icmp_responder >make.log 2>&1 || { tail -20 ./*.log; exit 1; }
	fi
) 9>"$build/libmemif.lock" || { echo "FAIL: building libmemif"; exit 1; }
lmdir=$lm/extras/libmemif
lmp=$build/lm_peer
if [ ! -x "$lmp" ] || [ "$src/lm_peer.c" -nt "$lmp" ]; then
	cc -O2 -Wall -Werror -o "$lmp" "$src/lm_peer.c" -I"$lmdir/src" -L"$lmdir/build/lib" \
		-Wl,-rpath,"$lmdir/build/lib" -lmemif || { echo "FAIL: building lm_peer"; exit 1; }
fi
responder=$lmdir/build/examples/icmp_responder

dir=$(mktemp -d "${TMPDIR:-/tmp}/tide-libmemif-XXXXXX")
pids=""
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	[ -n "${KEEP_DIR:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
fail=0
n=0

# shellcheck source=tests/wait_for.sh
. "$src/../wait_for.sh"

field() { echo " $1" | sed -n "s/.*[ :]$2=\([0-9]*\).*/\1/p"; }

# case NAME TIDE_ROLE TIDE_EXTRA LM_ARGS COUNT SIZE [NQ]
run() {
	name=$1 trole=$2 textra=$3 largs=$4 count=$5 size=$6 nq=${7:-1}
	n=$((n + 1))
	sock=$dir/s$n.sock
	lrole=master
	[ "$trole" = server ] && lrole=slave
	exp=$((count * nq))
	# The libmemif peer echoes until tide has every frame back (then it is told to stop).
	# shellcheck disable=SC2086
	"$lmp" -r $lrole -s "$sock" -i 4 -q "$nq" -a echo -t 25 $largs \
		>"$dir/lm$n.out" 2>"$dir/lm$n.err" &
	lpid=$!
	pids="$pids $lpid"
	if [ "$lrole" = master ]; then
		wait_for test -S "$sock" || { echo "FAIL $name: libmemif never listened"; fail=1; return; }
	fi
	out=$("$peer" "memif:socket=$sock,role=$trole,id=4,rings=$nq$textra" 20 "$count" "$size" \
		"$exp" "$nq" 2>"$dir/tide$n.err")
	kill "$lpid" 2>/dev/null
	wait "$lpid" 2>/dev/null
	lout=$(tail -n 1 "$dir/lm$n.out")
	echo "$name: tide $out; $lout"
	tx=$(field "$out" tx) rx=$(field "$out" rx) bad=$(field "$out" bad)
	lrx=$(field "$lout" rx) ltx=$(field "$lout" tx) lbad=$(field "$lout" bad)
	lswept=$(field "$lout" swept)
	# swept: frames libmemif found only by looking (a kick it consumed with frames still in
	# the ring, its own race); a tide that did not kick would leave it nearly all of them.
	if [ "${tx:-0}" -ne "$exp" ] || [ "${rx:-0}" -ne "$exp" ] || [ "${bad:-1}" -ne 0 ] ||
		[ "${lrx:-0}" -ne "$exp" ] || [ "${ltx:-0}" -ne "$exp" ] || [ "${lbad:-1}" -ne 0 ] ||
		[ "${lswept:-$exp}" -gt $((exp / 10)) ]; then
		echo "FAIL $name"; cat "$dir/tide$n.err" "$dir/lm$n.err" | tail -n 10; fail=1
	fi
}

run "tide client, libmemif server interrupt, 64 B" client "" "-m intr" 20000 64
run "tide client, libmemif server polling, 64 B" client "" "-m poll" 20000 64
run "tide server, libmemif client interrupt, 64 B" server "" "-m intr" 20000 64
run "tide server, libmemif client polling, 64 B" server "" "-m poll" 20000 64
run "tide client, chained 3000 B" client "" "-m intr" 5000 3000
run "tide server, chained 9000 B" server "" "-m intr" 3000 9000
run "tide client zero-copy, libmemif server interrupt" client ",zero_copy=yes" "-m intr" 10000 1500
run "tide client zero-copy, chained 5000 B" client ",zero_copy=yes" "-m poll" 3000 5000
run "tide client ring_size=64" client ",ring_size=64" "-m intr" 5000 1000
run "tide client ring_size=16384" client ",ring_size=16384" "-m intr" 20000 64
run "tide server, libmemif client 64 slots" server "" "-m intr -l 6" 5000 1000
run "tide server, libmemif client 16384 slots" server "" "-m poll -l 14" 20000 64
run "tide client, two rings" client "" "-m intr" 5000 256 2
run "tide server, two rings" server "" "-m poll" 5000 256 2
run "tide server, libmemif client 4096-byte buffers" server "" "-m intr -b 4096" 5000 4000

# Refusals: the libmemif server says why, and tide logs it.
refused() { # NAME TIDE_EXTRA LM_ARGS WANT
	n=$((n + 1))
	sock=$dir/s$n.sock
	# shellcheck disable=SC2086
	"$lmp" -r master -s "$sock" -i 4 -t 20 $3 >"$dir/lm$n.out" 2>&1 &
	lpid=$!
	pids="$pids $lpid"
	wait_for test -S "$sock" || { echo "FAIL $1: libmemif never listened"; fail=1; return; }
	out=$("$peer" "memif:socket=$sock,role=client$2" 1 1 64 2>"$dir/tide$n.err")
	kill "$lpid" 2>/dev/null
	wait "$lpid" 2>/dev/null
	line=$(grep -i "refused" "$dir/tide$n.err" | head -n 1)
	echo "$1: tide $out; logged: $line"
	if [ "$(field "$out" link)" != 0 ] || ! echo "$line" | grep -qi "$4"; then
		echo "FAIL $1 (want a refusal naming '$4')"; cat "$dir/tide$n.err"; fail=1
	fi
	[ "$(grep -ci refused "$dir/tide$n.err")" -le 1 ] || {
		echo "FAIL $1: the refusal is logged more than once"; fail=1; }
}
refused "wrong secret refused" ",id=4,secret=wrong" "-k right" "secret"
refused "unknown id refused" ",id=9" "" "."

# kill -9 and restart of either side: the survivor reconnects and traffic is exact again.
restart() { # NAME TIDE_ROLE
	n=$((n + 1))
	sock=$dir/s$n.sock
	lrole=master
	[ "$2" = server ] && lrole=slave
	"$lmp" -r $lrole -s "$sock" -i 4 -a echo -t 60 >"$dir/lm$n.out" 2>&1 &
	lpid=$!
	pids="$pids $lpid"
	[ $lrole = master ] && wait_for test -S "$sock"
	"$peer" "memif:socket=$sock,role=$2,id=4" 30 100000000 64 >"$dir/tide$n.out" 2>"$dir/tide$n.err" &
	tpid=$!
	pids="$pids $tpid"
	# Traffic flows (libmemif counts echoes), then kill -9 the libmemif side and restart it.
	wait_for grep -q "link up" "$dir/tide$n.err" || { echo "FAIL $1: no link"; fail=1; return; }
	kill -9 "$lpid"; wait "$lpid" 2>/dev/null
	wait_for grep -q "link down" "$dir/tide$n.err" || { echo "FAIL $1: tide saw no link down"; fail=1; return; }
	[ $lrole = master ] && rm -f "$sock"
	"$lmp" -r $lrole -s "$sock" -i 4 -a echo -t 60 >"$dir/lm$n.b.out" 2>&1 &
	lpid=$!
	pids="$pids $lpid"
	wait_for sh -c "[ \$(grep -c 'link up' '$dir/tide$n.err') -ge 2 ]" ||
		{ echo "FAIL $1: tide did not reconnect"; fail=1; }
	# And the other way: kill -9 tide, a new tide connects to the same libmemif peer.
	kill -9 "$tpid"; wait "$tpid" 2>/dev/null
	out=$("$peer" "memif:socket=$sock,role=$2,id=4" 20 2000 64 2000 2>"$dir/tide$n.c.err")
	kill "$lpid" 2>/dev/null; wait "$lpid" 2>/dev/null
	echo "$1: after both restarts tide $out"
	if [ "$(field "$out" rx)" != 2000 ] || [ "$(field "$out" bad)" != 0 ]; then
		echo "FAIL $1"; tail -n 5 "$dir/tide$n.c.err"; fail=1
	fi
}
# Two interface ids on one tide socket (as libmemif and VPP serve them): tide-fwd forwards
# between ids 0 and 1; one libmemif client generates on id 0, another counts on id 1.
multi_id() {
	n=$((n + 1))
	sock=$dir/s$n.sock
	"$fwd" --port "memif:socket=$sock,role=server,id=0" --port "memif:socket=$sock,role=server,id=1" \
		--fwd io --rx-mode interrupt --quiet --duration 30 >"$dir/fwd$n.out" 2>"$dir/fwd$n.err" &
	fpid=$!
	pids="$pids $fpid"
	wait_for test -S "$sock" || { echo "FAIL two ids: tide-fwd never listened"; fail=1; return; }
	"$lmp" -r slave -s "$sock" -i 1 -a count -e -x 5000 -t 25 >"$dir/cnt$n.out" 2>&1 &
	cpid=$!
	pids="$pids $cpid"
	wait_for grep -q "memif_s1: link up" "$dir/fwd$n.err" || { echo "FAIL two ids: id 1 never up"; fail=1; return; }
	"$lmp" -r slave -s "$sock" -i 0 -a gen -n 5000 -z 500 -t 25 >"$dir/gen$n.out" 2>&1 &
	gpid=$!
	pids="$pids $gpid"
	# The generator exits once all is sent and taken; the counting side once it has all
	# 5000 (or, when tide-fwd had to drop some, at its -t bound). Only then does tide-fwd
	# stop (its summary counts what it could not forward): stopping it earlier would take
	# the link down under frames it put on the counting side's ring and that side has not
	# read yet.
	wait "$gpid"
	wait "$cpid"
	kill "$fpid" 2>/dev/null
	wait "$fpid" 2>/dev/null
	cnt=$(tail -n 1 "$dir/cnt$n.out") gen=$(tail -n 1 "$dir/gen$n.out")
	# A forwarder has no flow control: what the counting side could not take in time is
	# tide-fwd's tx_full, counted in its summary. Nothing else may be missing.
	full=$(awk '/^drops by reason/ {f = 1; next}
		f && /^port/ {for (i = 1; i <= NF; i++) if ($i == "tx_full") c = i}
		f && /^total/ {print $c; exit}' "$dir/fwd$n.out")
	echo "two ids on one socket: libmemif id 0 $gen; libmemif id 1 $cnt; tide-fwd tx_full=$full"
	if [ "$(field "$gen" tx)" != 5000 ] || [ "$(field "$cnt" rx)" -eq 0 ] ||
		[ $(($(field "$cnt" rx) + ${full:-99999})) -ne 5000 ] || [ "$(field "$cnt" bad)" != 0 ]; then
		echo "FAIL two ids on one socket"; tail -n 5 "$dir/fwd$n.err"; fail=1
	fi
}
multi_id

# libmemif's own icmp_responder (interrupt mode) answers tide: every request captured on
# the way out, every reply on the way in, each reply matched to its request.
icmp() { # NAME ROLE_OF_RESPONDER
	n=$((n + 1))
	sock=$dir/s$n.sock
	trole=client
	[ "$2" = slave ] && trole=server
	if [ "$2" = master ]; then
		"$responder" -r master -s "$sock" >"$dir/icmp$n.out" 2>&1 &
		rpid=$!
		wait_for test -S "$sock" || { echo "FAIL $1: icmp_responder never listened"; fail=1; return; }
		out=$("$ping" "memif:socket=$sock,role=$trole" 1000 20 "$dir/in$n.pcap" "$dir/out$n.pcap" 2>"$dir/ping$n.err")
	else
		"$ping" "memif:socket=$sock,role=$trole" 1000 20 "$dir/in$n.pcap" "$dir/out$n.pcap" \
			>"$dir/ping$n.out" 2>"$dir/ping$n.err" &
		ppid=$!
		wait_for test -S "$sock"
		"$responder" -r slave -s "$sock" >"$dir/icmp$n.out" 2>&1 &
		rpid=$!
		wait "$ppid"
		out=$(cat "$dir/ping$n.out")
	fi
	pids="$pids $rpid"
	kill "$rpid" 2>/dev/null
	wait "$rpid" 2>/dev/null
	chk=$(python3 "$src/check_icmp.py" "$dir/in$n.pcap" "$dir/out$n.pcap" 1000 2>&1)
	rc=$?
	echo "$1: tide $out; $chk"
	[ $rc -eq 0 ] || { echo "FAIL $1"; tail -n 5 "$dir/ping$n.err" "$dir/icmp$n.out"; fail=1; }
}
icmp "icmp_responder master, tide client" master
icmp "icmp_responder slave, tide server" slave

restart "kill -9 and restart, tide client" client
restart "kill -9 and restart, tide server" server

exit $fail
