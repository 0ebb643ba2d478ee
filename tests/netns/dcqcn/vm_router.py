# SPDX-License-Identifier: BSD-3-Clause
"""The real bottleneck with a real `red ... ecn`: the router is a qemu VM.

    [s1] a1 == b1 \\                                        / d1 == e1  server 1
                   brL -- tap0 [VM: eth0 | eth1] tap1 -- brR
    [s2] a2 == b2 /       (netns vmh: qemu, both bridges)   \\ d2 == e2  server 2

The host kernel has no sch_red (nor any ECN qdisc); Debian's kernel has it as
a module. The VM is the interop suite's (tests/interop: image.py fetches
Debian's kernel package and packs the initramfs, with sch_htb and sch_red;
vm.py boots it under TCG and runs shell scripts in it over virtio-serial),
booted with uix.rxe=0: a plain router. It forwards IPv4 and answers ARP for
the other side (proxy ARP: uroce has no gateway, it ARPs for its peer's
address itself). Its egress to the receivers (eth1) is the only link both
flows share: htb at rate_mbit, red with ecn as its child (DCQCN's CP:
probability ramp from Kmin to Kmax, every ECT packet marked above Kmax,
drops only when the backlog would exceed `limit`).
"""

import os
import re
import sys

from bottleneck import FRAME_BYTES, SERVER_IFINDEX, _veth, address_endpoints
from harness import Failure, run

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "interop"))
import image  # noqa: E402
from vm import VM  # noqa: E402

# RED on the bottleneck, in frames of FRAME_BYTES (see README.md for the
# reasoning): Kmin 15, Kmax 45, max_p 10 %. At 40 Mb/s a frame takes 216 us
# on the link, so Kmin..Kmax is 3..10 ms of queue, a few of the loop's RTTs.
RED_MIN_PKTS = 15
RED_MAX_PKTS = 45
RED_PROBABILITY = 0.1
HTB_BURST = 32000
VM_MAC_LEFT = "52:54:00:80:01:01"
VM_MAC_RIGHT = "52:54:00:80:00:01"


class VmBottleneck:
    """Same interface as bottleneck.Bottleneck: senders, servers, rcv, aqm,
    describe(), stats(). rate_mbit 0: no qdisc (to measure what the VM
    forwards)."""

    # Local ACK timeout 2^16 * 4.096 us = 268 ms instead of 67 ms: through a
    # TCG VM on a loaded host, ACKs took longer than 67 ms now and then; the
    # spurious go-back-N that followed put a second window into the queue
    # behind the first and overflowed it (with -u 14: 0-139 drops and
    # 0-2763 retransmissions per run with no frame lost; with -u 16, in
    # eight runs: one drop in one).
    perf_args = ["-u", "16"]
    # With DCQCN, drops allowed at RED (% of the frames, at least 5); measured
    # at most 1 frame with -u 16, 0.37 % at most with -u 14 (README.md).
    drop_pct = 1

    def __init__(self, h, cache, work, rate_mbit, limit_pkts):
        self.rate_mbit, self.limit_pkts = rate_mbit, limit_pkts
        img = image.build(cache)  # Skip when qemu or the kernel package cannot be had
        s1, s2 = h.new_netns("s1"), h.new_netns("s2")
        self.vmh, self.rcv = h.new_netns("vmh"), h.new_netns("rcv")
        ipv = ["ip", "-n", self.vmh]
        for br in ("brL", "brR"):
            run(ipv + ["link", "add", br, "type", "bridge", "stp_state", "0", "forward_delay", "0",
                       "mcast_snooping", "0"])
        for tap in ("tap0", "tap1"):
            run(ipv + ["tuntap", "add", "dev", tap, "mode", "tap"])
        _veth(s1, "a1", self.vmh, "b1")
        _veth(s2, "a2", self.vmh, "b2")
        _veth(self.rcv, "e1", self.vmh, "d1", index=SERVER_IFINDEX[0])
        _veth(self.rcv, "e2", self.vmh, "d2", index=SERVER_IFINDEX[1])
        for dev, br in (("tap0", "brL"), ("b1", "brL"), ("b2", "brL"), ("tap1", "brR"), ("d1", "brR"),
                        ("d2", "brR")):
            run(ipv + ["link", "set", dev, "master", br])
            run(ipv + ["link", "set", dev, "up"])
        for br in ("brL", "brR"):
            run(ipv + ["link", "set", br, "up"])
        self.senders, self.servers = address_endpoints(s1, s2, self.rcv, self.vmh)
        run(["bridge", "-n", self.vmh, "fdb", "replace", VM_MAC_RIGHT, "dev", "tap1", "master", "static"])
        self.vm = VM(h, work, img, self.vmh, "tap0", VM_MAC_LEFT, "10.80.1.1/24", 1500, name="router",
                     extra_nics=[("tap1", VM_MAC_RIGHT)], append="uix.rxe=0")
        info = self.vm.wait_ready(60)
        self.boot_s, self.kernel = self.vm.boot_s, info.get("kernel", "?")
        self.vm.run(self._router_script())
        self.aqm = "red" if rate_mbit else "open"

    def _router_script(self):
        # Full paths: busybox's ash runs its own applets (ip, tc) before PATH.
        lines = [
            "set -e",
            "IP=/usr/bin/ip TC=/usr/sbin/tc",
            "$IP addr add 10.80.2.1/24 dev eth0",
            "$IP link set eth1 up",
            "$IP addr add 10.80.0.1/24 dev eth1",
            # Forwarding and proxy ARP, answered at once (proxy_delay is a
            # random wait of up to 0.8 s otherwise).
            "for k in ipv4/ip_forward ipv4/conf/all/proxy_arp ipv4/conf/eth0/proxy_arp ipv4/conf/eth1/proxy_arp; do"
            " echo 1 > /proc/sys/net/$k; done",
            "for k in all eth0 eth1; do echo 0 > /proc/sys/net/ipv4/conf/$k/send_redirects;"
            " echo 0 > /proc/sys/net/ipv4/conf/$k/rp_filter; done",
            "for k in eth0 eth1; do echo 0 > /proc/sys/net/ipv4/neigh/$k/proxy_delay; done",
        ]
        if self.rate_mbit:
            # RoCE (UDP 4791) in 1:10 behind RED; the rest (ARP, the
            # exchange's TCP) in 1:20, which borrows from the same rate:
            # RED drops every packet it cannot mark once its average is
            # above max, and a dropped ARP request or SYN failed the
            # connection setup. Bursts of HTB_BURST bytes: the guest's
            # watchdog timer fires late under TCG, and with htb's default
            # burst (1600 b, one frame per timer) it sent 5 Mb/s of 40.
            r, b = f"{self.rate_mbit}mbit", f"burst {HTB_BURST} cburst {HTB_BURST}"
            lines += [
                "$TC qdisc add dev eth1 root handle 1: htb default 20",
                f"$TC class add dev eth1 parent 1: classid 1:1 htb rate {r} ceil {r} {b}",
                f"$TC class add dev eth1 parent 1:1 classid 1:10 htb rate {self.rate_mbit - 1}mbit ceil {r} prio 1 {b}",
                f"$TC class add dev eth1 parent 1:1 classid 1:20 htb rate 1mbit ceil {r} prio 0 {b}",
                "$TC qdisc add dev eth1 parent 1:10 handle 20: " + self.red_args(),
                "$TC qdisc add dev eth1 parent 1:20 handle 30: pfifo limit 100",
                "$TC filter add dev eth1 parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff"
                " match ip dport 4791 0xffff flowid 1:10",
            ]
        return "\n".join(lines) + "\n"

    def red_args(self):
        kmin, kmax = RED_MIN_PKTS * FRAME_BYTES, RED_MAX_PKTS * FRAME_BYTES
        # tc-red(8)'s rule of thumb for burst: (2 min + max) / (3 avpkt).
        burst = (2 * RED_MIN_PKTS + RED_MAX_PKTS) // 3
        return (f"red limit {self.limit_pkts * FRAME_BYTES} min {kmin} max {kmax} avpkt {FRAME_BYTES} "
                f"burst {burst} probability {RED_PROBABILITY} bandwidth {self.rate_mbit}mbit ecn")

    def describe(self):
        head = f"router VM (kernel {self.kernel}, booted in {self.boot_s:.1f} s)"
        if not self.rate_mbit:
            return head + ", no qdisc (open path)"
        return head + f", eth1: htb {self.rate_mbit} Mb/s + {self.red_args()}"

    def tap_drops(self):
        """Frames the host dropped on their way into the VM (tap TX drops):
        a VM that cannot keep up loses them there, not in RED."""
        total = 0
        for tap in ("tap0", "tap1"):
            _, out = run(["ip", "-n", self.vmh, "-s", "link", "show", "dev", tap])
            m = re.search(r"TX:.*?\n\s*\d+\s+\d+\s+\d+\s+(\d+)", out)
            total += int(m.group(1)) if m else 0
        return total

    def stats(self):
        """(packets sent by the bottleneck, dropped, CE marks, raw text)."""
        _, out = self.vm.run("/usr/sbin/tc -s qdisc show; /usr/sbin/tc -s class show dev eth1; /usr/bin/ip -s link")
        if not self.rate_mbit:
            m = re.search(r"eth1:.*?TX:.*?\n\s*\d+\s+(\d+)\s+\d+\s+(\d+)", out, re.S)
            return (int(m.group(1)), int(m.group(2)), 0, out) if m else (0, 0, 0, out)
        m = re.search(r"qdisc red 20:.*?Sent \d+ bytes (\d+) pkt \(dropped (\d+)", out, re.S)
        rest = re.search(r"qdisc pfifo 30:.*?Sent \d+ bytes (\d+) pkt \(dropped (\d+)", out, re.S)
        mk = re.search(r"qdisc red 20:.*?marked (\d+) early (\d+) pdrop (\d+)", out, re.S)
        if not m or not mk:
            raise Failure(f"cannot read the red qdisc's counters in the router VM:\n{out}")
        self.details = (f"red: marked {mk.group(1)} early {mk.group(2)} pdrop {mk.group(3)}; other traffic "
                        + (f"{rest.group(1)} packets, {rest.group(2)} dropped" if rest else "?")
                        + f"; {self.tap_drops()} dropped on the taps into the VM")
        return int(m.group(1)), int(m.group(2)), int(mk.group(1)), out
