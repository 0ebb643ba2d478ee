# SPDX-License-Identifier: BSD-3-Clause
"""Faults on the link between the two uroce endpoints: tc netem, or the relay.

netem (when the kernel has sch_netem, prio and cls_u32, as Debian's does) sits
on the egress of both data veths, behind a prio qdisc whose u32 filter sends
only RoCEv2 frames (UDP destination port 4791) to it, so the TCP exchange and
ARP are never impaired. netem only sees what goes through the qdisc layer:
net_af_packet bypasses it by default (PACKET_QDISC_BYPASS), so the ports
must be opened with qdisc_bypass=0; netem_stats() proves frames went through.

Kernels without netem (some VM kernels) get relay.py instead: a seeded
userspace forwarder in a third namespace (see topology.py).
"""

import json
import os
import re
from dataclasses import dataclass

from harness import Failure, run


@dataclass
class Impairment:
    loss: float = 0.0       # percent of RoCE frames, each direction
    reorder: float = 0.0
    duplicate: float = 0.0
    corrupt: float = 0.0
    seed: int = 1           # relay only: netem has no seed

    def any(self):
        return any((self.loss, self.reorder, self.duplicate, self.corrupt))

    def __str__(self):
        parts = [f"{k} {getattr(self, k)}%" for k in ("loss", "reorder", "duplicate", "corrupt") if getattr(self, k)]
        return ", ".join(parts) or "none"

    def netem_args(self):
        a = []
        if self.reorder:
            # netem reorders by delaying the others: reordered frames go at once.
            a += ["delay", "2ms", "reorder", f"{self.reorder}%"]
        for k in ("loss", "duplicate", "corrupt"):
            if getattr(self, k):
                a += [k, f"{getattr(self, k)}%"]
        return a

    def relay_args(self):
        return [f"--loss={self.loss}", f"--corrupt={self.corrupt}", f"--duplicate={self.duplicate}",
                f"--reorder={self.reorder}", f"--seed={self.seed}"]


def apply_netem(ns, dev, imp):
    """prio root qdisc; band 3 gets netem; a u32 filter sends UDP/4791 there."""
    tc = ["tc", "-n", ns]
    run(tc + ["qdisc", "add", "dev", dev, "root", "handle", "1:", "prio"])
    run(tc + ["qdisc", "add", "dev", dev, "parent", "1:3", "handle", "30:", "netem", "limit", "100000"]
        + imp.netem_args())
    run(tc + ["filter", "add", "dev", dev, "parent", "1:0", "protocol", "ip", "prio", "1", "u32",
              "match", "ip", "protocol", "17", "0xff", "match", "ip", "dport", "4791", "0xffff",
              "flowid", "1:3"])


def netem_available(harness):
    """Can this kernel run apply_netem()? Tried on a scratch veth."""
    ns = harness.new_netns("probe")
    try:
        run(["ip", "-n", ns, "link", "add", "pa", "type", "veth", "peer", "name", "pb"])
        apply_netem(ns, "pa", Impairment(loss=1.0))
        return True
    except Failure:
        return False
    finally:
        run(["ip", "netns", "del", ns], check=False)


def netem_stats(ns, dev):
    """(packets sent, packets dropped) by the netem qdisc on dev."""
    _, text = run(["tc", "-n", ns, "-s", "qdisc", "show", "dev", dev])
    m = re.search(r"qdisc netem 30:.*?\n\s*Sent \d+ bytes (\d+) pkt \(dropped (\d+)", text, re.S)
    if not m:
        raise Failure(f"no netem statistics on {dev} in {ns}:\n{text}")
    return int(m.group(1)), int(m.group(2))


def read_relay_stats(path):
    if not os.path.exists(path):
        raise Failure(f"the relay wrote no statistics to {path}")
    with open(path) as f:
        return json.load(f)
