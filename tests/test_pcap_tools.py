#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The pcap driver through tide-fwd, its outputs read back by tools tide did not write
(tcpdump -r, tshark -r from Debian): counts, lengths, original lengths, timestamps and link
type as written; the input never truncated by its own output; a replay that ends the run;
frames longer than the data room counted and let through with --mbuf-size; one-sided ports;
write errors (a pipe whose reader left; a full tmpfs) counted as Tx errors, never as sent,
with a valid file of whole records and exit status 1; progress lines within 100 columns;
--rate never exceeded.

usage: test_pcap_tools.py PATH_TO_TIDE_FWD [full_disk]
  full_disk: only the full tmpfs (root: exit 77, a skip, without it)
"""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

FWD = None
FAILS = []


def fail(msg):
    print("FAIL:", msg)
    FAILS.append(msg)


def ok(msg):
    print("ok:", msg)


def write_pcap(path, recs, link=1, nano=False):
    """recs: (sec, frac, data, orig_len); frac in us (or ns with nano)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D if nano else 0xA1B2C3D4, 2, 4, 0, 0,
                            65535, link))
        for sec, frac, data, orig in recs:
            f.write(struct.pack("<IIII", sec, frac, len(data), orig))
            f.write(data)


def eth_ipv4(i, size=64, dst=(10, 1, 0, 1)):
    """An Ethernet/IPv4/UDP frame of @size bytes with a correct header checksum."""
    payload = bytes((i + k) & 0xFF for k in range(size - 42))
    udp = struct.pack("!HHHH", 1024, 1024, 8 + len(payload), 0) + payload
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xFFFF, 0, 64, 17, 0,
                      bytes([192, 0, 2, 1]), bytes(dst))
    s = sum(struct.unpack("!10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    hdr = hdr[:10] + struct.pack("!H", ~s & 0xFFFF) + hdr[12:]
    return bytes([2, 0, 0, 0, 0, 0, 2, 0, 0, 0, 9, 0, 8, 0]) + hdr + udp


def run(args, timeout=60, **kw):
    """tide-fwd with @args; a run that does not end by itself is a failure, not a hang."""
    try:
        return subprocess.run([FWD] + args, capture_output=True, text=True, timeout=timeout,
                              **kw)
    except subprocess.TimeoutExpired:
        fail("did not end within %d s: %s" % (timeout, " ".join(args)))
        return None


def tshark(path, *fields):
    r = subprocess.run(["tshark", "-r", path, "-T", "fields"] +
                       [x for f in fields for x in ("-e", f)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("tshark -r %s: %s" % (path, r.stderr.strip()))
        return []
    return [line.split("\t") for line in r.stdout.splitlines()]


def tcpdump(path):
    """(link-type line, packet count, stderr) as tcpdump -r sees the file."""
    r = subprocess.run(["tcpdump", "-r", path, "-nn", "-q"], capture_output=True, text=True)
    if r.returncode != 0:
        fail("tcpdump -r %s: exit %d: %s" % (path, r.returncode, r.stderr.strip()))
    head = r.stderr.splitlines()[0] if r.stderr else ""
    return head, len(r.stdout.splitlines()), r.stderr


def load(path):
    with open(path) as f:
        return json.load(f)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_metadata(tmp):
    """Timestamps (ns), original lengths of snaplen-cut records and the link type survive."""
    recs = []
    for i in range(50):
        data = eth_ipv4(i, 60 + i)
        orig = len(data) + (1400 if i % 7 == 3 else 0)  # cut by the capture's snaplen
        recs.append((1700000000 + i // 3, (i * 123457) % 1000000000, data, orig))
    # A hostile record: a wire length below the bytes it holds; written with the bytes'.
    recs[10] = recs[10][:3] + (len(recs[10][2]) - 5,)
    src = os.path.join(tmp, "meta-in.pcap")
    out = os.path.join(tmp, "meta-out.pcap")
    write_pcap(src, recs, nano=True)
    r = run(["--port", "pcap:rx=%s,tx=%s" % (src, out), "--fwd", "io", "--quiet"])
    if r is None or r.returncode != 0:
        fail("metadata run: %s" % (r and r.stderr))
        return
    want = [("%d.%09d" % (s, f), str(max(o, len(d))), str(len(d))) for s, f, d, o in recs]
    got = [tuple(x) for x in tshark(out, "frame.time_epoch", "frame.len", "frame.cap_len")]
    if got != want:
        fail("tshark: timestamps/lengths differ; first: got %s want %s" %
             (next((g for g, w in zip(got, want) if g != w), got[:1]),
              next((w for g, w in zip(got, want) if g != w), want[:1])))
    else:
        ok("tshark reads back 50 timestamps (ns), original and captured lengths")
    head, n, _ = tcpdump(out)
    if n != 50 or "EN10MB" not in head:
        fail("tcpdump: %d packets, '%s'" % (n, head))

    # Linux cooked capture (SLL, link type 113) stays SLL.
    sll = [(1000 + i, 5 * i, bytes([0, 0, 0, 1, 0, 6]) + bytes(10) + eth_ipv4(i)[14:], 0)
           for i in range(8)]
    sll = [(s, f, d, len(d)) for s, f, d, _ in sll]
    src = os.path.join(tmp, "sll-in.pcap")
    out = os.path.join(tmp, "sll-out.pcap")
    write_pcap(src, sll, link=113)
    r = run(["--port", "pcap:rx=%s,tx=%s" % (src, out), "--fwd", "io", "--quiet"])
    head, n, _ = tcpdump(out)
    if r is None or r.returncode != 0 or n != 8 or "LINUX_SLL" not in head:
        fail("SLL: rc %s, %d packets, '%s'" % (r and r.returncode, n, head))
    else:
        ok("an SLL capture is written as SLL (%s)" % head.split(", ")[1])
    # A tx-only port takes the link type of the first replayed packet it writes.
    out2 = os.path.join(tmp, "sll-out2.pcap")
    r = run(["--port", "pcap:rx=%s" % src, "--port", "pcap:tx=%s" % out2, "--fwd", "io",
             "--quiet"])
    head, n, _ = tcpdump(out2)
    if r is None or r.returncode != 0 or n != 8 or "LINUX_SLL" not in head:
        fail("SLL to a tx-only port: rc %s, %d packets, '%s'" % (r and r.returncode, n, head))


def test_same_file(tmp):
    """tx= naming the rx= capture (directly, through a link, or another port's) is refused
    before anything is truncated."""
    src = os.path.join(tmp, "keep.pcap")
    write_pcap(src, [(1, 0, eth_ipv4(i), 64) for i in range(20)])
    before = sha(src)
    link = os.path.join(tmp, "keep-link.pcap")
    os.symlink(src, link)
    cases = [
        (["--port", "pcap:rx=%s,tx=%s" % (src, src)], "would destroy the input"),
        (["--port", "pcap:rx=%s,tx=%s" % (src, link)], "would destroy the input"),
        (["--port", "pcap:rx=%s" % src, "--port", "pcap:tx=%s" % link], "reads this file"),
        (["--port", "pcap:tx=%s" % os.path.join(tmp, "o.pcap"), "--port",
          "pcap:tx=%s" % os.path.join(tmp, "o.pcap")], "writes this file"),
    ]
    for args, want in cases:
        r = run(args + ["--fwd", "io", "--quiet", "--duration", "2"])
        if r is None:
            continue
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2 or len(lines) != 1 or want not in lines[0]:
            fail("same file %s: rc %d: %s" % (args, r.returncode, r.stderr.strip()))
        elif sha(src) != before:
            fail("same file %s: the input changed" % args)
        else:
            ok("refused: %s" % lines[0][lines[0].find("(") + 1:-1])


def test_replay_ends(tmp):
    """A finite replay ends the run by itself (the --help example too), every packet out."""
    src = os.path.join(tmp, "end-in.pcap")
    write_pcap(src, [(10 + i, 0, eth_ipv4(i), 64) for i in range(37)])
    for loops in (1, 3):
        out = os.path.join(tmp, "end-out%d.pcap" % loops)
        js = os.path.join(tmp, "end%d.json" % loops)
        r = run(["--port", "pcap:rx=%s,tx=%s,loop=%d" % (src, out, loops), "--fwd", "io",
                 "--quiet", "--json", js])
        if r is None:
            continue
        d = load(js) if r.returncode == 0 else {}
        _, n, _ = tcpdump(out)
        x = d["ports"][0]["xstats"] if d else {}
        if (r.returncode != 0 or d["stopped_by"] != "input end" or
                d["total"]["tx_packets"] != 37 * loops or n != 37 * loops):
            fail("loop=%d: rc %d, %s, %d in the file" % (loops, r.returncode,
                                                         d.get("stopped_by"), n))
        elif (x.get("pcap_rx_records") != 37 * loops or x.get("pcap_rx_passes") != loops or
              x.get("pcap_tx_unwritten") != 0):
            fail("loop=%d: xstats %s" % (loops, {k: v for k, v in x.items() if "pcap" in k}))
        else:
            ok("loop=%d: the run ended by itself ('input end'), %d packets written" %
               (loops, n))
    # A long replay (5000 passes) shows its progress and still ends by itself.
    out = os.path.join(tmp, "end-long.pcap")
    r = run(["--port", "pcap:rx=%s,tx=%s,loop=5000" % (src, out), "--fwd", "io",
             "--stats-period", "0.1"], timeout=300)
    if r is None:
        return
    live = r.stdout.split("==== tide-fwd summary")[0]
    wide = [line for line in live.splitlines() if len(line) > 100]
    if r.returncode != 0 or "stopped by input end" not in r.stdout:
        fail("loop=5000: rc %d: %s" % (r.returncode, r.stdout[-300:]))
    elif wide:
        fail("live lines wider than 100 columns: %s" % wide[0])
    elif any(line.startswith("[") and "% done" not in line for line in live.splitlines()):
        fail("a live block without progress (a finite replay bounds the run): %s" % live[:400])
    else:
        ok("loop=5000 ended by itself; live lines within 100 columns")


def test_big_frames(tmp):
    """A frame longer than the data room is counted (rx errors, a warning), never silent;
    --mbuf-size lets it through."""
    recs = [(1, i, eth_ipv4(i), 64) for i in range(10)]
    big = eth_ipv4(99, 9000)
    recs.insert(5, (1, 99, big, len(big)))
    src = os.path.join(tmp, "jumbo.pcap")
    write_pcap(src, recs)
    for extra, want_out, want_err in (([], 10, 1), (["--mbuf-size", "9216"], 11, 0)):
        out = os.path.join(tmp, "jumbo-out%d.pcap" % want_out)
        js = os.path.join(tmp, "jumbo%d.json" % want_out)
        r = run(["--port", "pcap:rx=%s,tx=%s" % (src, out), "--fwd", "io", "--quiet",
                 "--json", js] + extra)
        if r is None:
            continue
        d = load(js) if r.returncode == 0 else {"total": {}}
        lens = [int(x[0]) for x in tshark(out, "frame.len")]
        if (r.returncode != 0 or d["total"].get("rx_errors") != want_err or
                len(lens) != want_out or (9000 in lens) != (want_err == 0)):
            fail("9000-byte frame %s: rc %d, rx_errors %s, %d out" %
                 (extra, r.returncode, d["total"].get("rx_errors"), len(lens)))
        elif want_err and ("rx errors: 1" not in r.stdout or "9000 bytes" not in r.stderr):
            fail("9000-byte frame dropped without a word: %s %s" % (r.stdout, r.stderr))
        else:
            ok("9000-byte frame %s: %d out, rx_errors %d" % (extra or "default", want_out,
                                                             want_err))


def test_one_sided(tmp):
    """rx-only and tx-only pcap ports work: io between them, txonly into a tx-only one,
    rxonly on an rx-only one."""
    src = os.path.join(tmp, "side-in.pcap")
    write_pcap(src, [(1, i, eth_ipv4(i), 64) for i in range(33)])
    out = os.path.join(tmp, "side-out.pcap")
    r = run(["--port", "pcap:rx=%s" % src, "--port", "pcap:tx=%s" % out, "--fwd", "io",
             "--quiet"])
    _, n, _ = tcpdump(out)
    if r is None or r.returncode != 0 or n != 33:
        fail("rx-only -> tx-only: rc %s, %d written: %s" % (r and r.returncode, n,
                                                            r and r.stderr))
    else:
        ok("rx-only port -> tx-only port: 33 packets")
    out = os.path.join(tmp, "txonly.pcap")
    r = run(["--port", "pcap:tx=%s" % out, "--fwd", "txonly", "--packets", "1000",
             "--quiet", "--txonly-size", "100"])
    lens = tshark(out, "frame.len")
    if r is None or r.returncode != 0 or len(lens) != 1000 or any(x != ["100"] for x in lens):
        fail("txonly to a tx-only port: rc %s, %d written" % (r and r.returncode, len(lens)))
    else:
        ok("txonly into a tx-only port: exactly 1000 packets of 100 bytes")
    js = os.path.join(tmp, "rxonly.json")
    r = run(["--port", "pcap:rx=%s" % src, "--fwd", "rxonly", "--quiet", "--json", js])
    if r is None or r.returncode != 0 or load(js)["total"]["rx_packets"] != 33:
        fail("rxonly on an rx-only port: rc %s" % (r and r.returncode))
    # An rx-only port as the egress of io: counted as no_txq, not lost without a word.
    js = os.path.join(tmp, "notx.json")
    r = run(["--port", "pcap:rx=%s" % src, "--fwd", "io", "--quiet", "--json", js])
    if r is None or r.returncode != 0 or load(js)["total"]["drops"]["no_txq"] != 33:
        fail("io onto a port without Tx: rc %s %s" % (r and r.returncode, r and r.stderr))
    else:
        ok("io onto a port without tx=: 33 drops counted as no_txq")


def test_l3fwd_readme(tmp):
    """The README's l3fwd example over two pcap ports forwards, and ends by itself."""
    for p in (0, 1):
        write_pcap(os.path.join(tmp, "in%d.pcap" % p),
                   [(1, i, eth_ipv4(i, dst=(10, p ^ 1, 0, i)), 64) for i in range(20)])
    routes = os.path.join(tmp, "routes.txt")
    with open(routes, "w") as f:
        f.write("10.0.0.0/16 0\n10.1.0.0/16 1\n")
    r = run(["--port", "pcap:rx=in0.pcap,tx=out0.pcap", "--port",
             "pcap:rx=in1.pcap,tx=out1.pcap", "--fwd", "l3fwd", "--routes", "routes.txt",
             "--quiet"], cwd=tmp)
    counts = [tcpdump(os.path.join(tmp, "out%d.pcap" % p))[1] for p in (0, 1)]
    if r is None or r.returncode != 0 or counts != [20, 20]:
        fail("README l3fwd example: rc %s, written %s" % (r and r.returncode, counts))
    else:
        ok("README l3fwd example: 20 + 20 routed, the run ended by itself")


def read_records(path):
    """The captured bytes of every record (nanosecond or microsecond pcap)."""
    with open(path, "rb") as f:
        data = f.read()
    off, out = 24, []
    while off + 16 <= len(data):
        incl = struct.unpack("<I", data[off + 8:off + 12])[0]
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out


def check_partial(path, js, frames, sent_total, why):
    """After a write error: the file holds exactly the packets counted as sent, whole and
    byte for byte what was sent (@frames, in a cycle)."""
    d = load(js)
    t = d["ports"][1]
    head, n, err = tcpdump(path)
    size = os.path.getsize(path)
    recs = read_records(path)
    if t["tx_packets"] != n or t["tx_packets"] + t["tx_errors"] != sent_total:
        fail("%s: tx_packets %d, tx_errors %d, file holds %d (of %d)" %
             (why, t["tx_packets"], t["tx_errors"], n, sent_total))
    elif "truncated" in err or size != 24 + n * (16 + 64):
        fail("%s: file not whole records: %d bytes for %d packets; %s" % (why, size, n, err))
    elif any(r != frames[i % len(frames)] for i, r in enumerate(recs)):
        fail("%s: a record differs from the packet sent (a partial write kept?)" % why)
    else:
        ok("%s: %d written and counted as sent, %d counted as Tx errors; the file is whole"
           % (why, n, t["tx_errors"]))


def test_write_errors(tmp):
    """A Tx that cannot write reports it, counts Tx errors and not sent, exits 1."""
    gen = "simnic:ports=1,mode=inline,wire=gen,size=64"
    # A pipe whose reader stops after 20 KiB (EPIPE; SIGPIPE must not kill tide-fwd).
    js = os.path.join(tmp, "pipe.json")
    p = subprocess.Popen([FWD, "--port", gen, "--port", "pcap:tx=/dev/stdout", "--fwd", "io",
                          "--packets", "20000", "--quiet", "--json", js],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.read(20000)
    p.stdout.close()
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        fail("pipe: did not end")
        return
    err = err.decode()
    d = load(js) if os.path.exists(js) and os.path.getsize(js) else None
    if p.returncode != 1 or "Broken pipe" not in err or d is None:
        fail("pipe: rc %d: %s" % (p.returncode, err))
    elif (d["ports"][1]["tx_errors"] == 0 or
          d["ports"][1]["tx_packets"] + d["ports"][1]["tx_errors"] != 20000 or
          d["ports"][1]["xstats"]["pcap_tx_unwritten"] != d["ports"][1]["tx_errors"]):
        fail("pipe: counts %s" % d["ports"][1])
    else:
        ok("pipe reader gone: exit 1, '%s', %d Tx errors" %
           (err.splitlines()[0].split(": ", 2)[-1], d["ports"][1]["tx_errors"]))


def test_full_disk(tmp):
    """A full filesystem: a 256 KiB tmpfs (the test pcap_tools_full_disk: root only)."""
    mnt = os.path.join(tmp, "full")
    os.mkdir(mnt)
    if os.geteuid() != 0:
        return "needs root to mount a small tmpfs"
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tide-fwd-test", mnt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return "cannot mount a small tmpfs: " + r.stderr.strip()
    try:
        frames = [eth_ipv4(i) for i in range(50)]
        src = os.path.join(tmp, "full-in.pcap")
        write_pcap(src, [(1, i, f, 64) for i, f in enumerate(frames)])
        out = os.path.join(mnt, "out.pcap")
        js = os.path.join(tmp, "full.json")
        r = run(["--port", "pcap:rx=%s,loop=400" % src, "--port", "pcap:tx=%s" % out,
                 "--fwd", "io", "--quiet", "--json", js])
        if r is None:
            return None
        if r.returncode != 1 or "No space left on device" not in r.stderr:
            fail("full disk: rc %d: %s" % (r.returncode, r.stderr))
        else:
            check_partial(out, js, frames, 20000, "full tmpfs")
    finally:
        subprocess.run(["umount", mnt])
    return None


def test_rate(tmp):
    """--rate is a ceiling: never more than rate x time + one burst (no wall-clock floor)."""
    out = os.path.join(tmp, "rate.pcap")
    js = os.path.join(tmp, "rate.json")
    r = run(["--port", "pcap:tx=%s" % out, "--fwd", "txonly", "--rate", "20000",
             "--duration", "0.5", "--quiet", "--json", js])
    if r is None or r.returncode != 0:
        fail("--rate: rc %s %s" % (r and r.returncode, r and r.stderr))
        return
    d = load(js)
    sent, dt = d["total"]["tx_packets"], d["duration_s"]
    _, n, _ = tcpdump(out)
    if sent == 0 or sent > 20000 * dt + 32 or n != sent:
        fail("--rate 20000: %d sent in %.3f s (%d in the file)" % (sent, dt, n))
    else:
        ok("--rate 20000: %d sent in %.3f s (ceiling %d)" % (sent, dt, 20000 * dt + 32))


def main():
    global FWD
    FWD = os.path.abspath(sys.argv[1])
    for tool in ("tcpdump", "tshark"):
        if shutil.which(tool) is None:
            sys.stderr.write("%s not installed (scripts/install-deps)\n" % tool)
            return 77
    with tempfile.TemporaryDirectory(prefix="tide-pcap-tools.",
                                     dir=os.environ.get("TMPDIR")) as tmp:
        if sys.argv[2:] == ["full_disk"]:
            why = test_full_disk(tmp)
            if why is not None:
                sys.stderr.write("skip: the full-disk case %s\n" % why)
                return 77
        else:
            for t in (test_metadata, test_same_file, test_replay_ends, test_big_frames,
                      test_one_sided, test_l3fwd_readme, test_write_errors, test_rate):
                t(tmp)
    print("%d failed" % len(FAILS) if FAILS else "all passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
