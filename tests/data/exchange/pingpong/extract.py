#!/usr/bin/env python3
"""Extracts the out-of-band TCP streams (port 18515) of an rxe capture.

usage: extract.py CAPTURE.pcap OUT_PREFIX
Writes OUT_PREFIX.client.bin (client -> server bytes) and
OUT_PREFIX.server.bin (server -> client bytes), each the TCP payload in
sequence order with retransmitted bytes counted once. Classic pcap,
Ethernet, IPv4 only: what the captures in shared/vectors/rxe are.
"""
import struct
import sys

PORT = 18515


def frames(path):
    with open(path, 'rb') as f:
        data = f.read()
    magic = struct.unpack('<I', data[:4])[0]
    endian = '<' if magic in (0xa1b2c3d4, 0xa1b23c4d) else '>'
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + 'IIII', data[off:off + 16])
        off += 16
        yield data[off:off + incl]
        off += incl


def main():
    pcap, prefix = sys.argv[1], sys.argv[2]
    streams = {'client': {}, 'server': {}}  # direction -> {seq: payload}
    for fr in frames(pcap):
        if len(fr) < 14 or fr[12:14] != b'\x08\x00':
            continue
        ip = fr[14:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack('>H', ip[2:4])[0]
        if ip[9] != 6:
            continue
        tcp = ip[ihl:total]
        sport, dport, seq = struct.unpack('>HHI', tcp[:8])
        doff = (tcp[12] >> 4) * 4
        payload = tcp[doff:]
        if not payload:
            continue
        if dport == PORT:
            streams['client'].setdefault(seq, payload)
        elif sport == PORT:
            streams['server'].setdefault(seq, payload)
    for side, segs in streams.items():
        out = bytearray()
        if segs:
            start = min(segs)
            for seq in sorted(segs):
                rel = (seq - start) & 0xFFFFFFFF
                chunk = segs[seq]
                if rel + len(chunk) > len(out):  # skip bytes already present
                    out += chunk[len(out) - rel:]
        with open(f'{prefix}.{side}.bin', 'wb') as f:
            f.write(out)
        print(f'{prefix}.{side}.bin: {len(out)} bytes')


if __name__ == '__main__':
    main()
