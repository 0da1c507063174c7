#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The documentation agrees with the code.

1. Driver keys: for every driver in drivers/, three lists must name the same keys: the keys
   its sources read (every `kv, "KEY"` argument), its own key list (`.keys` of its struct
   tide_driver, printed with an unknown-key error), and the `## Keys` table of
   docs/drivers/NAME.md (first column, backquoted names). Benchmark-only keys (the
   `TIDE_BENCH_KEYS("...")` tail of `.keys`, in builds with -Dbench_variants=true) are
   documented in the page's `## Benchmark keys` table instead, and only there.
2. Links: every relative link of README.md, CHANGELOG.md and docs/**/*.md points to a file
   or folder that exists, and a `#anchor` into a Markdown file names one of its headings.

usage: test_docs.py SOURCE_ROOT
"""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))
fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)


def driver_structs():
    """{name: (file, [keys of .keys], [benchmark keys])} from every
    `struct tide_driver tide_driver_X = {`."""
    out = {}
    for path in sorted(glob.glob(os.path.join(root, "drivers", "*", "*.c"))):
        text = open(path).read()
        for m in re.finditer(r"struct tide_driver tide_driver_\w+\s*=\s*\{(.*?)\n\};", text,
                             re.S):
            body = m.group(1)
            name = re.search(r'\.name\s*=\s*"([^"]+)"', body)
            keys = re.search(r'\.keys\s*=\s*((?:"[^"]*"\s*)+)', body)
            if not name or not keys:
                fail("%s: a struct tide_driver without .name or .keys" % path)
                continue
            joined = "".join(re.findall(r'"([^"]*)"', keys.group(1)))
            bench = re.search(r'\.keys\s*=\s*(?:"[^"]*"\s*)+TIDE_BENCH_KEYS\(((?:"[^"]*"\s*)+)\)',
                              body)
            bjoined = "".join(re.findall(r'"([^"]*)"', bench.group(1))) if bench else ""
            out[name.group(1)] = (path, [k.strip() for k in joined.split(",") if k.strip()],
                                  [k.strip() for k in bjoined.split(",") if k.strip()])
    return out


def keys_read(folder):
    keys = set()
    for path in glob.glob(os.path.join(folder, "*.c")):
        keys |= set(re.findall(r'\bkv,\s*"([a-z_]+)"', open(path).read()))
    return keys


def keys_documented(page, section="Keys"):
    text = open(page).read()
    m = re.search(r"^## %s\n(.*?)(?=^## |\Z)" % section, text, re.S | re.M)
    if not m:
        return None
    keys = set()
    for line in m.group(1).splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        first = line.strip("|").split("|")[0]
        if first.strip() == "key":
            continue
        keys |= set(re.findall(r"`([a-z_]+)`", first))
    return keys


# Drivers that read no keys of their own: they hand the spec to the driver they pick.
BUS_DRIVERS = {"pci": "a bus: the keys are those of the driver that claims the device"}


def check_keys():
    drivers = driver_structs()
    if len(drivers) < 7:
        fail("found only %d drivers in drivers/: %s" % (len(drivers), sorted(drivers)))
    for name, (path, plain, bench) in sorted(drivers.items()):
        listed = plain + bench
        if name in BUS_DRIVERS:
            print("ok: %s: %s" % (name, BUS_DRIVERS[name]))
            continue
        read = keys_read(os.path.dirname(path))
        page = os.path.join(root, "docs", "drivers", name + ".md")
        if len(set(listed)) != len(listed):
            fail("%s: .keys names a key twice: %s" % (name, listed))
        if read != set(listed):
            fail("%s: keys read but not in .keys: %s; in .keys but never read: %s" %
                 (name, sorted(read - set(listed)) or "-", sorted(set(listed) - read) or "-"))
        if not os.path.exists(page):
            fail("%s: no page docs/drivers/%s.md" % (name, name))
            continue
        doc = keys_documented(page)
        if doc is None:
            fail("docs/drivers/%s.md: no '## Keys' section" % name)
            continue
        bdoc = keys_documented(page, "Benchmark keys") or set()
        if doc != set(plain):
            fail("docs/drivers/%s.md: keys not documented: %s; documented but not keys: %s" %
                 (name, sorted(set(plain) - doc) or "-", sorted(doc - set(plain)) or "-"))
        elif bdoc != set(bench):
            fail("docs/drivers/%s.md: '## Benchmark keys' names %s, TIDE_BENCH_KEYS() %s" %
                 (name, sorted(bdoc) or "-", sorted(bench) or "-"))
        else:
            print("ok: %s: %d keys (%d benchmark), read, listed and documented alike" %
                  (name, len(listed), len(bench)))


def anchors(path):
    """GitHub-style anchors of a Markdown file's headings."""
    out = set()
    for line in open(path):
        m = re.match(r"#+\s+(.*)", line)
        if m:
            a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(a)
    return out


def check_links():
    pages = [os.path.join(root, p) for p in ("README.md", "CHANGELOG.md")]
    pages += glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True)
    n = 0
    for page in sorted(pages):
        text = re.sub(r"```.*?```", "", open(page).read(), flags=re.S)
        for m in re.finditer(r"\]\(([^)\s]+)\)", text):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue
            n += 1
            rel = os.path.relpath(page, root)
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path \
                else page
            if not os.path.exists(dest):
                fail("%s: link to %s: no such file" % (rel, target))
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                fail("%s: link to %s: no such heading" % (rel, target))
    print("ok: %d relative links checked" % n)


check_keys()
check_links()
if fails:
    print("%d problems" % len(fails))
    sys.exit(1)
