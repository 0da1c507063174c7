#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/dpdk_harness.py - the EAL side of the one-process DPDK harnesses
(build/bench/dpdk_memif_instr, build/bench/vhost_lockstep), for bench/memif/run and
bench/vhost/run.

Each run gets its own --file-prefix on 2 MiB hugepages (bench/hugepages.py) when they can
be had, else --no-huge (and the caller's table says so: DPDK without hugepages is not DPDK
as deployed). While a run goes on, probe() says whether it holds hugepage files; after()
removes its page files and runtime directory and remembers a run that held none, so a
ratio can be refused:

    h = Harness(exe, "tidememifinstr")   # h.ok: exe was built (libdpdk-dev installed)
    cmd = [h.exe, args...] + h.eal()
    ... start cmd; poll h.probe() while it runs ...
    h.after()              # h.on_huge: every run so far held page files
    h.release()
"""
import os
import shutil

import hugepages


class Harness:
    def __init__(self, exe, tag, pages=64, no_huge_mb=512, extra=()):
        """@exe: the harness; @tag names the file prefixes; @extra EAL options come after
        the memory ones (on hugepages only)."""
        self.exe, self.tag, self.no_huge_mb, self.extra = exe, tag, no_huge_mb, list(extra)
        self.seq, self.last, self.seen, self.on_huge = 0, None, False, True
        self.huge, self.why = None, None
        self.ok = os.access(exe, os.X_OK)
        if not self.ok:
            self.why = f"no {os.path.basename(exe)} (built when libdpdk-dev is installed)"
            return
        try:
            self.huge = hugepages.reserve(pages)
        except hugepages.HugeError as e:
            self.why = f"no hugepages ({e}): DPDK ran with --no-huge"

    def eal(self):
        """EAL options of the next run: a fresh --file-prefix, its memory, -l 0, quiet."""
        self.seq += 1
        self.last = f"{self.tag}{os.getpid()}_{self.seq}"
        mem = (self.huge.eal(self.last) + self.extra if self.huge else
               ["--no-huge", "-m", str(self.no_huge_mb), "--file-prefix", self.last])
        return ["--no-pci", "--log-level=error", "-l", "0"] + mem

    def probe(self):
        """While a run goes on: True once it holds hugepage files (always True without)."""
        if self.huge is None:
            return True
        if self.huge.dpdk_on_huge(self.last):
            self.seen = True
        return self.seen

    def after(self):
        """After a run: note whether it held page files; remove them and its runtime dir."""
        if self.huge:
            if not self.seen:
                self.on_huge = False
            for f in self.huge.files(self.last):
                os.unlink(f)
            self.seen = False
        shutil.rmtree(f"/var/run/dpdk/{self.last}", ignore_errors=True)

    def describe(self):
        return "on 2 MiB hugepages (checked while each run held page files)" if self.huge \
            else self.why

    def release(self):
        if self.huge:
            self.huge.release()
