#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The table of bench/e1000e/run from the guest's console: the callgrind files (gzip + base64
between "E1K-FILE NAME" and "E1K-END"), tide-fwd's JSON summaries and the DPDK shim's counts.

Per forwarder and variant: inclusive Ir of the Rx and the Tx burst function in the runs with
N and 2N frames; the polls that found nothing (tide: the port's rx_idle_polls; DPDK:
em_count's rx_empty) cost what the idle run's polls cost each, and are taken out of Rx;
instructions per packet = (Ir(2N) - Ir(N)) / N. A run whose non-empty Rx polls are not
exactly N/32 (not every burst full) is flagged.

usage: report.py CONSOLE N DATE MACHINE [--raw FILE]
"""
import base64
import gzip
import json
import re
import sys


def files(console):
    out, name, buf = {}, None, []
    for line in console.splitlines():
        if line.startswith("E1K-FILE "):
            name, buf = line.split(" ", 1)[1].strip(), []
        elif line.startswith("E1K-END") and name:
            try:
                out[name] = gzip.decompress(base64.b64decode("".join(buf))).decode()
            except (ValueError, OSError) as e:
                out[name] = None
                print(f"report: {name}: cannot decode ({e})")
            name = None
        elif name:
            buf.append(line.strip())
    return out


def inclusive(cg, fns):
    """{fn: inclusive Ir}: the self cost lines and the call cost lines inside each fn block."""
    names, cur, tot = {}, None, {f: 0 for f in fns}
    for line in cg.splitlines():
        if line.startswith("cfn="):  # a call's target: it may name an id used by fn= later
            m = re.match(r"cfn=\((\d+)\) (.*)", line)
            if m:
                names[m.group(1)] = m.group(2)
            continue
        if line.startswith("fn="):
            m = re.match(r"fn=\((\d+)\)(?: (.*))?", line)
            if m:
                if m.group(2):
                    names[m.group(1)] = m.group(2)
                cur = names.get(m.group(1))
            else:
                cur = line[3:]
            continue
        if cur in tot and line[:1] and (line[0].isdigit() or line[0] in "+-*"):
            parts = line.split()
            if len(parts) >= 2:
                tot[cur] += int(parts[1])
    return tot


def main():
    con = open(sys.argv[1], errors="replace").read()
    n, date, machine = int(sys.argv[2]), sys.argv[3], sys.argv[4]
    raw = sys.argv[sys.argv.index("--raw") + 1] if "--raw" in sys.argv else None
    fl = files(con)
    runs = {}  # name -> dict
    for line in con.splitlines():
        m = re.match(r"E1K (\S+) count=(\d+) rc=(\d+) sent: (.*) back: (.*)", line)
        if m:
            runs[m.group(1)] = {"count": int(m.group(2)), "rc": int(m.group(3)),
                                "sent": m.group(4), "back": m.group(5)}
        m = re.match(r"E1K-LOG (\S+): .*em_count: (.*)", line)
        if m and m.group(1) in runs:
            runs[m.group(1)]["em"] = dict(kv.split("=", 1) for kv in m.group(2).split())
    problems = []
    for name, r in runs.items():
        tide = name.startswith("tide-")
        fns = ("e1000e_rx_burst", "e1000e_tx_burst") if tide else ("bench_em_rx", "bench_em_tx")
        cg = fl.get(name + ".cg")
        if not cg:
            problems.append(f"{name}: no callgrind file (rc={r['rc']})")
            continue
        inc = inclusive(cg, fns)
        r["rx_ir"], r["tx_ir"] = inc[fns[0]], inc[fns[1]]
        m = re.search(r"^totals: (\d+)", cg, re.M)
        r["total_ir"] = int(m.group(1)) if m else None
        # Collection is on only inside the two functions: together they are the whole.
        if r["total_ir"] != r["rx_ir"] + r["tx_ir"]:
            problems.append(f"{name}: Rx {r['rx_ir']} + Tx {r['tx_ir']} != total {r['total_ir']}")
        if tide:
            js = fl.get(name + ".json")
            if not js:
                problems.append(f"{name}: no JSON summary")
                continue
            p = json.loads(js)["ports"][0]["xstats"]
            r["polls"], r["empty"] = p["rx_polls"], p["rx_idle_polls"]
            r["released"], r["recycled"] = p["tx_released"], p["tx_recycled"]
        elif "em" in r:
            r["polls"], r["empty"] = int(r["em"]["rx_calls"]), int(r["em"]["rx_empty"])
        else:
            problems.append(f"{name}: no em_count line")
            continue
        if r["count"]:
            want = f"rx={r['count']} bad=0 order=0"
            if want not in r["back"]:
                problems.append(f"{name}: the wire got back '{r['back']}', wanted {want}")
            if r["polls"] - r["empty"] != r["count"] // 32:
                problems.append(f"{name}: {r['polls'] - r['empty']} non-empty Rx polls for "
                                f"{r['count']} frames (not all bursts full)")
    # the cost of one empty poll, per forwarder
    empty = {}
    for idle in [k for k in runs if k.endswith("-idle")]:
        side, r = idle[:-5], runs[idle]
        if r.get("polls"):
            empty[side] = r["rx_ir"] / r["polls"]
            if r["empty"] != r["polls"]:
                problems.append(f"{side}-idle: {r['polls'] - r['empty']} polls found frames")
    rows = []
    for name in runs:
        if not name.endswith("-n1"):
            continue
        base = name[:-3]
        a, b = runs.get(name), runs.get(base + "-n2")
        side = "tide" if base.startswith("tide-") else base
        if not b or "rx_ir" not in a or "rx_ir" not in b or side not in empty:
            problems.append(f"{base}: incomplete")
            continue
        e = empty[side]
        rx = ((b["rx_ir"] - e * b["empty"]) - (a["rx_ir"] - e * a["empty"])) / n
        tx = (b["tx_ir"] - a["tx_ir"]) / n
        rows.append((base, rx, tx, rx + tx, a["empty"], b["empty"]))
    L = [f"e1000e (QEMU 82574L model) in a TCG guest, io forwarding on one port, 64 B frames, "
         f"burst 32, Rx ring 4096 (preloaded), Tx ring 256; {date}; {machine}",
         f"instructions per packet = (Ir(2N) - Ir(N)) / N, N = {n}; empty Rx polls taken out at "
         + ", ".join(f"{s} {v:.2f}" for s, v in empty.items()) + " Ir each (idle run)",
         "",
         f"{'variant':24} {'rx/pkt':>8} {'tx/pkt':>8} {'total':>8}   empty polls N / 2N"]
    for base, rx, tx, tot, ea, eb in rows:
        L.append(f"{base:24} {rx:8.1f} {tx:8.1f} {tot:8.1f}   {ea} / {eb}")
    L.append("")
    L.append("runs: name count rc rx_Ir tx_Ir totals polls empty tx_released tx_recycled | wire")
    for name, r in runs.items():
        L.append(f"  {name} {r['count']} {r['rc']} {r.get('rx_ir')} {r.get('tx_ir')} "
                 f"{r.get('total_ir')} {r.get('polls')} {r.get('empty')} "
                 f"{r.get('released', '-')} {r.get('recycled', '-')} | {r['back']}")
    for line in con.splitlines():
        if line.startswith("E1K-LOG") and ("em_count" in line or "mem:" in line or "hugepages in use" in line):
            L.append("  " + line)
    if problems:
        L.append("")
        L += ["PROBLEM: " + p for p in problems]
    text = "\n".join(L)
    print(text)
    if raw:
        with open(raw, "w") as f:
            f.write(text + "\n")
    return 1 if problems or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
