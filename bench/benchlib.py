# SPDX-License-Identifier: BSD-3-Clause
"""bench/benchlib.py - what every benchmark runner of bench/*/run shares.

    log(msg)                 a timestamped line on stderr
    loadavg()                the 1/5/15-minute load averages, as one string
    autogroup()              whether the kernel's scheduler autogroup is on
    wait_for(cond, secs, w)  poll cond() every 20 ms for up to secs seconds
    median(xs)               median of the values that are not None, or None
    spread(xs)               (median, min, max) or None
    fmt_spread(s)            "median (min..max)" of a spread, "-" for None

The other shared pieces have modules of their own beside this one: hugepages.py (reserve
and mount 2 MiB pages for DPDK), dpdk_harness.py (EAL runs: prefixes, the hugepage check,
cleanup), testpmd.py (dpdk-testpmd processes) and corun.py (the co-run probe).
"""
import statistics
import sys
import time


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def autogroup():
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as f:
            return "on" if f.read().strip() == "1" else "off"
    except OSError:
        return "not in this kernel"


def wait_for(cond, secs, what):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.02)
    log(f"gave up waiting for {what} after {secs} s")
    return False


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs):
    return (statistics.median(xs), min(xs), max(xs)) if xs else None


def fmt_spread(s):
    return "%.2f (%.2f..%.2f)" % s if s else "-"
