# SPDX-License-Identifier: BSD-3-Clause
"""bench/corun.py - the co-run probe: did this VM run its two CPUs at the same time?

    pr = corun.probe(build, secs)      # -> (co-run %, ran %) or None (no probe binary);
                                       #    pr.rt_ns: the line round trip (None if unknown)
    line = corun.describe(secs, values, "pair")
    line = corun.describe_rt(values)   # the line round trips of a run
    cut = corun.placement_cut(values)  # near/far boundary of those, or None
    near, far, out = corun.split_by_placement(pairs, cut)  # [(item, round trips)] by placement

build/bench/memif_corun (bench/memif/corun.c) spins one thread on CPU 0 and one on CPU 1
for @secs; each times the stretches in which the other's counter stood still for more than
20 us. co-run % is the share of its own running time in which each thread saw the other run
too (mean of the two), ran % the share of the wall time the threads were on their CPUs.
Then the two threads bounce one cache line: rt_ns is the round trip between CPUs 0 and 1 (the
fastest of 5 x 20000). A host that moves its vCPUs puts the two CPUs on one last-level cache
at one time and on different dies at another (here about 150 ns against about 480 ns); a
pair that moves every frame's lines from one CPU to the other runs at a different rate in
each, whichever library moves them, so the benchmarks print it with every pair. A
pair of polling processes on two CPUs (memif generator and sink, virtio-user frontend and
vhost backend) moves packets only while both run, so the benchmarks that run such pairs
(bench/memif/run, bench/vhost/run) run the probe before each pair and print it.
"""
import json
import os
import statistics
import subprocess


class Probe(tuple):
    """(co-run %, ran %), and .rt_ns: the cache line round trip between the CPUs (or None)."""
    rt_ns = None


def probe(build, secs):
    """Probe (co-run %, ran %; .rt_ns) of one @secs run of the probe in @build, or None."""
    exe = os.path.join(build, "bench/memif_corun")
    if not os.access(exe, os.X_OK):
        return None
    r = subprocess.run([exe, str(secs)], capture_output=True, text=True)
    try:
        d = json.loads(r.stdout)
    except ValueError:
        return None
    pr = Probe((sum(d["corun_pct"]) / 2, sum(d["ran_pct"]) / 2))
    rt = d.get("line_rt_ns")
    pr.rt_ns = rt if isinstance(rt, (int, float)) and rt > 0 else None
    return pr


def describe_rt(values):
    """One header line on the cache line round trips @values (ns) of a run, or None."""
    v = [x for x in values if x]
    if not v:
        return None
    return ("cache line round trip between CPUs 0 and 1 (the same probe, after it): median "
            "%.0f ns, range %.0f..%.0f ns; every line a pair moves across pays it"
            % (statistics.median(v), min(v), max(v)))


# The longest line round trip (ns) taken for two CPUs on one last-level cache: such a
# round trip stays well under it (here 105-180 ns), one between dies is above (430-530).
NEAR_MAX_NS = 300


def placement_cut(values):
    """The round trip (ns) that splits a run's probes @values into near (at or below it)
    and far (above): 1.5x the shortest; None unless the run saw both: its shortest at most
    NEAR_MAX_NS (a run that was far throughout has only spikes above its far probes, which
    a relative cut alone would call far and the rest near) and its longest beyond the cut."""
    v = [x for x in values if x]
    if not v or min(v) > NEAR_MAX_NS or max(v) <= 1.5 * min(v):
        return None
    return 1.5 * min(v)


def placement(rts, cut):
    """True (near) or False (far) for a pair whose probes, the round trips @rts (ns, one or
    a tuple), all fall on one side of @cut; None when one is missing or they disagree (the
    host moved the vCPUs during the pair)."""
    rts = tuple(rts) if isinstance(rts, (tuple, list)) else (rts,)
    if not rts or not all(rts):
        return None
    sides = {x <= cut for x in rts}
    return sides.pop() if len(sides) == 1 else None


def split_by_placement(pairs, cut):
    """(near items, far items, how many left out) of @pairs [(item, round trips)], each
    placed by placement()."""
    near, far, out = [], [], 0
    for item, rts in pairs:
        where = placement(rts, cut)
        if where is None:
            out += 1
        else:
            (near if where else far).append(item)
    return near, far, out


def describe(secs, values, what="pair"):
    """One header line on the co-run %s @values of a run (None when there are none)."""
    if not values:
        return None
    return ("co-run probe (bench/memif_corun, %g s before each %s: two spinning threads on "
            "CPUs 0 and 1, share of its running time each saw the other run too): median "
            "%.0f%%, range %.0f..%.0f%%; a cross-CPU pair moves packets only while both run"
            % (secs, what, statistics.median(values), min(values), max(values)))


if __name__ == "__main__":
    # Smoke check (bench/meson.build): python3 bench/corun.py BUILD runs the probe briefly
    # and checks that it gave every figure; exit 77 (skipped) on fewer than two CPUs.
    import sys
    # The near/far boundary first (no CPUs needed): 1.5x the shortest, none without both,
    # none when every probe was far (far ones with spikes: 441-492 and 1196 ns).
    cuts = (placement_cut([480, 120, None, 130]), placement_cut([120, 130, 175]),
            placement_cut([]), placement_cut([467, 1196, 441, 492]))
    if cuts != (180.0, None, None, None):
        print("FAIL: placement_cut gave", cuts)
        sys.exit(1)
    # A pair is near or far only when all its probes are there and agree.
    split = split_by_placement([("a", 120), ("b", (130, 170)), ("c", 470), ("d", (120, 470)),
                                ("e", None), ("f", (480, None)), ("g", (180, 181))], 180.0)
    if split != (["a", "b"], ["c"], 4):
        print("FAIL: split_by_placement gave", split)
        sys.exit(1)
    if not {0, 1} <= os.sched_getaffinity(0):
        print("corun: needs CPUs 0 and 1")
        sys.exit(77)
    pr = probe(sys.argv[1], 0.1)
    print("probe:", pr, "line round trip ns:", pr.rt_ns if pr else None)
    ok = pr is not None and 0 <= pr[0] <= 100 and 0 <= pr[1] <= 100 and pr.rt_ns is not None
    print(describe(0.1, [pr[0]]) if ok else "FAIL: the probe gave no figures")
    print(describe_rt([pr.rt_ns]) if ok else "")
    sys.exit(0 if ok else 1)
