# SPDX-License-Identifier: BSD-3-Clause
"""bench/corun.py - the co-run probe: did this VM run its two CPUs at the same time?

    pr = corun.probe(build, secs)      # -> (co-run %, ran %) or None (no probe binary)
    line = corun.describe(secs, values, "pair")

build/bench/memif_corun (bench/memif/corun.c) spins one thread on CPU 0 and one on CPU 1
for @secs; each times the stretches in which the other's counter stood still for more than
20 us. co-run % is the share of its own running time in which each thread saw the other run
too (mean of the two), ran % the share of the wall time the threads were on their CPUs. A
pair of polling processes on two CPUs (memif generator and sink, virtio-user frontend and
vhost backend) moves packets only while both run, so the benchmarks that run such pairs
(bench/memif/run, bench/vhost/run) run the probe before each pair and print it.
"""
import json
import os
import statistics
import subprocess


def probe(build, secs):
    """(co-run %, ran %) of one @secs run of the probe in @build, or None."""
    exe = os.path.join(build, "bench/memif_corun")
    if not os.access(exe, os.X_OK):
        return None
    r = subprocess.run([exe, str(secs)], capture_output=True, text=True)
    try:
        d = json.loads(r.stdout)
    except ValueError:
        return None
    return sum(d["corun_pct"]) / 2, sum(d["ran_pct"]) / 2


def describe(secs, values, what="pair"):
    """One header line on the co-run %s @values of a run (None when there are none)."""
    if not values:
        return None
    return ("co-run probe (bench/memif_corun, %g s before each %s: two spinning threads on "
            "CPUs 0 and 1, share of its running time each saw the other run too): median "
            "%.0f%%, range %.0f..%.0f%%; a cross-CPU pair moves packets only while both run"
            % (secs, what, statistics.median(values), min(values), max(values)))
