#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# The host end of the virtio-pci suite's two-pair device: a multi-queue tap (QEMU's netdev
# with queues=2) in a network namespace of its own. On a packet socket bound to the tap it
# counts the guest's test frames by tag (tests/pci/wire_frame.h: 41 sent on Tx queue 0, 42
# on Tx queue 1, each checked whole) and answers two requests of the guest:
#   tag 40, seq K  send FLOWS UDP flows of K datagrams each (10.0.0.2:1000+f -> 10.0.0.1:2000,
#                  payload: flow, seq); the tap steers each flow to one queue by its hash
#   tag 44         a report frame (tag 43): "q0=N q1=N bad=B" at offset 30 (B: frames not
#                  intact plus what the packet socket dropped, so that a loss here is not
#                  taken for the device's)
# Its counts go to stdout at the end (SIGTERM).
#
# usage: mqpeer.py IFACE
import signal
import socket
import struct
import sys

FLOWS = 16
GUEST = bytes.fromhex('525400123457')
HOST = bytes.fromhex('020000000003')
counts = {41: 0, 42: 0}
bad = 0
sent = 0
drops = 0
SOL_PACKET = 263
PACKET_STATISTICS = 6
SO_RCVBUFFORCE = 33


def wire_ok(b):
    if len(b) < 30 or b[14:18] != b'TPCI':
        return False
    seq, flen = struct.unpack_from('<II', b, 22)
    if flen != len(b) and not (flen < 60 and len(b) == 60):
        return False
    tag = b[18]
    return all(b[i] == (seq * 7 + i + tag) & 0xff for i in range(30, flen))


def csum(h):
    s = sum(struct.unpack('!%dH' % (len(h) // 2), h))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return (~s) & 0xffff


def udp_frame(flow, seq):
    payload = struct.pack('<II', flow, seq) + bytes(16)
    udp = struct.pack('!HHHH', 1000 + flow, 2000, 8 + len(payload), 0) + payload
    ip = bytearray(struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), seq & 0xffff, 0, 64,
                               17, 0, bytes([10, 0, 0, 2]), bytes([10, 0, 0, 1])))
    struct.pack_into('!H', ip, 10, csum(bytes(ip)))
    return GUEST + HOST + b'\x08\x00' + bytes(ip) + udp


def done(*_):
    print('mqpeer: q0=%d q1=%d bad=%d drops=%d sent=%d' % (counts[41], counts[42], bad, drops, sent),
          flush=True)
    sys.exit(0)


def main():
    global bad, sent, drops
    signal.signal(signal.SIGTERM, done)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    # A queue's burst arrives at once (QEMU flushes each Tx queue on its own): room for all.
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
    s.bind((sys.argv[1], 0))
    print('mqpeer: ready', flush=True)
    while True:
        b, addr = s.recvfrom(65536)
        if addr[2] == socket.PACKET_OUTGOING or len(b) < 19 or b[12:14] != b'\x88\xb5':
            continue
        tag = b[18]
        if tag in counts:
            if wire_ok(b):
                counts[tag] += 1
            else:
                bad += 1
        elif tag == 40 and b[14:18] == b'TPCI':
            k = struct.unpack_from('<I', b, 22)[0]
            for seq in range(k):
                for flow in range(FLOWS):
                    s.send(udp_frame(flow, seq))
                    sent += 1
        elif tag == 44 and b[14:18] == b'TPCI':
            drops += struct.unpack('II', s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))[1]
            text = b'q0=%d q1=%d bad=%d' % (counts[41], counts[42], bad + drops)
            s.send((GUEST + HOST + b'\x88\xb5TPCI' + bytes([43]) + bytes(11) + text).ljust(60, b'\0'))


main()
