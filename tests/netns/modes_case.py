#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""perftest's run modes and a mismatched peer, between two uroce-perf processes.

usage: modes_case.py SCENARIO UROCE_PERF WORKDIR

  bidir-write_bw, bidir-read_bw, bidir-send_bw
        -b: both sides send, both print a row whose #iterations is the sum of
        both directions, and each verifies what the other sent (--verify)
  reversed-write_bw, reversed-send_bw
        --reversed: the TCP server sends; the client holds the data
  infinite-write_bw
        --run_infinitely -D 1: the client prints a row a second; after SIGINT
        both end with exit 0 and the server prints the client's last row
  qp-mismatch
        client -q 4, server -q 1: both exit 1 within a few seconds (not the
        exchange's timeout) naming -q
  test-mismatch-write-read, test-mismatch-send-write, test-mismatch-write-send
        client write_bw / server read_bw, client send_bw / server write_bw,
        client write_bw / server send_bw: both exit 1 within a few seconds,
        one of them saying the peer likely runs another test
  send_bw-rows
        perftest's send_bw receiver prints a row of its own: both sides print
        one row with the size and the iterations
  ud-send_bw, ud-bidir-send_bw, ud-send_lat, ud-size-above-mtu
        -c UD (-q 2 for send_bw): the rows have the size (send_bw: both); a
        send_bw receiver's row counts what arrived, and any message missing
        is on a ' uroce: ... lost' line; -s above the path MTU runs at the
        MTU (perftest's cap); the receiving sides verify the payload
  uc-send_bw, uc-write_bw, uc-send_lat, uc-write_lat
        -c UC, multi-packet messages (-q 2 for the bandwidth tests): the rows
        have the size and the iterations (a send_bw receiver's may be short
        by what its ' uroce: ... lost' line counts); the payload is verified

Exit 0 pass, 1 fail, 77 skip (not root).
"""

import os
import re
import signal
import sys
import time

import harness
from harness import Failure, Harness
from perf_run import PairSpec, af_packet_vdev
from procs import Proc, wait_all, wait_listening
from topology import Topology

ROW = re.compile(r"^ (\d+) +(\d+) +[\d.]+ +[\d.]+\s+[\d.]+", re.M)
BOUND_S = 6  # a mismatch ends both sides well before the exchange's 10 s timeout

SCENARIOS = {
    # name: (server test, client test, common args, server-only args, client-only args)
    "bidir-write_bw": ("write_bw", "write_bw", ["-b", "-n", "2000", "-s", "4096", "--verify"], [], []),
    "bidir-read_bw": ("read_bw", "read_bw", ["-b", "-n", "1000", "-s", "4096", "--verify"], [], []),
    "bidir-send_bw": ("send_bw", "send_bw", ["-b", "-n", "2000", "-s", "1024", "--verify"], [], []),
    "reversed-write_bw": ("write_bw", "write_bw", ["--reversed", "-n", "2000", "-s", "4096", "--verify"], [], []),
    "reversed-send_bw": ("send_bw", "send_bw", ["--reversed", "-n", "2000", "-s", "1024", "--verify"], [], []),
    "infinite-write_bw": ("write_bw", "write_bw", ["-s", "4096", "-D", "1"], [], ["--run_infinitely"]),
    "qp-mismatch": ("write_bw", "write_bw", ["-n", "100"], ["-q", "1"], ["-q", "4"]),
    "test-mismatch-write-read": ("read_bw", "write_bw", ["-n", "1000"], [], []),
    "test-mismatch-send-write": ("write_bw", "send_bw", ["-n", "1000"], [], []),
    "test-mismatch-write-send": ("send_bw", "write_bw", ["-n", "1000"], [], []),
    "send_bw-rows": ("send_bw", "send_bw", ["-n", "2000", "-s", "4096", "--verify"], [], []),
    "ud-send_bw": ("send_bw", "send_bw", ["-c", "UD", "-q", "2", "-n", "2000", "-s", "1024", "-m", "1024",
                                          "--verify"], [], []),
    "ud-bidir-send_bw": ("send_bw", "send_bw", ["-c", "UD", "-b", "-n", "2000", "-s", "1000", "-m", "1024",
                                                "--verify"], [], []),
    "ud-send_lat": ("send_lat", "send_lat", ["-c", "UD", "-n", "1000", "-s", "1024", "-m", "1024", "--verify"],
                    [], []),
    "ud-size-above-mtu": ("send_bw", "send_bw", ["-c", "UD", "-n", "1000", "-s", "4096", "-m", "1024"], [], []),
    "uc-send_bw": ("send_bw", "send_bw", ["-c", "UC", "-q", "2", "-n", "2000", "-s", "5000", "-m", "1024",
                                          "--verify"], [], []),
    "uc-write_bw": ("write_bw", "write_bw", ["-c", "UC", "-q", "2", "-n", "2000", "-s", "5000", "-m", "1024",
                                            "--verify"], [], []),
    "uc-send_lat": ("send_lat", "send_lat", ["-c", "UC", "-n", "1000", "-s", "3000", "-m", "1024", "--verify"],
                    [], []),
    "uc-write_lat": ("write_lat", "write_lat", ["-c", "UC", "-n", "1000", "-s", "3000", "-m", "1024", "--verify"],
                     [], []),
}
LOST = re.compile(r"^ uroce: (\d+) B: (\d+) of (\d+) U[DC] messages (?:from the peer )?lost", re.M)


def start(h, work, perf, name, spec, topo):
    s_test, c_test, common, s_only, c_only = SCENARIOS[name]
    port = ["-p", str(spec.tcp_port)]
    s_argv = [perf, s_test, *common, *s_only, *port, "--dev", spec.server_dev, "--ip", spec.server_ip]
    c_argv = [perf, c_test, *common, *c_only, *port, "--dev", spec.client_dev, "--ip", spec.client_ip,
              spec.server_addr]
    srv = Proc(h, "server", s_argv, os.path.join(work, "server.out"), ns=topo.server.ns)
    wait_listening(srv, topo.server.ns, spec.tcp_port, 20)
    cli = Proc(h, "client", c_argv, os.path.join(work, "client.out"), ns=topo.client.ns)
    return srv, cli


# A latency row: #bytes #iterations t_min ...
LAT_ROW = re.compile(r"^ +\d+ +\d+ +([0-9.]+) ", re.M)


def rows(p):
    return [(int(m.group(1)), int(m.group(2))) for m in ROW.finditer(p.output())]


def both_ok(srv, cli):
    for p in (srv, cli):
        if p.returncode != 0:
            raise Failure("uroce-perf failed:\n" + srv.describe() + "\n" + cli.describe())


def check_bidir(name, srv, cli):
    both_ok(srv, cli)
    n = int(SCENARIOS[name][2][SCENARIOS[name][2].index("-n") + 1])
    for p in (srv, cli):
        r = rows(p)
        # perftest -b: the rates are both directions', #iterations this side's own.
        if len(r) != 1 or r[0][1] != n:
            raise Failure(f"{p.name}: expected one row of {n} iterations (this side's, as perftest counts), got {r}:\n"
                          + p.describe())
        if "; data verified" not in p.output():
            raise Failure(f"{p.name}: -b --verify: each side holds what the other sent, "
                          "but it printed no '; data verified':\n" + p.describe())
        print(f"  {p.name}: row {r[0]}, data verified")


def arg(name, flag):
    common = SCENARIOS[name][2]
    return common[common.index(flag) + 1]


def check_rows(name, srv, cli):
    """Both print one row of the size (UD: capped at -m) and the iterations;
    a UD receiver's may be short by what a ' uroce: ... lost' line counts."""
    both_ok(srv, cli)
    ud = "-c" in SCENARIOS[name][2] and arg(name, "-c") == "UD"
    size = min(int(arg(name, "-s")), int(arg(name, "-m"))) if ud else int(arg(name, "-s"))
    n = int(arg(name, "-n")) * int(arg(name, "-q") if "-q" in SCENARIOS[name][2] else 1)
    # -b: perftest's #iterations is this side's own count, the rates both directions'.
    # perftest's SEND and WRITE latency servers time their own posts and
    # print a row too; READ and atomic servers print none.
    test = SCENARIOS[name][0]
    for p in (srv, cli) if test.endswith("_bw") or test in ("send_lat", "write_lat") else (cli,):
        r = rows(p)
        lost = sum(int(m.group(2)) for m in LOST.finditer(p.output()))
        if len(r) != 1 or r[0][0] != size:
            raise Failure(f"{p.name}: expected one row of {size} B, got {r}:\n" + p.describe())
        if r[0][1] != n and not (p is srv and r[0][1] + lost == n):
            raise Failure(f"{p.name}: row of {r[0][1]} iterations, expected {n} ({lost} lost):\n" + p.describe())
        if test.endswith("_lat"):
            m = LAT_ROW.search(p.output())
            if not m or float(m.group(1)) <= 0:
                raise Failure(f"{p.name}: the latency row has no measured t_min:\n" + p.describe())
        print(f"  {p.name}: row {r[0]}" + (f", {lost} messages lost" if lost else ""))
    if "--verify" in SCENARIOS[name][2] and "; data verified" not in (srv.output() + cli.output()):
        raise Failure("--verify: no side said '; data verified':\n" + srv.describe() + "\n" + cli.describe())


def check_reversed(name, srv, cli):
    both_ok(srv, cli)
    # Both print a row: the sender's, and perftest's SEND receiver's own.
    for p in (srv, cli):
        if len(rows(p)) != 1:
            raise Failure(f"{p.name}: expected one row:\n" + p.describe())
    if "; data verified" not in cli.output():
        raise Failure("--reversed: the TCP client receives the data, so it verifies it; it did not:\n"
                      + cli.describe())
    if "messages completed" in cli.output() or "BW average" not in srv.output():
        raise Failure("--reversed: the server should run the test:\n" + srv.describe())
    print(f"  server sent, client verified; rows {rows(srv)} / {rows(cli)}")


def infinite(srv, cli):
    end = time.monotonic() + 20
    while len(rows(cli)) < 3:
        if not (srv.running() and cli.running()) or time.monotonic() > end:
            raise Failure("--run_infinitely: no third row within 20 s:\n" + srv.describe() + "\n" + cli.describe())
        time.sleep(0.1)
    os.kill(cli.p.pid, signal.SIGINT)
    wait_all([srv, cli], 10)
    both_ok(srv, cli)
    c_rows, s_rows = rows(cli), rows(srv)
    if len(s_rows) != 1 or s_rows[0] not in c_rows:
        raise Failure(f"the server should print the client's last row once: server {s_rows}, client {c_rows}:\n"
                      + srv.describe())
    print(f"  client printed {len(c_rows)} rows before SIGINT; both exit 0; server printed {s_rows[0]}")


def mismatch(name, srv, cli, t0):
    wait_all([srv, cli], 20, grace_after_failure_s=BOUND_S)
    took = time.monotonic() - t0
    for p in (srv, cli):
        if p.returncode != 1:
            raise Failure(f"{p.name}: expected exit 1, got {p.status()}:\n" + p.describe())
    if took > BOUND_S + 2:
        raise Failure(f"both ended only after {took:.1f} s (the exchange's timeout is 10 s):\n"
                      + srv.describe() + "\n" + cli.describe())
    want = "(-q)" if name == "qp-mismatch" else "another test"
    outs = {p.name: p.output() for p in (srv, cli)}
    if name == "qp-mismatch":
        missing = [n for n, o in outs.items() if want not in o]
        if missing:
            raise Failure(f"{missing} did not name the QP count ('{want}'):\n" + srv.describe() + "\n" + cli.describe())
    elif not any(want in o for o in outs.values()):
        raise Failure(f"neither side said the peer likely runs '{want}':\n" + srv.describe() + "\n" + cli.describe())
    for p in (srv, cli):
        last = [ln for ln in p.output().splitlines() if ln.startswith("uroce-perf:")]
        print(f"  {p.name} exit 1: {last[-1] if last else ''}")
    print(f"  both ended {took:.1f} s after the client started")


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in SCENARIOS:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    name, perf, work = sys.argv[1:]

    def body():
        harness.require_root()
        os.makedirs(work, exist_ok=True)
        with Harness(("md" + name.replace("-", "").replace("_", ""))[:20]) as h:
            topo = Topology(h, work)
            s, c = topo.server, topo.client
            spec = PairSpec(s.ns, c.ns, af_packet_vdev(s.dev, 1500, False), af_packet_vdev(c.dev, 1500, False),
                            s.roce_ip, c.roce_ip, s.tcp_ip)
            srv, cli = start(h, work, perf, name, spec, topo)
            t0 = time.monotonic()
            if name.startswith("infinite"):
                infinite(srv, cli)
            elif "mismatch" in name:
                mismatch(name, srv, cli, t0)
            else:
                wait_all([srv, cli], 40)
                if name.startswith("bidir"):
                    check_bidir(name, srv, cli)
                elif name.startswith("reversed"):
                    check_reversed(name, srv, cli)
                else:
                    check_rows(name, srv, cli)
        print(f"PASS: modes-{name}")

    harness.main_wrapper(body)


if __name__ == "__main__":
    main()
