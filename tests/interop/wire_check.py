# SPDX-License-Identifier: BSD-3-Clause
"""What the bridge capture says beyond uroce-dump's per-packet verdicts.

* who sent RoCE: both ends must have (by source IP), and with which
  802.1Q tags;
* which BTH opcodes each sender used;
* how often each sender's requests went back in PSN (go-back-N restarts):
  the requester's retransmissions, seen on the wire, for a uroce side
  that prints no counter of its own (a Debian program on uroce-run);
* retransmissions carry the same bytes: every copy of an RC or UC request
  or response packet (same sender, destination QP, PSN and opcode) must have
  the same payload. Under loss this is the data check that needs no knowledge of the
  peer's buffers: perftest fills its buffers with rand(), so uroce's
  --verify pattern cannot be used against it.
"""

import hashlib
import socket
import struct
from collections import defaultdict

from captures import read_pcap

ACK_OPCODES = {0x11, 0x12}  # RC ACKNOWLEDGE, ATOMIC ACKNOWLEDGE: no payload to compare
# READ responses FIRST, LAST, ONLY carry an AETH whose MSN is the responder's
# count when it (re)sent them: a replay legitimately differs there.
AETH_OPCODES = {0x0D, 0x0F, 0x10}
# RC responses (READ responses, ACKs): everything else a requester sends.
RESPONSE_OPCODES = {0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12}
# UD (IBA: 0x60 .. 0x7F): never retransmitted by the transport, so one PSN
# twice is two packets (a program that forks a process per client, qperf's
# server, starts QP1 at PSN 0 in each).
UD_OPCODES = range(0x60, 0x80)


def _psn_rewinds(pkts):
    """Per sender: requests whose PSN is not after the previous request's on
    the same destination QP (24-bit serial arithmetic)."""
    last, rewinds = {}, defaultdict(int)
    for src, qpn, psn, op, _ in pkts:
        if op in RESPONSE_OPCODES or op > 0x14:  # RC requests only
            continue
        key = (src, qpn)
        if key in last:
            ahead = (psn - last[key]) & 0xFFFFFF
            if ahead == 0 or ahead >= 0x800000:
                rewinds[src] += 1
        last[key] = psn
    return rewinds


def roce_packets(pcap, tags=None):
    """(src ip, dst qpn, psn, opcode, payload) per RoCEv2 frame; each
    frame's 802.1Q (VLAN id, PCP), or None, goes to `tags` in step."""
    _, records = read_pcap(pcap)
    out = []
    for r in records:
        f = r[16:]
        tag = None
        if f[12:14] == b"\x81\x00" and len(f) >= 18:
            tci = struct.unpack_from("!H", f, 14)[0]
            tag = (tci & 0xFFF, tci >> 13)
            f = f[:12] + f[16:]
        if len(f) < 14 + 20 + 8 + 12 or f[12:14] != b"\x08\x00" or f[23] != 17:
            continue
        ihl = (f[14] & 0x0F) * 4
        udp = 14 + ihl
        if struct.unpack_from("!H", f, udp + 2)[0] != 4791:
            continue
        total = struct.unpack_from("!H", f, 16)[0]
        end = 14 + total
        bth = udp + 8
        op = f[bth]
        qpn = int.from_bytes(f[bth + 5:bth + 8], "big")
        psn = int.from_bytes(f[bth + 9:bth + 12], "big")
        out.append((socket.inet_ntoa(f[26:30]), qpn, psn, op, bytes(f[bth + 12:end - 4])))
        if tags is not None:
            tags.append(tag)
    return out


def check(pcap, ips):
    """Returns a report dict; raises nothing (the caller judges)."""
    frame_tags = []
    pkts = roce_packets(pcap, frame_tags)
    tags, untagged = defaultdict(set), defaultdict(int)
    for (src, *_), tag in zip(pkts, frame_tags):
        if tag is None:
            untagged[src] += 1
        else:
            tags[src].add(tag)
    by_sender = defaultdict(int)
    copies = defaultdict(set)
    count = defaultdict(int)
    for src, qpn, psn, op, rest in pkts:
        by_sender[src] += 1
        if op in ACK_OPCODES or op in UD_OPCODES:
            continue
        if op in AETH_OPCODES:
            rest = rest[4:]
        key = (src, qpn, psn, op)
        copies[key].add(hashlib.sha1(rest).digest())
        count[key] += 1
    differing = [k for k, v in copies.items() if len(v) > 1]
    resent = defaultdict(int)
    for (src, _, _, _), n in count.items():
        if n > 1:
            resent[src] += n - 1
    # UC's SEND and RDMA WRITE opcodes (IBA: 0x20 .. 0x2B); a UC run has no other.
    not_uc = [f"{src} QP 0x{qpn:06x} PSN {psn} opcode 0x{op:02x}" for src, qpn, psn, op, _ in pkts
              if not 0x20 <= op <= 0x2B]
    rewinds = _psn_rewinds(pkts)
    opcodes = defaultdict(set)
    for src, _, _, op, _ in pkts:
        opcodes[src].add(op)
    return {
        "opcodes": {ip: opcodes.get(ip, set()) for ip in ips},
        "packets": len(pkts),
        "rewinds": {ip: rewinds.get(ip, 0) for ip in ips},
        "by_sender": {ip: by_sender.get(ip, 0) for ip in ips},
        "resent_seen": {ip: resent.get(ip, 0) for ip in ips},
        "differing": [f"{s} QP 0x{q:06x} PSN {p} opcode 0x{o:02x}" for s, q, p, o in differing[:5]],
        "not_uc": not_uc[:5],
        # 802.1Q: the (VLAN id, PCP) pairs each sender's frames carried, and
        # how many of its frames had no tag.
        "tags": dict(tags),
        "untagged": dict(untagged),
    }
