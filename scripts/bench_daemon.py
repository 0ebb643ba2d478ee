#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""uroce-perf through uroced next to uroce-perf in-process, side by side in
each round, and the CPU an idle daemon with idle clients takes.

    scripts/bench_daemon.py [BUILD_DIR]             # default: build; about 2 minutes
    scripts/bench_daemon.py --rounds 5 [BUILD_DIR]
    scripts/bench_daemon.py --smoke [BUILD_DIR]     # tiny runs: the script works, no figures

Both forms have both ends of the test on one host and no wire between them:
  * in-process: `uroce-perf TEST --loopback`, the two endpoints (each with its
    engine) in one process, joined by the ring-PMD pair, on the last CPU;
  * through the daemon: `uroce-perf TEST --daemon SOCKET`, both ends clients of
    one uroced (their QPs meet in its engine) on the first CPU, the daemon on
    the last (its `--lcores`).
A round runs every case in both forms back to back; the table gives the
median over rounds of each figure and of the ratio taken within each round
(this machine's speed drifts between rounds). Then `daemon_peer SOCKET hold`
keeps a connected pair of clients idle while the daemon's CPU time is read
from /proc for 10 s, with the default idle_sleep_us and with longer ones
(IDLE_SLEEP_US, a daemon each).

Needs root (DPDK's EAL) and a build with uroced, uroce-perf and the daemon
tests. Prints a Markdown report on stdout; exit 0, 1 when a run failed, 2 on
a usage error, 77 when it cannot run here.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CASES = [
    # (test, args, what the row compares)
    ("write_bw", ["-s", "64"], "rate"),
    ("send_bw", ["-s", "64"], "rate"),
    ("write_bw", ["-s", "65536"], "bw"),
    ("read_bw", ["-s", "65536"], "bw"),
    ("write_lat", ["-s", "8"], "lat"),
    ("send_lat", ["-s", "8"], "lat"),
]
# uroced's --idle-sleep-us values whose idle cost is read: the default first.
IDLE_SLEEP_US = [1000, 10000, 50000]


class Failed(Exception):
    pass


def perf(cmd, out, timeout=120):
    p = subprocess.run(cmd + ["--out_json_file", out], capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise Failed(f"{' '.join(cmd)}: exit {p.returncode}\n" + (p.stdout + p.stderr)[-1500:])
    with open(out) as f:
        r = json.load(f).get("results")
    if not r:
        raise Failed(f"{' '.join(cmd)}: no result")
    return r


def figure(kind, r):
    if kind == "rate":
        return r["MsgRate"]
    if kind == "bw":
        return r["BW_average"]
    return r["t_typical"]


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (whole process)


class Daemon:
    def __init__(self, uroced, tmp, cpu, idle_us=IDLE_SLEEP_US[0]):
        self.sock = os.path.join(tmp, f"uroced-{idle_us}.sock")
        self.log = open(os.path.join(tmp, f"uroced-{idle_us}.log"), "w+")
        self.proc = subprocess.Popen(
            [uroced, "--dev", "net_ring0", "--ip", "10.0.0.1", "--socket", self.sock, "--lcores", str(cpu),
             "--file-prefix", f"bench-daemon-{os.getpid()}", "--idle-sleep-us", str(idle_us),
             "--eal", "--no-huge -m 512"],
            stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(100):
            if os.path.exists(self.sock):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        self.log.seek(0)
        raise Failed("uroced did not listen:\n" + self.log.read()[-1500:])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def idle_cpu(daemon, peer, seconds):
    """The daemon's share of one CPU while a connected pair of clients idles."""
    hold = subprocess.Popen([peer, daemon.sock, "hold"], stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 30
        line = ""
        while time.time() < deadline and not line.startswith("hold:"):
            line = hold.stdout.readline()
            if not line and hold.poll() is not None:
                raise Failed("daemon_peer hold ended before holding")
        if not line.startswith("hold:"):
            raise Failed("daemon_peer hold did not connect")
        time.sleep(1)
        hz = os.sysconf("SC_CLK_TCK")
        before = cpu_ticks(daemon.proc.pid)
        time.sleep(seconds)
        return (cpu_ticks(daemon.proc.pid) - before) / hz / seconds
    finally:
        hold.kill()
        hold.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.rounds < 1:
        print("bench_daemon.py: --rounds must be at least 1", file=sys.stderr)
        return 2
    b = os.path.abspath(a.build)
    uroced, perf_bin, peer = (os.path.join(b, p) for p in
                              ("apps/uroced/uroced", "apps/uroce-perf/uroce-perf", "tests/daemon/daemon_peer"))
    for p in (uroced, perf_bin, peer):
        if not os.access(p, os.X_OK):
            print(f"bench_daemon.py: {p} is not built", file=sys.stderr)
            return 77
    if os.geteuid() != 0:
        print("bench_daemon.py: needs root (DPDK's EAL)", file=sys.stderr)
        return 77
    cpus = sorted(os.sched_getaffinity(0))
    first, last = cpus[0], cpus[-1]
    pin = (lambda cpu: ["taskset", "-c", str(cpu)]) if shutil.which("taskset") else (lambda cpu: [])
    dur = ["-n", "200"] if a.smoke else ["-D", "2"]
    iters = ["-n", "200"] if a.smoke else ["-n", "20000"]
    rounds = 1 if a.smoke else a.rounds
    results = {i: {"in": [], "daemon": []} for i in range(len(CASES))}
    with tempfile.TemporaryDirectory(prefix="bench-daemon-") as tmp:
        out = os.path.join(tmp, "r.json")
        daemon = Daemon(uroced, tmp, last)
        try:
            for _ in range(rounds):
                for i, (test, args, kind) in enumerate(CASES):
                    extra = args + (iters if kind == "lat" else dur)
                    r_in = perf(pin(last) + [perf_bin, test, "--loopback"] + extra, out)
                    r_d = perf(pin(first) + [perf_bin, test, "--daemon", daemon.sock] + extra, out)
                    results[i]["in"].append(figure(kind, r_in))
                    results[i]["daemon"].append(figure(kind, r_d))
            idle = [idle_cpu(daemon, peer, 1 if a.smoke else 10)]
        finally:
            daemon.stop()
        for us in IDLE_SLEEP_US[1:]:
            d = Daemon(uroced, tmp, last, us)
            try:
                idle.append(idle_cpu(d, peer, 1 if a.smoke else 10))
            finally:
                d.stop()
    print(f"{rounds} round(s); in-process on CPU {last}; through uroced: the client on CPU {first}, "
          f"the daemon on CPU {last}.\n")
    print("| test | in-process | through uroced | through uroced / in-process, within each round |")
    print("| --- | --- | --- | --- |")
    for i, (test, args, kind) in enumerate(CASES):
        r = results[i]
        unit = {"rate": "M msg/s", "bw": "MB/s", "lat": "µs t_typical"}[kind]
        med_in, med_d = statistics.median(r["in"]), statistics.median(r["daemon"])
        if kind == "lat":
            diffs = [d - x for x, d in zip(r["in"], r["daemon"])]
            rel = f"+{statistics.median(diffs):.2f} µs (rounds: {', '.join(f'{d:+.2f}' for d in diffs)})"
        else:
            ratios = [d / x for x, d in zip(r["in"], r["daemon"]) if x > 0]
            rel = f"{statistics.median(ratios):.2f}× (rounds: {', '.join(f'{q:.2f}' for q in ratios)})"
        fmt = "{:.2f}" if kind != "bw" else "{:.0f}"
        print(f"| `{test} {' '.join(args)}` | {fmt.format(med_in)} {unit} | {fmt.format(med_d)} {unit} | {rel} |")
    print(f"\nAn idle daemon with a connected pair of idle clients (utime + stime of uroced over "
          f"{1 if a.smoke else 10} s):\n")
    print("| `idle_sleep_us` | share of one CPU |")
    print("| ---: | ---: |")
    for us, share in zip(IDLE_SLEEP_US, idle):
        print(f"| {us}{' (default)' if us == IDLE_SLEEP_US[0] else ''} | {100 * share:.1f} % |")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failed as e:
        print(f"bench_daemon.py: {e}", file=sys.stderr)
        sys.exit(1)
