#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Smoke run of build/bench/vhost_lockstep: both backends (tide, DPDK's net_vhost), each
# with DPDK's virtio-user frontend, in one process ("both") and alone, and the 2x2 (tide's
# virtio frontend and virtio-user, each with either backend, four pairs in one process),
# both directions, split and packed, 64 and 1518 B, a few thousand packets each, without
# hugepages. It checks what the harness checks (every burst moves 32 packets, payloads
# arrive in order and unchanged, the layout asked for is negotiated, every pool is full at
# the end); timings are never looked at.
# The used_per_pkt row needs a build with the benchmark-only keys (TIDE_BENCH_VARIANTS=1,
# meson option bench_variants); without them it is left out.
# usage: [TIDE_BENCH_VARIANTS=0|1] lockstep_smoke.sh BUILD_DIR
exe="$1/bench/vhost_lockstep"
[ -x "$exe" ] || { echo "no $exe (built when libdpdk-dev is installed)" >&2; exit 77; }
prefix="tidelssmoke$$"
trap 'rm -rf "/var/run/dpdk/$prefix"' EXIT
n=0
variant="tide+tide:used_per_pkt=yes rx"
if [ "${TIDE_BENCH_VARIANTS:-1}" != 1 ]; then
	echo "left out: $variant (a build without -Dbench_variants=true)"
	variant="tide+tide rx"
fi
for run in "both rx" "both tx" "both rx-packed" "both tx-packed" "$variant" "dpdk tx" \
	"2x2 rx" "2x2 tx-packed,vring=256"; do
	set -- $run
	be=$1 d=$2
	size=64
	[ $((n % 2)) -eq 1 ] && size=1518
	n=$((n + 1))
	out=$(timeout 60 "$exe" "$be" "$d" 3200 "$size" --no-pci --log-level=error -l 0 \
		--no-huge -m 512 --file-prefix "$prefix" 2>&1)
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "FAIL: vhost_lockstep $be $d 3200 $size: exit $rc" >&2
		echo "$out" | tail -5 >&2
		exit 1
	fi
	case "$d" in
	*vring=256) if ! echo "$out" | grep -q "vring=256 "; then
		echo "FAIL: vhost_lockstep $be $d: the vring depth asked for is not reported" >&2
		exit 1
	fi ;;
	esac
	echo "$out" | grep -E "^(pair|ns_per_pkt)=" | tr '\n' ' '
	echo
done
# A depth that is not a power of two, or has anything after it, is refused with the
# usage (exit 2).
for bad in rx,vring=100 rx,vring=256x; do
	timeout 60 "$exe" 2x2 "$bad" 3200 64 --no-pci -l 0 --no-huge -m 512 \
		--file-prefix "$prefix" >/dev/null 2>&1
	rc=$?
	if [ $rc -ne 2 ]; then
		echo "FAIL: vhost_lockstep $bad: exit $rc, not 2" >&2
		exit 1
	fi
done
echo "$n runs passed"
