#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Match every ICMP echo reply in capture OUT to its request in capture IN.

Each request must have exactly one reply: Ethernet addresses swapped, IPv4 addresses
swapped, ICMP type 0 code 0, the same identifier, sequence number and payload. (libmemif's
icmp_responder gets the ICMP checksum wrong, so it is not checked.)
usage: check_icmp.py IN.pcap OUT.pcap COUNT
"""
import struct
import sys


def frames(path):
    with open(path, 'rb') as f:
        data = f.read()
    magic, = struct.unpack_from('<I', data, 0)
    if magic != 0xa1b2c3d4:
        sys.exit(f'{path}: not a little-endian microsecond pcap')
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack_from('<IIII', data, off)
        yield data[off + 16:off + 16 + incl]
        off += 16 + incl


def icmp(fr):
    if len(fr) < 42 or fr[12:14] != b'\x08\x00' or fr[23] != 1:
        return None
    ihl = (fr[14] & 15) * 4
    ic = fr[14 + ihl:]
    typ, code = ic[0], ic[1]
    ident, seq = struct.unpack_from('!HH', ic, 4)
    return {'dst': fr[0:6], 'src': fr[6:12], 'ipsrc': fr[26:30], 'ipdst': fr[30:34],
            'type': typ, 'code': code, 'id': ident, 'seq': seq, 'data': ic[8:]}


def main():
    inp, outp, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    req = {}
    for fr in frames(inp):
        p = icmp(fr)
        if p is None or p['type'] != 8:
            sys.exit('a frame sent is not an echo request')
        req[p['seq']] = p
    seen, bad = set(), 0
    for fr in frames(outp):
        p = icmp(fr)
        q = req.get(p['seq']) if p else None
        why = ('not ICMP' if p is None else 'no request with this seq' if q is None else
               'a second reply' if p['seq'] in seen else
               'not an echo reply' if p['type'] != 0 or p['code'] != 0 else
               'id' if p['id'] != q['id'] else 'payload' if p['data'] != q['data'] else
               f"MAC addresses {p['src'].hex(':')} -> {p['dst'].hex(':')}, request "
               f"{q['src'].hex(':')} -> {q['dst'].hex(':')}"
               if p['dst'] != q['src'] or p['src'] != q['dst'] else
               'IP addresses' if p['ipsrc'] != q['ipdst'] or p['ipdst'] != q['ipsrc'] else None)
        if why:
            bad += 1
            print(f'bad reply (seq {p["seq"] if p else "?"}, {len(fr)} bytes): {why}',
                  file=sys.stderr)
            continue
        seen.add(p['seq'])
    print(f'requests={len(req)} replies_matched={len(seen)} bad={bad}')
    if len(req) != count or len(seen) != count or bad:
        sys.exit(1)


main()
