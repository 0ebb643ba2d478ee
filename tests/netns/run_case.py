#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""One netns test case: two uroce-perf processes over a real link.

usage: run_case.py CASE UROCE_PERF UROCE_DUMP ORACLE_PY WORKDIR
       run_case.py --list

CASE is a key of cases.CASES. Exit 0 pass, 1 fail, 77 skip (not root, or the
kernel cannot do what the case needs). The outputs of both processes, the
client's capture and the relay's counters stay in WORKDIR.
"""

import os
import socket
import sys
import time

import harness
from cases import CASES
from captures import check_capture
from harness import Failure, Harness, Skip
from perf_run import (SLOTS_NOTICE, PairSpec, af_packet_vdev, af_xdp_vdev, check_pair, free_tcp_port,
                      leftovers, mac_of, memif_vdev, run_pair)
from topology import Topology

DEADLINE_S = 45  # meson's timeout for these tests is 60 s


def af_xdp_possible():
    try:
        socket.socket(44, socket.SOCK_RAW, 0).close()  # AF_XDP
    except OSError as e:
        raise Skip(f"the kernel has no AF_XDP sockets ({e}); af_xdp cases need CONFIG_XDP_SOCKETS")


def memif_socket_path(h, work):
    path = os.path.join(work, "memif.sock")
    if len(path) > 100:  # sun_path holds 108 bytes
        path = f"/tmp/uroce-nt-{os.getpid()}-memif.sock"
    if os.path.exists(path):
        os.unlink(path)  # a stale socket makes the memif server's probe fail
    h.defer(f"remove {path}", lambda: os.path.exists(path) and os.unlink(path))
    return path


def run(name, perf, dump, oracle_py, work):
    case = CASES[name]
    harness.require_root()
    os.makedirs(work, exist_ok=True)
    if case.port == "af_xdp":
        af_xdp_possible()
    args = [*case.args, "--verify"]
    with Harness(name.replace("_", "")[:20]) as h:
        topo = None
        if case.port == "memif":
            sock = memif_socket_path(h, work)
            spec = PairSpec(None, None, memif_vdev("server", sock), memif_vdev("client", sock),
                            "10.79.0.1", "10.79.0.2", "127.0.0.1", tcp_port=free_tcp_port())
        else:
            topo = Topology(h, work, mtu=case.mtu, imp=case.imp, ctl_link=(case.port == "af_xdp"))
            s, c = topo.server, topo.client
            if case.port == "af_xdp":
                sdev, cdev = af_xdp_vdev(s.dev), af_xdp_vdev(c.dev)
            else:
                netem = topo.backend == "netem"
                sdev, cdev = af_packet_vdev(s.dev, case.mtu, netem), af_packet_vdev(c.dev, case.mtu, netem)
            spec = PairSpec(s.ns, c.ns, sdev, cdev, s.roce_ip, c.roce_ip, s.tcp_ip)
        pcap = os.path.join(work, "client.pcap")
        print(f"{name}: uroce-perf {case.test} {' '.join(args)} over {case.port}"
              + (f", veth MTU {case.mtu}" if topo else "")
              + (f", faults: {case.imp} ({topo.backend})" if topo and topo.backend else ""))
        t0 = time.monotonic()
        server, client = run_pair(h, work, perf, case.test, args, spec, client_pcap=pcap, deadline_s=DEADLINE_S)
        t_run = time.monotonic() - t0
        if case.port == "af_xdp" and (server.proc.returncode or client.proc.returncode):
            out = server.proc.output() + client.proc.output()
            if "Error attaching XDP program" in out:  # libxdp's words when the kernel says no
                raise Skip("the kernel refused to attach an XDP program to the veth:\n" + out[-1500:])
        check_pair(server, client, case.kind, verify=True, memif=(case.port == "memif"), raw=case.raw)
        if topo:
            left = leftovers([(s.ns, s.dev), (c.ns, c.dev)], [server.proc.p.pid, client.proc.p.pid])
            if left:
                raise Failure("after the run:\n" + "\n".join(left))
        if case.port == "af_packet" and case.mtu > 1500:
            for sd in (server, client):
                if SLOTS_NOTICE not in sd.proc.output():
                    raise Failure(f"{sd.name}: jumbo af_packet without framesz/blocksz, but no line "
                                  f"'... {SLOTS_NOTICE} ...':\n{sd.proc.describe()}")
        if case.client_says and case.client_says not in client.proc.output().splitlines():
            raise Failure(f"client: no line '{case.client_says}':\n{client.proc.describe()}")
        report, dropped, through = topo.impairment_report() if topo else ("", 0, 0)
        for sd in (server, client):
            print(f"  {sd.name}: {sd.sent} packets sent, {sd.received} received, "
                  f"{sd.retransmitted} retransmitted, verified: {sd.verified}")
        if report:
            print("  " + report.replace("\n", "\n  "))
        if topo and topo.backend and through == 0:
            raise Failure(f"no RoCE frame went through the impairment ({topo.backend}): the faults were not applied")
        if case.expect_retransmits:
            if dropped == 0:
                raise Failure(f"loss {case.imp.loss}% configured but the link dropped no frame")
            if server.retransmitted + client.retransmitted == 0:
                raise Failure(f"the link dropped {dropped} RoCE frames but neither side retransmitted anything")
        mac = mac_of(topo.client.ns, topo.client.dev) if topo else None
        t0 = time.monotonic()
        n, lines = check_capture(dump, oracle_py, pcap, case.pmtu, mac, spec.client_ip,
                                 link_corrupts=bool(case.imp.corrupt), expect_roce=not case.raw)
        for ln in lines:
            print("  " + ln)
        print(f"  time: {t_run:.1f} s both uroce-perf processes, {time.monotonic() - t0:.1f} s capture checks")
        if not case.imp.any() and n != client.sent + client.received:
            raise Failure(f"the client's capture holds {n} RoCE packets, but it counted "
                          f"{client.sent} sent + {client.received} received")
    print(f"PASS: {name}")


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return
    if len(sys.argv) != 6 or sys.argv[1] not in CASES:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    name, perf, dump, oracle_py, work = sys.argv[1:]
    harness.main_wrapper(lambda: run(name, perf, dump, oracle_py, work))


if __name__ == "__main__":
    main()
