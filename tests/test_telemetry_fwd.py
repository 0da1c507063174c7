#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""tide-fwd --telemetry and --prom against a real run.

A client of the project's own (scripts/tide-telemetry) reads a forwarding tide-fwd; a client
that sends garbage and one that never reads its answers are connected meanwhile, and the
forwarding must go on (the counters keep rising, other clients are answered, the run ends on
time with exit 0). The Prometheus textfile parses, is rewritten during the run, and ends with
the counters of the summary.

usage: test_telemetry_fwd.py TIDE_FWD SOURCE_ROOT
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

fwd, root = sys.argv[1], sys.argv[2]
client = os.path.join(root, "scripts", "tide-telemetry")
fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)


def ok(msg):
    print("ok: " + msg)


def query(sock, cmd):
    r = subprocess.run([sys.executable, client, "-s", sock, "--raw", cmd], capture_output=True,
                       text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"{cmd}: rc {r.returncode}: {r.stdout} {r.stderr}")
    return json.loads(r.stdout)


PROM_LINE = re.compile(r'^(tide_[a-z_]+)\{port="([^"\\]*)",driver="([a-z0-9]+)"\} (\d+)$')


def read_prom(path):
    vals = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# HELP ") or line.startswith("# TYPE "):
                continue
            m = PROM_LINE.match(line)
            if not m:
                raise ValueError(f"not a metric line: {line!r}")
            vals[(m.group(1), m.group(2))] = int(m.group(4))
    return vals


with tempfile.TemporaryDirectory(prefix="tide-tm-") as tmp:
    sock = os.path.join(tmp, "t.sock")
    prom = os.path.join(tmp, "tide.prom")
    js = os.path.join(tmp, "run.json")
    p = subprocess.Popen([fwd, "--port", "simnic:ports=2,mode=inline,wire=gen", "--fwd", "io",
                          "--duration", "4", "--quiet", "--stats-period", "0.2",
                          "--telemetry", sock, "--prom", prom, "--json", js],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(500):
            if os.path.exists(sock):
                break
            time.sleep(0.01)
        first = query(sock, "/ports/stats,0")["/ports/stats"]["ipackets"]
        ok(f"client: port 0 received {first} so far")

        # Garbage: binary bytes, an oversized message; each answered with an error.
        g = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        g.settimeout(10)
        g.connect(sock)
        g.recv(65536)
        g.send(b"\x00\xff\x17garbage")
        a1 = json.loads(g.recv(65536))
        g.send(b"x" * 5000)
        a2 = json.loads(g.recv(65536))
        if "error" in a1 and "longer than 1024" in a2.get("error", ""):
            ok(f"garbage answered: {a1['error']!r}, {a2['error']!r}")
        else:
            fail(f"garbage answers: {a1} {a2}")

        # A client that never reads: thousands of commands into a small buffer.
        slow = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(sock)
        slow.setblocking(False)
        sent = 0
        for _ in range(3000):
            try:
                slow.send(b"/ports/stats,0")
                sent += 1
            except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                break
        t0 = time.time()
        a = query(sock, "/ports/stats,0")["/ports/stats"]["ipackets"]
        time.sleep(0.3)
        b = query(sock, "/ports/stats,0")["/ports/stats"]["ipackets"]
        if first < a < b:
            ok(f"with a client that never reads ({sent} commands sent): counters rise "
               f"{a} -> {b}, answers in {time.time() - t0 - 0.3:.2f} s")
        else:
            fail(f"counters with a client that never reads: {first} {a} {b}")

        v1 = read_prom(prom)
        time.sleep(0.5)
        v2 = read_prom(prom)
        key = ("tide_port_rx_packets_total", "simnic1.0")
        if v2[key] > v1[key] > 0 and v2[("tide_port_link_up", "simnic1.0")] == 1:
            ok(f"--prom rewritten: rx packets {v1[key]} -> {v2[key]}")
        else:
            fail(f"--prom values: {v1.get(key)} {v2.get(key)}")
        out, err = p.communicate(timeout=30)
    except Exception as e:  # noqa: BLE001  (any failure must stop tide-fwd and be reported)
        p.kill()
        out, err = p.communicate()
        fail(f"{type(e).__name__}: {e}; tide-fwd stderr: {err}")
    if p.returncode != 0:
        fail(f"tide-fwd exit status {p.returncode}: {err}")
    if os.path.exists(sock):
        fail("the telemetry socket file is left after the run")
    if not fails:
        d = json.load(open(js))
        final = read_prom(prom)
        want = {port["name"]: port for port in d["ports"]}
        for name, port in want.items():
            got = final[("tide_port_rx_packets_total", name)]
            if got != port["rx_packets"]:
                fail(f"--prom final rx packets of {name}: {got}, summary {port['rx_packets']}")
        if not fails:
            ok("the last --prom file holds the summary's counters")

if fails:
    sys.exit(1)
