#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What a uroce-perf process leaves behind on a real link, and what it refuses.

usage: teardown_case.py SCENARIO UROCE_PERF WORKDIR

  afxdp-same-link  af_xdp on the veth that also carries the TCP exchange:
                   both sides refuse with the reason and the fix, and leave
                   no XDP program and no EAL runtime directory
  afxdp-signals    af_xdp with the exchange on a control link: a run of
  afpacket-signals -D 30 is ended mid-transfer, the client by SIGINT, the
                   server by SIGTERM; both die of that signal, and neither
                   an XDP program nor /var/run/dpdk/uroce-<pid> is left
  tcpdump-tx       af_packet: tcpdump on the host interface sees the frames
                   uroce sends only with qdisc_bypass=0 (the server keeps the
                   default, PACKET_QDISC_BYPASS; the client sets 0)

Exit 0 pass, 1 fail, 77 skip.
"""

import os
import re
import signal
import subprocess
import sys
import time

import harness
from harness import Failure, Harness, Skip, run
from perf_run import PairSpec, af_packet_vdev, af_xdp_vdev, leftovers, mac_of, run_pair
from procs import Proc, wait_all, wait_listening
from run_case import af_xdp_possible
from topology import Topology

SCENARIOS = ("afxdp-same-link", "afxdp-signals", "afpacket-signals", "tcpdump-tx")


def xdp_refused(outs):
    for out in outs:
        if "Error attaching XDP program" in out:
            raise Skip("the kernel refused to attach an XDP program to the veth:\n" + out[-1500:])


def same_link(h, perf, work):
    topo = Topology(h, work)  # kernel addresses on the data veths: the exchange shares them
    s, c = topo.server, topo.client
    spec = PairSpec(s.ns, c.ns, af_xdp_vdev(s.dev), af_xdp_vdev(c.dev), s.roce_ip, c.roce_ip, s.tcp_ip)
    common = [perf, "write_bw", "-n", "10", "-p", str(spec.tcp_port)]
    sides = [Proc(h, "server", common + ["--dev", spec.server_dev, "--ip", spec.server_ip],
                  os.path.join(work, "server.out"), ns=s.ns),
             Proc(h, "client", common + ["--dev", spec.client_dev, "--ip", spec.client_ip, spec.server_addr],
                  os.path.join(work, "client.out"), ns=c.ns)]
    wait_all(sides, 20)
    for p, ep in zip(sides, (s, c)):
        out = p.output()
        want = f"af_xdp takes every frame of {ep.dev} queue 0 from the kernel"
        if p.returncode != 1 or want not in out or f"net_af_packet0,iface={ep.dev}" not in out:
            raise Failure(f"{p.name}: expected exit 1 with '{want} ... net_af_packet0,iface={ep.dev}':\n"
                          + p.describe())
        print(f"  {p.name}: " + out.strip().splitlines()[-1])
    left = leftovers([(s.ns, s.dev), (c.ns, c.dev)], [p.p.pid for p in sides])
    if left:
        raise Failure("\n".join(left))


def signals(h, perf, work, port):
    topo = Topology(h, work, ctl_link=(port == "af_xdp"))
    s, c = topo.server, topo.client
    vdev = af_xdp_vdev if port == "af_xdp" else (lambda d: af_packet_vdev(d, 1500, False))
    spec = PairSpec(s.ns, c.ns, vdev(s.dev), vdev(c.dev), s.roce_ip, c.roce_ip, s.tcp_ip)
    common = [perf, "write_bw", "-s", "5000", "-D", "30", "-m", "1024", "-p", str(spec.tcp_port)]
    srv = Proc(h, "server", common + ["--dev", spec.server_dev, "--ip", spec.server_ip],
               os.path.join(work, "server.out"), ns=s.ns)
    wait_listening(srv, s.ns, spec.tcp_port, 20)
    cli = Proc(h, "client", common + ["--dev", spec.client_dev, "--ip", spec.client_ip, spec.server_addr],
               os.path.join(work, "client.out"), ns=c.ns)
    # Mid-transfer: the client reported progress (stderr, every 2 s) and both still run.
    end = time.monotonic() + 20
    while "messages completed in" not in cli.output():
        if not (srv.running() and cli.running()) or time.monotonic() > end:
            if port == "af_xdp":
                xdp_refused([srv.output(), cli.output()])
            raise Failure("the run did not start:\n" + srv.describe() + "\n" + cli.describe())
        time.sleep(0.1)
    running = [(p, f"/var/run/dpdk/uroce-{p.p.pid}") for p in (srv, cli)]
    for p, d in running:
        if not os.path.isdir(d):  # the pid and prefix the checks below rely on
            raise Failure(f"{p.name}: no {d} while it runs")
    attached = [ep.dev for ep in (s, c)
                if "xdp" in run(["ip", "-n", ep.ns, "-d", "link", "show", "dev", ep.dev])[1]]
    if port == "af_xdp" and len(attached) != 2:
        raise Failure(f"an XDP program should be attached to both veths while running, found on {attached}")
    os.kill(cli.p.pid, signal.SIGINT)
    os.kill(srv.p.pid, signal.SIGTERM)
    for p, sig in ((cli, signal.SIGINT), (srv, signal.SIGTERM)):
        try:
            p.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            raise Failure(f"{p.name} still runs 10 s after {sig.name}:\n{p.describe()}")
        if p.returncode != -sig:
            raise Failure(f"{p.name}: expected death by {sig.name}, got {p.status()}:\n{p.describe()}")
        print(f"  {p.name}: ended by {sig.name}")
    left = leftovers([(s.ns, s.dev), (c.ns, c.dev)], [srv.p.pid, cli.p.pid])
    if left:
        raise Failure("\n".join(left))
    print(f"  no XDP program attached, no runtime directory left ({', '.join(d for _, d in running)})")


def count(pcap, mac):
    r = subprocess.run(["tcpdump", "-r", pcap, "-nn", f"ether src {mac} and udp dst port 4791"],
                       capture_output=True, text=True)
    return len([ln for ln in r.stdout.splitlines() if ln.strip()])


def tcpdump_tx(h, perf, work):
    if subprocess.run(["sh", "-c", "command -v tcpdump"], capture_output=True).returncode != 0:
        raise Skip("no tcpdump (apt-get install tcpdump)")
    topo = Topology(h, work)
    s, c = topo.server, topo.client
    spec = PairSpec(s.ns, c.ns, af_packet_vdev(s.dev, 1500, False), af_packet_vdev(c.dev, 1500, True),
                    s.roce_ip, c.roce_ip, s.tcp_ip)
    dumps = {}
    for ep in (s, c):
        path = os.path.join(work, f"{ep.dev}.pcap")
        dumps[ep.dev] = (Proc(h, f"tcpdump-{ep.dev}", ["tcpdump", "-i", ep.dev, "-w", path, "-U", "udp"],
                              os.path.join(work, f"tcpdump-{ep.dev}.out"), ns=ep.ns), path)
    time.sleep(1.0)  # tcpdump attaches
    server, client = run_pair(h, work, perf, "write_bw", ["-s", "5000", "-n", "200", "-m", "1024"], spec)
    for sd in (server, client):
        if sd.proc.returncode != 0:
            raise Failure(f"uroce-perf failed:\n{server.proc.describe()}\n{client.proc.describe()}")
    time.sleep(0.5)
    for p, _ in dumps.values():
        p.stop(grace_s=3)
    s_tx, c_tx = count(dumps[s.dev][1], mac_of(s.ns, s.dev)), count(dumps[c.dev][1], mac_of(c.ns, c.dev))
    print(f"  tcpdump on {s.dev} (qdisc_bypass default): {s_tx} RoCE frames sent by the server seen")
    print(f"  tcpdump on {c.dev} (qdisc_bypass=0): {c_tx} RoCE frames sent by the client seen")
    if c_tx < 200:
        raise Failure(f"with qdisc_bypass=0 tcpdump should see the client's >= 200 WRITE packets, saw {c_tx}")
    if s_tx != 0:
        raise Failure(f"with the default qdisc_bypass=1 tcpdump saw {s_tx} frames the server sent: "
                      "docs/ports.md says it sees none")


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in SCENARIOS:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    name, perf, work = sys.argv[1:]

    def body():
        harness.require_root()
        os.makedirs(work, exist_ok=True)
        if name.startswith("afxdp"):
            af_xdp_possible()
        with Harness(("td" + name.replace("-", ""))[:20]) as h:
            if name == "afxdp-same-link":
                same_link(h, perf, work)
            elif name == "tcpdump-tx":
                tcpdump_tx(h, perf, work)
            else:
                signals(h, perf, work, "af_xdp" if name.startswith("afxdp") else "af_packet")
        print(f"PASS: teardown-{name}")

    harness.main_wrapper(body)


if __name__ == "__main__":
    main()
