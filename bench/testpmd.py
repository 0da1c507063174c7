# SPDX-License-Identifier: BSD-3-Clause
"""bench/testpmd.py - run dpdk-testpmd for a measured window, on hugepages, and read it.

    r = testpmd.run(cmd, secs, huge, prefixes, key="Rx-pps")

starts @cmd (a dpdk-testpmd command line with --stats-period 1 whose EAL options came from
hugepages.Huge.eal()), waits for its first statistics period (start-up under load can take
seconds), lets it run @secs more, checks that every process of @prefixes holds hugepage
files at that moment (and so do the running processes of @also_check, a peer left running),
stops it with SIGINT, removes @prefixes' page files and returns a Result:

    r.ok        False when it never got going or ran without hugepages (r.why says which)
    r.periods   per-period sums of @key over all ports, in Mpps (the first period dropped)
    r.rate      median of r.periods
    r.total(k)  the final "Accumulated forward statistics" counter k ("RX-packets", ...)
    r.out       everything it printed

stdin is a pipe that is never written: non-interactive testpmd exits at EOF.
"""
import os
import re
import signal
import statistics
import subprocess
import threading
import time


class Result:
    def __init__(self, out, ok, why, key):
        self.out, self.ok, self.why = out, ok, why
        per = []
        for block in out.split("Port statistics")[1:]:
            xs = [int(x) for x in re.findall(key + r":\s+(\d+)", block)]
            if xs:
                per.append(sum(xs) / 1e6)
        self.periods = [x for x in per[1:] if x > 0]
        self.rate = statistics.median(self.periods) if self.periods else None
        if ok and self.rate is None and why is None:
            self.why = "testpmd printed no statistics"

    def total(self, k):
        acc = self.out.split("Accumulated forward statistics")
        m = re.search(k + r":\s+(\d+)", acc[1]) if len(acc) > 1 else None
        return int(m.group(1)) if m else None


def stop(p, timeout=120):
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def start(cmd, stdout=subprocess.PIPE):
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=stdout,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def run(cmd, secs, huge, prefixes, key, start_timeout=60, also_check=()):
    p = start(cmd)
    lines, first = [], threading.Event()

    def reader():
        for line in p.stdout:
            lines.append(line)
            if "Port statistics" in line:
                first.set()
        first.set()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    ok, why = True, None
    try:
        if not first.wait(start_timeout) or p.poll() is not None:
            ok, why = False, "testpmd did not start forwarding"
        else:
            # At least one period after the first (which is dropped): with secs near the
            # period the second block can land just after the deadline.
            deadline = time.time() + secs
            while p.poll() is None and (time.time() < deadline or (
                    sum("Port statistics" in x for x in lines) < 2 and
                    time.time() < deadline + 2)):
                time.sleep(0.05)
            if p.poll() is not None:
                ok, why = False, "testpmd exited during the run"
            elif not all(huge.dpdk_on_huge(px) for px in list(prefixes) + list(also_check)):
                ok, why = False, "REFUSED: testpmd held no hugepage files"
    finally:
        stop(p)
        t.join(timeout=30)
        for px in prefixes:
            for f in huge.files(px):
                os.unlink(f)
    out = "".join(lines)
    if not ok and why and not why.startswith("REFUSED"):
        tail = [l for l in out.splitlines() if l.strip()][-1:]
        why += (": " + tail[0].strip()) if tail else ""
    return Result(out, ok, why, key)
