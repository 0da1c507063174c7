#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/vhost/run's table of goal ratios by placement (by_placement()) on made-up pairs:
a pair counts as near or far only when the probes before and after its group agree, a pair
whose probes disagree or miss is left out and counted in the header, each cell gives the
median, range and rounds at or above the goal of its own pairs, and a run that never saw
both placements gets no table. Exit 0 when every check holds, 1 with the first that does
not."""
import importlib.machinery
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load_run():
    loader = importlib.machinery.SourceFileLoader("vhost_run", os.path.join(HERE, "run"))
    spec = importlib.util.spec_from_loader("vhost_run", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def check(cond, what):
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)


def main():
    run = load_run()
    near, far = (120, 130), (460, 480)
    placed = [
        # layout, size, direction, ratio column, goal, [(pair ratio, (before, after))]
        ("split", 64, "guest->backend", "t fe / D fe", 1.3,
         [(1.5, near), (1.1, near), (1.3, near),  # 1.3: at the goal, counted
          (2.0, far), (1.2, far),
          (9.9, (125, 470)),      # the placement changed during the group: left out
          (8.8, (None, 470))]),   # a probe missing: left out
        ("split", 1518, "backend->guest", "t<->t / D<->D", 1.5,
         [(1.6, far), (1.7, far)]),  # far only: no near pairs
    ]
    rts = [120, 130, 460, 470, 480]
    lines = run.by_placement(placed, rts)
    text = "\n".join(lines)
    check(lines and "2 pairs left out" in lines[1], "the header counts the 2 pairs whose probes "
          "disagree or miss:\n" + text)
    check("up to 180 ns" in lines[1], "the cut is 1.5x the shortest probe (120 -> 180 ns):\n" +
          text)
    rows = [x for x in lines if x.startswith("split")]
    check(len(rows) == 2, "one row per cell:\n" + text)
    check("1.30x (1.10..1.50) 2/3" in rows[0], "near: median, range and 2 of 3 at or above 1.3x:\n" +
          text)
    check("1.60x (1.20..2.00) 1/2" in rows[0], "far: median, range and 1 of 2 at 1.3x:\n" +
          text)
    check("9.9" not in text and "8.8" not in text, "the left-out pairs are in no cell:\n" + text)
    check(rows[1].split()[-4:-3] == ["-"] and "1.65x (1.60..1.70) 2/2" in rows[1],
          "a cell without near pairs shows '-' there and its far pairs:\n" + text)
    # A run far throughout (no probe at or under corun.NEAR_MAX_NS): no table at all.
    check(run.by_placement(placed, [460, 470, 1190]) == [], "no table without a near probe")
    # A run near throughout: no table either.
    check(run.by_placement(placed, [120, 125, 130]) == [], "no table without a far probe")
    print("by_placement: 9 checks ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
