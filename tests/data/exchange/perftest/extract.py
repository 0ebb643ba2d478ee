#!/usr/bin/env python3
"""Prints every TCP payload of the perftest exchange in the given rxe
captures, as perftest_tcp.txt holds them:

    python3 extract.py ../../rxe/write_bw.pcap ... > perftest_tcp.txt.body

Classic pcap, Ethernet, IPv4, TCP; the server is on port 18515."""
import os
import struct
import sys


def payloads(path):
    data = open(path, 'rb').read()
    assert struct.unpack('<I', data[:4])[0] == 0xa1b2c3d4, 'classic microsecond pcap expected'
    off, frame = 24, 0
    while off < len(data):
        _, _, incl, _ = struct.unpack('<IIII', data[off:off + 16])
        off += 16
        fr = data[off:off + incl]
        off += incl
        frame += 1
        if struct.unpack('>H', fr[12:14])[0] != 0x0800:
            continue
        ip = fr[14:]
        ihl = (ip[0] & 15) * 4
        if ip[9] != 6:
            continue
        total = struct.unpack('>H', ip[2:4])[0]
        tcp = ip[ihl:total]
        sport, dport = struct.unpack('>HH', tcp[:4])
        pay = tcp[(tcp[12] >> 4) * 4:]
        if pay:
            yield frame, 'C' if dport == 18515 else 'S', pay


for path in sys.argv[1:]:
    name = os.path.basename(path)[:-len('.pcap')]
    for frame, side, pay in payloads(path):
        print(f'{name} {frame} {side} {pay.hex()}')
