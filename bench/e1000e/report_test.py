#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/e1000e/report.py on a made-up guest console: the callgrind files' inclusive costs
(with callgrind's name compression, a function first named as a call's target), the empty
polls taken out at the idle run's cost, (Ir(2N) - Ir(N)) / N, and the checks that flag a
run whose bursts were not all full or whose Rx + Tx is not callgrind's total."""
import base64
import gzip
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def cg(rx_self, rx_callee, tx_self, compressed):
    """A callgrind file whose Rx function costs rx_self + rx_callee (a call) and Tx tx_self."""
    total = rx_self + rx_callee + tx_self
    head = ["version: 1", "creator: callgrind-3.19.0", "events: Ir", ""]
    if compressed:  # both names appear first as call targets, then fn= uses the bare ids
        body = ["fn=(9) fwd_lcore_main", "cfn=(1) e1000e_rx_burst", "calls=3 10", "5 0",
                "cfn=(2) e1000e_tx_burst", "calls=1 20", "6 0",
                "fn=(1)", f"10 {rx_self - 1}", "+1 1", "cfn=(3) pool_get", "calls=2 30",
                f"* {rx_callee}", "fn=(3)", f"30 {rx_callee}", "fn=(2)", f"20 {tx_self}"]
    else:
        body = ["fn=(1) e1000e_rx_burst", f"10 {rx_self}", "cfn=(3) pool_get", "calls=2 30",
                f"11 {rx_callee}", "fn=(3)", f"30 {rx_callee}", "fn=(2) e1000e_tx_burst",
                f"20 {tx_self}"]
    return "\n".join(head + body + ["", f"totals: {total}", ""])


def emit(name, text):
    b = base64.b64encode(gzip.compress(text.encode())).decode()
    return [f"E1K-FILE {name}"] + [b[i:i + 76] for i in range(0, len(b), 76)] + ["E1K-END"]


def tide_json(polls, empty):
    return json.dumps({"ports": [{"xstats": {"rx_polls": polls, "rx_idle_polls": empty,
                                             "tx_released": 0, "tx_recycled": 0}}]})


def console(n, full=True, total_ok=True):
    e = 52  # one empty poll
    L = ["E1K bind vfio-pci 0000:00:01.0", "E1K tide-idle count=0 rc=0 sent:  back: idle"]
    L += emit("tide-idle.cg", cg(e * 1000, 0, 0, False))
    L += emit("tide-idle.json", tide_json(1000, 1000))
    # per packet: Rx 40 + 10 in the pool, Tx 60; plus a start-up of 500 in each function
    for tag, k, empty, comp in (("n1", n, 777, False), ("n2", 2 * n, 345, True)):
        bursts = k // 32 - (0 if full or tag == "n1" else 1)
        L.append(f"E1K tide-v-{tag} count={k} rc=0 sent: OK back: STAT 1 rx={k} bad=0 "
                 "order=0 bytes=0")
        text = cg(500 + 40 * k + e * empty, 10 * k, 500 + 60 * k, comp)
        if not total_ok and tag == "n2":
            text = text.replace("totals: ", "totals: 1")
        L += emit(f"tide-v-{tag}.cg", text)
        L += emit(f"tide-v-{tag}.json", tide_json(bursts + empty, empty))
    return "\n".join(L) + "\n"


def run(text, n):
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(text)
    try:
        return subprocess.run([sys.executable, os.path.join(HERE, "report.py"), f.name, str(n),
                               "date", "machine"], capture_output=True, text=True)
    finally:
        os.unlink(f.name)


def main():
    n = 320
    r = run(console(n), n)
    row = [ln for ln in r.stdout.splitlines() if ln.startswith("tide-v ")]
    assert r.returncode == 0, r.stdout + r.stderr
    assert row and row[0].split()[1:4] == ["50.0", "60.0", "110.0"], r.stdout
    r = run(console(n, full=False), n)
    assert r.returncode == 1 and "not all bursts full" in r.stdout, r.stdout
    r = run(console(n, total_ok=False), n)
    assert r.returncode == 1 and "!= total" in r.stdout, r.stdout
    print("report_test: ok")


if __name__ == "__main__":
    main()
