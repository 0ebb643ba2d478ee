#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A seeded userspace stand-in for tc netem: forwards Ethernet frames between
two interfaces and impairs the RoCEv2 ones (IPv4 UDP to port 4791).

Used when the kernel has no sch_netem (some VM kernels are built without it).
It runs in its own namespace between the server's and the client's veth, so
the uroce endpoints still talk over af_packet/af_xdp on a veth; only the
frames in between pass through here. ARP and everything else is forwarded
untouched, so only the RoCE transport sees faults.

Per direction, with its own random stream (seed + direction), each RoCE frame
in turn may be: dropped (--loss %), corrupted (--corrupt %: one bit flipped
after the Ethernet header, so it still reaches the peer and must be caught by
the ICRC or a header check), duplicated (--duplicate %), or held back and sent
after the next frame of the same direction, or 5 ms later (--reorder %).

usage: relay.py IF_A IF_B [--loss P] [--corrupt P] [--duplicate P]
                [--reorder P] [--seed N] --stats FILE --ready FILE
Runs until SIGTERM/SIGINT, then writes per-direction counters as JSON to FILE.
"""

import argparse
import json
import random
import select
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_STATISTICS = 6
SO_RCVBUFFORCE = 33
ROCE_PORT = 4791
HOLD_S = 0.005


def is_roce_v4(f):
    if len(f) < 42 or f[12:14] != b"\x08\x00" or f[23] != 17:
        return False
    ihl = (f[14] & 0x0F) * 4
    off = 14 + ihl + 2
    return len(f) >= off + 2 and struct.unpack_from("!H", f, off)[0] == ROCE_PORT


class Direction:
    def __init__(self, name, out_sock, args, seed):
        self.name = name
        self.out = out_sock
        self.args = args
        self.rng = random.Random(seed)
        self.held = None  # (frame, release time)
        self.c = dict(frames=0, roce=0, forwarded=0, dropped=0, corrupted=0,
                      duplicated=0, reordered=0, send_errors=0)

    def _send(self, f):
        try:
            self.out.send(f)
            self.c["forwarded"] += 1
        except OSError:
            self.c["send_errors"] += 1

    def frame(self, f):
        self.c["frames"] += 1
        if not is_roce_v4(f):
            self._send(f)
            return
        self.c["roce"] += 1
        a, r = self.args, self.rng
        # One draw per fault per frame, always in this order, so the decisions
        # for the Nth RoCE frame depend only on the seed.
        d_loss, d_corrupt, d_dup, d_reorder = r.random(), r.random(), r.random(), r.random()
        pos, bit = r.randrange(14, len(f)), r.randrange(8)
        if d_loss * 100 < a.loss:
            self.c["dropped"] += 1
            return
        if d_corrupt * 100 < a.corrupt:
            f = bytearray(f)
            f[pos] ^= 1 << bit
            f = bytes(f)
            self.c["corrupted"] += 1
        copies = 2 if d_dup * 100 < a.duplicate else 1
        self.c["duplicated"] += copies - 1
        if self.held is None and d_reorder * 100 < a.reorder:
            self.held = (f, time.monotonic() + HOLD_S)
            self.c["reordered"] += 1
            return
        for _ in range(copies):
            self._send(f)
        self.release(force=True)

    def release(self, force=False):
        if self.held and (force or time.monotonic() >= self.held[1]):
            self._send(self.held[0])
            self.held = None


def open_socket(ifname):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 32 << 20)
    s.bind((ifname, ETH_P_ALL))
    s.setblocking(False)
    return s


def kernel_drops(s):
    packets, drops = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    return drops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("if_a")
    ap.add_argument("if_b")
    for k in ("loss", "corrupt", "duplicate", "reorder"):
        ap.add_argument("--" + k, type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--stats", required=True)
    ap.add_argument("--ready", required=True)
    args = ap.parse_args()

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    sa, sb = open_socket(args.if_a), open_socket(args.if_b)
    dirs = {sa: Direction(f"{args.if_a}->{args.if_b}", sb, args, args.seed * 2),
            sb: Direction(f"{args.if_b}->{args.if_a}", sa, args, args.seed * 2 + 1)}
    kernel_drops(sa), kernel_drops(sb)  # reading resets the counters
    with open(args.ready, "w") as f:
        f.write("ready\n")
    drops = {sa: 0, sb: 0}
    while not stop:
        try:
            readable, _, _ = select.select([sa, sb], [], [], HOLD_S)
        except InterruptedError:
            continue
        for s in readable:
            d = dirs[s]
            for _ in range(256):  # drain a burst, then look at the other side
                try:
                    f, addr = s.recvfrom(65536)
                except BlockingIOError:
                    break
                if addr[2] != PACKET_OUTGOING:
                    d.frame(f)
        for d in dirs.values():
            d.release()
        for s in (sa, sb):
            drops[s] += kernel_drops(s)
    out = {}
    for s, d in dirs.items():
        d.release(force=True)
        d.c["kernel_drops"] = drops[s] + kernel_drops(s)  # overflowed our socket: lost too
        out[d.name] = d.c
    with open(args.stats, "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
