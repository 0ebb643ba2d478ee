# SPDX-License-Identifier: BSD-3-Clause
"""Two network namespaces, a server's and a client's, joined by a veth pair.

    direct:  [server ns] vs ===== vc [client ns]            kernel IPs on vs/vc
    relay:   [server ns] vs == rs [relay ns] rc == vc [client ns]
    ctl:     plus [server ns] ks ===== kc [client ns]        kernel IPs on ks/kc

The kernel's addresses carry the TCP exchange (the client's SERVER argument);
the uroce endpoints use their own addresses on the data veth (vs, vc), which
the kernel does not own, and answer ARP for them themselves. A separate
control pair (ctl) is used when the data path cannot carry kernel traffic:
through the relay (it would need checksum offload off and no TSO), and with
af_xdp (its XDP program steals every frame of the queue from the kernel).

Impairments: tc netem on vs and vc (both directions) when the kernel has it,
else the relay (impair.py). UROCE_NETNS_IMPAIR=relay forces the relay,
=netem forces netem (skip if missing).
"""

import os
import sys
import time
from dataclasses import dataclass

import impair
from harness import Failure, Skip, run
from procs import Proc

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass
class Endpoint:
    ns: str
    dev: str       # the data veth the uroce port opens
    tcp_ip: str    # the kernel's address: the exchange's TCP endpoint
    roce_ip: str   # uroce's --ip, not owned by the kernel


class Topology:
    def __init__(self, harness, workdir, mtu=1500, imp=None, ctl_link=False):
        self.h = harness
        self.workdir = workdir
        self.mtu = mtu
        self.imp = imp if imp and imp.any() else None
        self.backend = None
        self.relay = None
        self.relay_stats_path = os.path.join(workdir, "relay-stats.json")
        if self.imp:
            self.backend = self._choose_backend()
        use_ctl = ctl_link or self.backend == "relay"
        s_ns = harness.new_netns("srv")
        c_ns = harness.new_netns("cli")
        data_ip = ("10.77.0.1", "10.77.0.2")
        tcp_ip = ("10.78.0.1", "10.78.0.2") if use_ctl else data_ip
        self.server = Endpoint(s_ns, "vs", tcp_ip[0], "10.77.0.101")
        self.client = Endpoint(c_ns, "vc", tcp_ip[1], "10.77.0.102")
        if self.backend == "relay":
            r_ns = harness.new_netns("rly")
            self._veth(r_ns, "rs", s_ns, "vs")
            self._veth(r_ns, "rc", c_ns, "vc")
            for d in ("rs", "rc"):
                run(["ip", "-n", r_ns, "link", "set", d, "promisc", "on", "up"])
            self._start_relay(r_ns)
        else:
            self._veth(s_ns, "vs", c_ns, "vc")
        for ep, ip in zip((self.server, self.client), data_ip):
            if not use_ctl:
                run(["ip", "-n", ep.ns, "addr", "add", f"{ip}/24", "dev", ep.dev])
            run(["ip", "-n", ep.ns, "link", "set", ep.dev, "up"])
        if use_ctl:
            self._veth(s_ns, "ks", c_ns, "kc")
            for ns, dev, ip in ((s_ns, "ks", tcp_ip[0]), (c_ns, "kc", tcp_ip[1])):
                run(["ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", dev])
                run(["ip", "-n", ns, "link", "set", dev, "up"])
        if self.backend == "netem":
            for ep in (self.server, self.client):
                impair.apply_netem(ep.ns, ep.dev, self.imp)

    def _veth(self, ns_a, a, ns_b, b):
        m = str(self.mtu)
        run(["ip", "-n", ns_a, "link", "add", a, "mtu", m, "type", "veth", "peer", "name", b,
             "netns", ns_b, "mtu", m])

    def _choose_backend(self):
        want = os.environ.get("UROCE_NETNS_IMPAIR", "auto")
        if want == "relay":
            return "relay"
        if impair.netem_available(self.h):
            return "netem"
        if want == "netem":
            raise Skip("UROCE_NETNS_IMPAIR=netem but this kernel cannot add a netem qdisc "
                       "(needs sch_netem, sch_prio, cls_u32)")
        return "relay"

    def _start_relay(self, ns):
        ready = os.path.join(self.workdir, "relay-ready")
        for p in (ready, self.relay_stats_path):
            if os.path.exists(p):
                os.unlink(p)
        self.relay = Proc(self.h, "relay", [sys.executable, os.path.join(HERE, "relay.py"), "rs", "rc",
                                            "--stats", self.relay_stats_path, "--ready", ready]
                          + self.imp.relay_args(), os.path.join(self.workdir, "relay.log"), ns=ns)
        end = time.monotonic() + 10
        while not os.path.exists(ready):
            if not self.relay.running() or time.monotonic() > end:
                raise Failure(f"the relay did not start:\n{self.relay.describe()}")
            time.sleep(0.02)

    def impairment_report(self):
        """Stops the relay; returns (text, frames the link dropped on purpose,
        frames that went through the impairment at all)."""
        if self.backend == "relay":
            self.relay.stop(grace_s=3)
            stats = impair.read_relay_stats(self.relay_stats_path)
            dropped = sum(d["dropped"] + d["kernel_drops"] for d in stats.values())
            roce = sum(d["roce"] for d in stats.values())
            lines = [f"  {k}: " + ", ".join(f"{n} {v}" for n, v in d.items()) for k, d in stats.items()]
            return "relay (userspace, seeded):\n" + "\n".join(lines), dropped, roce
        if self.backend == "netem":
            lines, dropped, sent = [], 0, 0
            for ep in (self.server, self.client):
                s, d = impair.netem_stats(ep.ns, ep.dev)
                lines.append(f"  netem on {ep.dev}: {s} RoCE frames sent, {d} dropped")
                dropped, sent = dropped + d, sent + s + d
            return "tc netem:\n" + "\n".join(lines), dropped, sent
        return "no impairment", 0, 0
