#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Sends or receives numbered Ethernet/IPv4/UDP frames on an interface through
AF_PACKET, like the uroce ports do, to measure what a link does to them.

  frameprobe.py send IF COUNT SIZE DPORT     frames 0..COUNT-1, ~20k frames/s
  frameprobe.py recv IF OUT.json SECONDS     counts until SECONDS pass, or SIGTERM

The receiver writes {"frames": N, "seqs": [...in arrival order...], "damaged": N}:
a frame is damaged when its bytes differ from what the sender built for its
number; one whose number cannot be read is counted in frames but not in seqs.
"""

import json
import signal
import socket
import struct
import sys
import time
import zlib

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SRC_MAC = bytes.fromhex("020000000001")
DST_MAC = bytes.fromhex("020000000002")
SRC_IP = socket.inet_aton("10.99.0.1")
DST_IP = socket.inet_aton("10.99.0.2")
MAGIC = b"UPRB"


def ip_checksum(h):
    s = sum(struct.unpack(f"!{len(h) // 2}H", h))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def build(seq, size, dport):
    """The frame numbered seq: size bytes, deterministic content."""
    payload_len = max(size - 42, 16)
    body = MAGIC + struct.pack("!I", seq)
    fill = (struct.pack("!I", zlib.crc32(body)) * (payload_len // 4 + 1))[: payload_len - len(body)]
    payload = body + fill
    udp = struct.pack("!HHHH", 40000, dport, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), seq & 0xFFFF, 0x4000, 64, 17, 0, SRC_IP, DST_IP)
    ip = ip[:10] + struct.pack("!H", ip_checksum(ip)) + ip[12:]
    return DST_MAC + SRC_MAC + b"\x08\x00" + ip + udp


def open_socket(ifname):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE
    s.bind((ifname, ETH_P_ALL))
    return s


def send(ifname, count, size, dport):
    s = open_socket(ifname)
    for seq in range(count):
        s.send(build(seq, size, dport))
        if seq % 64 == 63:
            time.sleep(0.003)  # stay well below what the relay forwards
    return 0


def recv(ifname, out, seconds):
    s = open_socket(ifname)
    s.settimeout(0.05)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    seqs, damaged, frames = [], 0, 0
    end = time.monotonic() + seconds
    print("ready", flush=True)
    while not stop and time.monotonic() < end:
        try:
            f, addr = s.recvfrom(65536)
        except (socket.timeout, InterruptedError):
            continue
        if addr[2] == PACKET_OUTGOING or len(f) < 50:
            continue
        frames += 1
        # Find the frame's number even if a bit flipped in the headers.
        i = f.find(MAGIC, 14)
        if i < 0 or i + 8 > len(f):
            damaged += 1
            continue
        seq = struct.unpack_from("!I", f, i + 4)[0]
        dport = struct.unpack_from("!H", f, 36)[0]
        if f != build(seq, len(f), dport):
            damaged += 1
        seqs.append(seq)
    with open(out, "w") as fh:
        json.dump({"frames": frames, "seqs": seqs, "damaged": damaged}, fh)
    return 0


if __name__ == "__main__":
    a = sys.argv
    if a[1] == "send":
        sys.exit(send(a[2], int(a[3]), int(a[4]), int(a[5])))
    sys.exit(recv(a[2], a[3], float(a[4])))
