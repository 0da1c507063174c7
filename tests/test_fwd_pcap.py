#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""tide-fwd through the pcap driver: captures replayed through l3fwd into per-port output
captures, compared packet by packet with what the routing rules predict (TTL, checksum
recomputed from scratch, MACs, egress port, drops), and an io round trip that must be
byte-exact.

usage: test_fwd_pcap.py PATH_TO_TIDE_FWD
"""
import json
import os
import struct
import subprocess
import sys
import tempfile


def write_pcap(path, pkts):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, p in enumerate(pkts):
            f.write(struct.pack("<IIII", 1000 + i, 0, len(p), len(p)))
            f.write(p)


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    assert magic in (0xA1B2C3D4, 0xA1B23C4D), hex(magic)
    off, out = 24, []
    while off < len(data):
        _, _, incl, _ = struct.unpack("<IIII", data[off:off + 16])
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out


def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ipv4(src, dst, ttl=64, payload=b"x" * 26, bad_csum=False, ihl=5):
    opts = b"\x01" * ((ihl - 5) * 4)
    tot = 20 + len(opts) + len(payload)
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, tot, 7, 0, ttl, 17, 0, bytes(src),
                    bytes(dst)) + opts
    c = csum(h) ^ (0x5A5A if bad_csum else 0)
    return h[:10] + struct.pack("!H", c) + h[12:] + payload


def eth(dst, src, ethertype, payload):
    return bytes(dst) + bytes(src) + struct.pack("!H", ethertype) + payload


def inputs(port):
    """Packets arriving on @port (0 or 1), and a tag saying what l3fwd must do with each."""
    me = [2, 0, 0, 0, 0, port]
    peer = [2, 0, 0, 0, 9, port]
    other = port ^ 1
    pkts = []
    for i in range(40):
        pkts.append((eth(me, peer, 0x0800, ipv4([192, 0, 2, i], [10, other, i, 1],
                                                payload=bytes(range(i % 7, i % 7 + 26 + i)))),
                     "fwd"))
    pkts.append((eth(me, peer, 0x0800, ipv4([192, 0, 2, 1], [10, other, 0, 1], ihl=6)), "fwd"))
    pkts.append((eth(me, peer, 0x0800, ipv4([192, 0, 2, 1], [10, port, 0, 1])), "same_port"))
    pkts.append((eth(me, peer, 0x0800, ipv4([192, 0, 2, 1], [172, 16, 0, 1])), "no_route"))
    pkts.append((eth(me, peer, 0x0800, ipv4([192, 0, 2, 1], [10, other, 0, 1], ttl=1)),
                 "ttl_expired"))
    pkts.append((eth(me, peer, 0x0800, ipv4([192, 0, 2, 1], [10, other, 0, 1], bad_csum=True)),
                 "bad_checksum"))
    pkts.append((eth(me, peer, 0x0806, b"\x00" * 46), "not_ipv4"))
    pkts.append((eth(me, peer, 0x0800, b"\x45\x00"), "bad_header"))
    return pkts


def routed(pkt, out_port, out_mac):
    ip = bytearray(pkt[14:])
    ihl = (ip[0] & 0xF) * 4
    ip[8] -= 1
    ip[10:12] = b"\x00\x00"
    ip[10:12] = struct.pack("!H", csum(bytes(ip[:ihl])))
    return bytes([2, 0, 0, 0, 1, out_port]) + out_mac + pkt[12:14] + bytes(ip)


def run(fwd, tmp, engine, n_in):
    js = os.path.join(tmp, engine + ".json")
    cmd = [fwd, "--fwd", engine, "--quiet", "--packets", str(n_in), "--duration", "20",
           "--json", js]
    for p in (0, 1):
        cmd += ["--port", "pcap:rx=%s/in%d.pcap,tx=%s/%s-out%d.pcap" % (tmp, p, tmp, engine, p)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("%s failed (%d): %s %s" % (cmd, r.returncode, r.stdout, r.stderr))
    with open(js) as f:
        return json.load(f)


def main():
    fwd = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        ins = [inputs(0), inputs(1)]
        for p in (0, 1):
            write_pcap(os.path.join(tmp, "in%d.pcap" % p), [x for x, _ in ins[p]])
        n_in = len(ins[0]) + len(ins[1])

        # io: each port's capture comes out of the other port unchanged, in order.
        run(fwd, tmp, "io", n_in)
        for p in (0, 1):
            got = read_pcap(os.path.join(tmp, "io-out%d.pcap" % p))
            want = [x for x, _ in ins[p ^ 1]]
            if got != want:
                print("io: port %d output differs (%d vs %d packets)" % (p, len(got), len(want)))
                failures += 1

        # l3fwd: routed packets, rewritten; everything else dropped and counted by reason.
        d = run(fwd, tmp, "l3fwd", n_in)
        macs = [bytes(int(x, 16) for x in d["ports"][p]["mac"].split(":")) for p in (0, 1)]
        for p in (0, 1):
            got = read_pcap(os.path.join(tmp, "l3fwd-out%d.pcap" % p))
            want = [routed(x, p, macs[p]) for x, tag in ins[p ^ 1] if tag == "fwd"]
            if got != want:
                print("l3fwd: port %d output differs (%d vs %d packets)" % (p, len(got), len(want)))
                for i, (g, w) in enumerate(zip(got, want)):
                    if g != w:
                        print("  first difference at packet %d:\n  got  %s\n  want %s" %
                              (i, g.hex(), w.hex()))
                        break
                failures += 1
            drops = d["ports"][p]["drops"]
            for tag in ("same_port", "no_route", "ttl_expired", "bad_checksum", "not_ipv4",
                        "bad_header"):
                want_n = sum(1 for _, t in ins[p] if t == tag)
                if drops[tag] != want_n:
                    print("l3fwd: port %d %s = %d, want %d" % (p, tag, drops[tag], want_n))
                    failures += 1
        if d["buffers_outstanding"] != 0:
            print("buffers outstanding:", d["buffers_outstanding"])
            failures += 1
    print("pcap round trips:", "ok" if failures == 0 else "%d failures" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
