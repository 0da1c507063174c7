#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/hugepages.py - 2 MiB hugepages for the peer benchmarks, as DPDK is deployed.

DPDK without hugepages (--no-huge) places one mbuf per 4 KiB page at the same page offset,
so every mbuf header lands in one L1 set: that is not how DPDK runs anywhere it matters, and
a ratio against it says nothing. Every script that runs DPDK uses this module:

    h = hugepages.reserve(pages)     # raise nr_hugepages by the shortfall, mount hugetlbfs
    eal = h.eal(prefix)              # ["--huge-dir", DIR, "--file-prefix", PREFIX]
    ... run DPDK; h.dpdk_on_huge(prefix) says whether its page files exist right now ...
    h.release()                      # remove our prefixes' files, give back what we added

or from a shell script (prints shell assignments; `release` undoes what `reserve` did):

    eval "$(bench/hugepages.py reserve --pages N --state FILE)"   # sets HUGE_DIR
    bench/hugepages.py release --state FILE --prefix P [--prefix Q ...]

tide needs no mount (its pools use MAP_HUGETLB / MFD_HUGETLB memfds), only free pages.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

MOUNT = "/dev/hugepages"
NR = "/proc/sys/vm/nr_hugepages"


class HugeError(Exception):
    pass


def meminfo():
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":", 1)
            if k.startswith("HugePages_"):
                out[k[len("HugePages_"):]] = int(v.split()[0])
    return out


def hugetlbfs_mounted(path):
    with open("/proc/mounts") as f:
        return any(l.split()[1] == path and l.split()[2] == "hugetlbfs" for l in f)


class Huge:
    def __init__(self, dir_, added, mounted):
        self.dir = dir_
        self.added = added      # pages this run added to nr_hugepages
        self.mounted = mounted  # this run mounted the hugetlbfs
        self.prefixes = []

    def eal(self, prefix):
        """EAL options that put DPDK on this mount with its own file prefix."""
        self.prefixes.append(prefix)
        return ["--huge-dir", self.dir, "--file-prefix", prefix]

    def files(self, prefix):
        return glob.glob(os.path.join(glob.escape(self.dir), glob.escape(prefix) + "map_*"))

    def dpdk_on_huge(self, prefix):
        """True when a running DPDK process with @prefix holds hugepage files."""
        return bool(self.files(prefix))

    def release(self, prefixes=()):
        for p in list(self.prefixes) + list(prefixes):
            for f in self.files(p):
                try:
                    os.unlink(f)
                except OSError:
                    pass
        if self.added:
            # Give back what we added, but only pages that are free now (others may use some).
            mi = meminfo()
            give = min(self.added, mi.get("Free", 0))
            try:
                with open(NR, "w") as f:
                    f.write(str(mi["Total"] - give))
            except OSError:
                pass
            self.added = 0
        if self.mounted:
            if not os.listdir(self.dir):
                subprocess.run(["umount", self.dir], capture_output=True)
            self.mounted = False


def reserve(pages):
    """Make sure @pages free 2 MiB pages exist and hugetlbfs is mounted; raise HugeError."""
    if not os.path.exists(NR):
        raise HugeError("no hugepage support in this kernel (%s missing)" % NR)
    mi = meminfo()
    added = 0
    if mi.get("Free", 0) < pages:
        want = mi["Total"] + pages - mi["Free"]
        try:
            with open(NR, "w") as f:
                f.write(str(want))
        except OSError as e:
            raise HugeError("cannot raise %s to %d: %s (needs root)" % (NR, want, e.strerror))
        now = meminfo()
        added = now["Total"] - mi["Total"]
        if now["Free"] < pages:
            h = Huge(MOUNT, added, False)
            h.release()
            raise HugeError("asked for %d free 2 MiB pages, the kernel gave %d" %
                            (pages, now["Free"]))
    mounted = False
    if not hugetlbfs_mounted(MOUNT):
        os.makedirs(MOUNT, exist_ok=True)
        r = subprocess.run(["mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "nodev", MOUNT],
                           capture_output=True, text=True)
        if r.returncode != 0:
            Huge(MOUNT, added, False).release()
            raise HugeError("cannot mount hugetlbfs at %s: %s" % (MOUNT, r.stderr.strip()))
        mounted = True
    return Huge(MOUNT, added, mounted)


def free_pages():
    return meminfo().get("Free", 0)


def main():
    ap = argparse.ArgumentParser(prog="bench/hugepages.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reserve", help="reserve pages and mount; prints HUGE_DIR=...")
    r.add_argument("--pages", type=int, required=True)
    r.add_argument("--state", required=True, help="file that remembers what to undo")
    x = sub.add_parser("release", help="remove the prefixes' files, give back pages")
    x.add_argument("--state", required=True)
    x.add_argument("--prefix", action="append", default=[])
    c = sub.add_parser("check", help="exit 0 when PREFIX's page files exist now")
    c.add_argument("--dir", default=MOUNT)
    c.add_argument("--prefix", required=True)
    o = ap.parse_args()
    if o.cmd == "reserve":
        try:
            h = reserve(o.pages)
        except HugeError as e:
            print("bench/hugepages.py: %s" % e, file=sys.stderr)
            return 1
        with open(o.state, "w") as f:
            json.dump({"dir": h.dir, "added": h.added, "mounted": h.mounted}, f)
        print("HUGE_DIR=%s" % h.dir)
        return 0
    if o.cmd == "release":
        try:
            with open(o.state) as f:
                s = json.load(f)
        except (OSError, ValueError):
            return 0
        Huge(s["dir"], s["added"], s["mounted"]).release(o.prefix)
        os.unlink(o.state)
        return 0
    return 0 if Huge(o.dir, 0, False).dpdk_on_huge(o.prefix) else 1


if __name__ == "__main__":
    sys.exit(main())
