#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Two uroce-perf WRITE streams through one ECN-marking bottleneck.

usage: run_bottleneck.py [--vm CACHE] none|dcqcn UROCE_PERF WORKDIR

none:  no congestion control: the queue overflows, frames are dropped and
       the senders retransmit.
dcqcn: --cc dcqcn on every process: CE marks become CNPs, the senders slow
       down, share the bottleneck fairly (Jain >= 0.9) and the AQM drops
       (almost) nothing.
--vm CACHE: the router is a qemu VM running Debian's kernel, whose egress is
       htb + a real `red ... ecn` (vm_router.py); CACHE is the VM image's
       cache (the interop suite's). Without it the router is a namespace of
       this host (bottleneck.py: red if the kernel has it, else a phantom
       queue). UROCE_BOTTLENECK_MBIT=0 with --vm: no qdisc at all, nothing
       asserted but the runs (to measure what the path forwards).
       UROCE_BOTTLENECK_PERF_ARGS replaces the path's own uroce-perf options
       (the VM's: -u 16), UROCE_BOTTLENECK_CC_ARGS the DCQCN ones.
Exit 0 pass, 1 fail, 77 skip (not root, uroce-perf has no --cc, or --vm and
qemu or the kernel package cannot be had).
"""

import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # tests/netns: the harness

import harness  # noqa: E402
from bottleneck import Bottleneck  # noqa: E402
from harness import Failure, Harness, Skip  # noqa: E402
from perf_run import UROCE_LINE  # noqa: E402
from procs import Proc, wait_all, wait_listening  # noqa: E402

RATE_MBIT = int(os.environ.get("UROCE_BOTTLENECK_MBIT", "40"))
# The bottleneck's packet limit: more than one window (128 packets) on top
# of what the ECN marker lets queue, less than two windows. Client 2 joins
# STAGGER_S after client 1, as in the simulated incast: started together,
# two unpaced windows would overflow it before any CNP could come back.
LIMIT_PKTS = 200
STAGGER_S = 1.5
# DCQCN's time constants are made for 10-100 Gb/s and microsecond RTTs;
# this bottleneck is 40 Mb/s and the processes share two busy cores, so the
# loop takes milliseconds. The paper preset (R_T clamped on every cut), with
# its clock and steps scaled to that: a 100 Mb/s ceiling (about what one
# af_packet sender reaches here), increase and alpha periods of 5 ms,
# additive/hyper steps of 1/5 Mb/s. UROCE_BOTTLENECK_CC_ARGS overrides it.
CC_SCALED = ["--cc", "dcqcn-paper", "--cc-param", "line_rate_mbps=100", "--cc-param", "rpg_time_reset=5000",
             "--cc-param", "dce_tcp_rtt=5000", "--cc-param", "rpg_ai_rate=1", "--cc-param", "rpg_hai_rate=5"]
DURATION_S = 8
DEADLINE_S = 60       # meson's timeout is 90 s
JAIN_MIN = 0.9
# BW rows: #bytes #iterations BW peak BW average MsgRate
BW_ROW = re.compile(r"^ (\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", re.M)
# uroce-perf's per-QP congestion-control line (cc_report.cpp).
CNP_LINE = re.compile(r"CNPs sent (\d+) received (\d+)")


def jain(x):
    s, s2 = sum(x), sum(v * v for v in x)
    return s * s / (len(x) * s2) if s2 > 0 else 0.0


def has_cc_option(perf):
    p = subprocess.run([perf, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=20)
    return "--cc" in p.stdout


def make_net(h, vm_cache, work):
    if not vm_cache:
        return Bottleneck(h, RATE_MBIT, LIMIT_PKTS)
    from vm_router import VmBottleneck
    return VmBottleneck(h, vm_cache, work, RATE_MBIT, LIMIT_PKTS)


def run(mode, perf, work, vm_cache=None):
    harness.require_root()
    os.makedirs(work, exist_ok=True)
    cc = []
    if mode == "dcqcn":
        if not has_cc_option(perf):
            raise Skip("uroce-perf has no --cc option: DCQCN is not integrated in this build")
        cc = os.environ.get("UROCE_BOTTLENECK_CC_ARGS", " ".join(CC_SCALED)).split()
    elif has_cc_option(perf):
        cc = ["--cc", "none"]
    name = f"dcqcn-{'red-vm' if vm_cache else 'bottleneck'}-{mode}"
    with Harness(f"dcqcn-{mode}") as h:
        net = make_net(h, vm_cache, work)
        extra = os.environ.get("UROCE_BOTTLENECK_PERF_ARGS")  # e.g. "-u 14": replaces net.perf_args
        args = ["write_bw", "-D", str(DURATION_S), "--timeout", "20"] + cc + (
            extra.split() if extra is not None else net.perf_args)
        print(f"bottleneck: {net.describe()}; uroce-perf {' '.join(args)}")
        servers, clients = [], []
        for i, srv in enumerate(net.servers):
            port = str(18515 + i)
            argv = [perf] + args + ["-p", port, "--dev", f"net_af_packet{i},iface={srv.dev}", "--ip", srv.roce_ip]
            servers.append(Proc(h, f"server{i + 1}", argv, os.path.join(work, f"server{i + 1}.out"), ns=srv.ns))
        for i, s in enumerate(servers):
            wait_listening(s, net.rcv, 18515 + i, 20)
        t0 = time.monotonic()
        for i, (snd, srv) in enumerate(zip(net.senders, net.servers)):
            if i > 0:
                time.sleep(STAGGER_S)
            argv = [perf] + args + ["-p", str(18515 + i), "--dev", f"net_af_packet0,iface={snd.dev}",
                                    "--ip", snd.roce_ip, srv.tcp_ip]
            clients.append(Proc(h, f"client{i + 1}", argv, os.path.join(work, f"client{i + 1}.out"), ns=snd.ns))
        wait_all(servers + clients, DEADLINE_S)
        elapsed = time.monotonic() - t0
        procs = servers + clients
        if any(p.returncode != 0 for p in procs):
            raise Failure("uroce-perf failed:\n" + "\n".join(p.describe() for p in procs))
        gbps, retx, cnps_sent, cnps_rx = [], 0, 0, 0
        for p in procs:
            out = p.output()
            m = UROCE_LINE.search(out)
            if not m:
                raise Failure(f"{p.name}: no ' uroce: N packets sent, ...' line:\n{p.describe()}")
            retx += int(m.group(3))
            for m in CNP_LINE.finditer(out):
                cnps_sent += int(m.group(1))
                cnps_rx += int(m.group(2))
        for c in clients:
            rows = BW_ROW.findall(c.output())
            if not rows:
                raise Failure(f"{c.name}: no BW result row:\n{c.describe()}")
            gbps.append(float(rows[-1][3]))  # BW average, MB/s
        sent, dropped, marks, qdisc = net.stats()
        fair = jain(gbps)
        print(f"  {elapsed:.1f} s; client BW average {', '.join(f'{g:.2f}' for g in gbps)} MB/s "
              f"(sum {sum(gbps) * 8:.1f} Mb/s of {RATE_MBIT}), Jain {fair:.3f}")
        print(f"  {net.aqm}: {sent} packets sent, {dropped} dropped, {marks} ECN marks"
              + (f" ({net.details})" if getattr(net, "details", None) else "")
              + f"; uroce: {retx} retransmitted, {cnps_sent} CNPs sent, {cnps_rx} CNPs received")
        with open(os.path.join(work, "qdisc.txt"), "w") as f:
            f.write(qdisc)
        if sent == 0:
            raise Failure("no packet went through the bottleneck qdisc")
        if net.aqm == "open":
            pass
        elif mode == "none":
            if dropped == 0:
                raise Failure(f"without congestion control the {net.aqm} queue dropped nothing "
                              f"(limit {LIMIT_PKTS} packets): no congestion?\n{qdisc}")
            if retx == 0:
                raise Failure(f"{dropped} frames dropped at the bottleneck but nobody retransmitted")
        else:
            if marks == 0:
                raise Failure(f"the {net.aqm} bottleneck marked no frame CE: no congestion signal\n{qdisc}")
            if cnps_sent == 0 or cnps_rx == 0:
                raise Failure(f"{marks} CE marks but {cnps_sent} CNPs sent, {cnps_rx} received:\n"
                              + "\n".join(p.describe(15) for p in procs))
            if fair < JAIN_MIN:
                raise Failure(f"unfair share of the bottleneck: Jain {fair:.3f} < {JAIN_MIN}")
            # Near zero, not zero: see DROP_PCT in bottleneck.py and vm_router.py.
            if dropped > max(5, sent * net.drop_pct // 100):
                raise Failure(f"with DCQCN the bottleneck still dropped {dropped} of {sent} frames "
                              f"(> {net.drop_pct} %)")
    print(f"PASS: {name}")


def main():
    argv, vm_cache = sys.argv[1:], None
    if argv[:1] == ["--vm"] and len(argv) > 1:
        vm_cache, argv = argv[1], argv[2:]
    if len(argv) != 3 or argv[0] not in ("none", "dcqcn"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    harness.main_wrapper(lambda: run(*argv, vm_cache=vm_cache))


if __name__ == "__main__":
    main()
