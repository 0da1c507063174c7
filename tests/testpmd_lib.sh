# shellcheck shell=bash disable=SC2154,SC2034 # root, dir, tp_px come from the sourcing script; mem, tp_rx, tp_tx are for it
# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the bash tests that drive an interactive dpdk-testpmd fed from a FIFO
# (test_vhost_dpdk.sh, test_virtio_dpdk.sh). Before sourcing, set:
#   root   the source tree          dir    the test's scratch directory (mktemp -d)
#   tp_px  the --file-prefix stem of this run's testpmds (unique: it carries $$)
# Then:
#   pids, prefixes          processes killed at exit; testpmd prefixes released at exit
#   (EXIT trap)             kills them, gives back the hugepages, removes $dir and the
#                           runtime directories /var/run/dpdk/$tp_px-*
#   tp_memory PAGES [OPT..] mem=(...): PAGES 2 MiB pages reserved through
#                           bench/hugepages.py (OPT added to the EAL options), or --no-huge
#                           when none can be had; says which
#   wait_for T CMD...       CMD until it succeeds, at most T seconds; 1 on timeout
#   tp_launch TAG CMD...    CMD (a testpmd, interactive) in the background as testpmd TAG:
#                           stdin the FIFO $dir/TAG.in (for tp_cmd), output $dir/TAG.log
#   tp_cmd TAG LINE         one line to testpmd TAG's prompt
#   tp_stats TAG            tp_rx, tp_tx from a fresh "show port stats 0" block
#   tp_quit TAG             quit, and kill -9 if it is not gone within 10 s
#   tp_kill TAG             kill -9, and remove the hugepage files it leaves behind
pids=()
prefixes=()
huge_state=$dir/huge.json
HUGE_DIR=
tp_cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ -e "$huge_state" ]; then
		python3 "$root/bench/hugepages.py" release --state "$huge_state" \
			"${prefixes[@]/#/--prefix=}" 2>/dev/null
	fi
	rm -rf "$dir" /var/run/dpdk/"$tp_px"-* 2>/dev/null
}
trap tp_cleanup EXIT

tp_memory() {
	local pages=$1; shift
	if eval "$(python3 "$root/bench/hugepages.py" reserve --pages "$pages" --state "$huge_state" 2>"$dir/huge.err")" &&
		[ -n "${HUGE_DIR:-}" ]; then
		mem=(--huge-dir "$HUGE_DIR" -m 128 --single-file-segments "$@")
		echo "testpmd on 2 MiB hugepages ($HUGE_DIR)"
	else
		mem=(--no-huge -m 256)
		echo "testpmd with --no-huge: no hugepages: $(cat "$dir/huge.err")"
	fi
}

wait_for() {
	local t=$1; shift
	local end=$((SECONDS + t))
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.05
	done
}

tp_launch() {
	local tag=$1 p; shift
	mkfifo "$dir/$tag.in"
	stdbuf -oL "$@" <"$dir/$tag.in" >"$dir/$tag.log" 2>&1 &
	p=$!
	prefixes+=("$tp_px-$tag")
	pids+=("$p")
	eval "exec {fd_$tag}>\"$dir/$tag.in\""
	eval "tp_$tag=$p"
}
tp_cmd() { local fd; eval "fd=\$fd_$1"; echo "$2" >&"$fd"; }
tp_blocks() { grep -ac 'NIC statistics for port 0' "$dir/$1.log"; }
tp_newblock() { [ "$(tp_blocks "$1")" -gt "$2" ] && [ "$(grep -ac 'TX-packets' "$dir/$1.log")" -gt "$2" ]; }
tp_stats() {
	local before; before=$(tp_blocks "$1")
	tp_rx='' tp_tx='' # never a value left from another testpmd's block
	tp_cmd "$1" "show port stats 0"
	wait_for 10 tp_newblock "$1" "$before" || { echo "no stats from testpmd $1"; return 1; }
	tp_rx=$(awk '/NIC statistics for port 0/ {b++} b == '"$((before + 1))"' && /RX-packets:/ {print $2; exit}' "$dir/$1.log")
	tp_tx=$(awk '/NIC statistics for port 0/ {b++} b == '"$((before + 1))"' && /TX-packets:/ {print $2; exit}' "$dir/$1.log")
}
tp_quit() { tp_cmd "$1" "quit"; local p; eval "p=\$tp_$1"; wait_for 10 bash -c "! kill -0 $p 2>/dev/null" || kill -9 "$p"; }
tp_kill() {
	local p; eval "p=\$tp_$1"
	kill -9 "$p"; wait "$p" 2>/dev/null
	[ -n "${HUGE_DIR:-}" ] && rm -f "$HUGE_DIR/$tp_px-$1"map_*
}
