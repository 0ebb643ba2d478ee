#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Soak: long runs of uroce processes over lossy veth links, watched for growth.

usage: soak.py MINUTES UROCE_PERF UROCE_PINGPONG WORKDIR [UROCED]

Two links, each a veth pair between two network namespaces with LOSS_PCT %
of RoCE frames dropped each way (tc netem, or tests/netns/relay.py where the
kernel has no netem; topology.py chooses):

  long:  one uroce-perf write_bw pair, -q 4, --run_infinitely, for the whole
         run. The client prints a row and a 'resources:' line (RSS, mbufs in
         use over every mempool, DPDK memzones, DPDK heap bytes) every
         SAMPLE_S seconds; the RSS of the server is read from /proc.
  churn: short pairs one after another, each new processes and new QPs
         (each given 120 s: a loaded machine slows the lossy links a lot):
         send_bw -q 2, read_bw -q 2, atomic_bw, write_lat, send_lat,
         read_lat, ibv_rc_pingpong-style uroce-pingpong, all with --verify
         where the tool has it; every fifth pair is ended by SIGTERM in the
         middle of its transfer (a disconnect) instead of running out.
         Each finished pair must exit 0 and verify its data, and no pair may
         leave its EAL runtime directory behind.

  daemon: with UROCED, one uroced (a net_ring port) for the whole run and,
         after each churn pair, DAEMON_CLIENTS_PER_PAIR short clients of it: uroce-perf --daemon
         (both ends in one process) running DAEMON_CHURN's tests with
         --verify, every other one killed with SIGKILL in the middle of its
         transfer. The daemon must outlive them all; between clients its RSS
         and its open descriptors are sampled.

Growth: for each series of the long-lived pair (and of the daemon), the least-squares slope over
the second half of the samples (the first half is warm-up: pools and caches
fill), times the length of that half, must stay within a bound: RSS
RSS_BOUND_KB, mbufs in use MBUF_BOUND, memzones 0, heap bytes HEAP_BOUND.
The summary prints every series' first, last, max and projected growth.
Exit 0 pass, 1 fail (growth, a failed pair, the long pair died), 77 skip.
"""

import os
import re
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))

import harness  # noqa: E402
from harness import Failure, Harness  # noqa: E402
from impair import Impairment  # noqa: E402
from perf_run import PairSpec, af_packet_vdev, check_pair, leftovers, run_pair  # noqa: E402
from procs import Proc, wait_all, wait_listening  # noqa: E402
from topology import Topology  # noqa: E402

LOSS_PCT = 0.5
SAMPLE_S = 5
RSS_BOUND_KB = 4096      # 4 MiB over the judged half
MBUF_BOUND = 512         # a burst in flight more or less: not growth
HEAP_BOUND = 1 << 20
# -u 18: 1.07 s per retransmission timeout (4.096 us << 18), 7 retries: a
# link silent for several seconds (the relay starved on a loaded machine)
# is ridden out instead of ending the QP with "retry counter exceeded".
QP_TIMEOUT = ["-u", "18"]
LONG_PORT = 18600
CHURN_PORT = 18700

# uroce-perf through the daemon: (test, args); the killed ones run -D 30.
DAEMON_CHURN = [
    ("write_bw", ["-q", "2", "-s", "4096"]),
    ("send_bw", ["-s", "1024", "--use-srq"]),
    ("read_bw", ["-s", "65536"]),
    ("atomic_bw", []),
    ("send_lat", ["-s", "64"]),
]
DAEMON_CLIENTS_PER_PAIR = 4  # a churn pair takes tens of seconds, a daemon client one or two
DAEMON_FD_BOUND = 2      # descriptors between clients: the same every time

RESOURCES = re.compile(r"^resources: rss_kb=(\d+) mbufs_in_use=(\d+) memzones=(\d+) heap_bytes=(\d+)$", re.M)

CHURN = [
    ("perf", "send_bw", ["-q", "2", "-n", "2000", "-s", "1024"], "bw"),
    ("perf", "read_bw", ["-q", "2", "-n", "2000", "-s", "4096"], "bw"),
    ("perf", "atomic_bw", ["-n", "2000"], "bw"),
    ("perf", "write_lat", ["-n", "1000", "-s", "64"], "lat"),
    ("perf", "send_lat", ["-n", "1000", "-s", "64"], "lat"),
    ("perf", "read_lat", ["-n", "1000", "-s", "64"], "lat"),
    ("pingpong", None, ["-n", "500", "-s", "4096"], None),
]


def slope(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return 0.0 if den == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            m = re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M)
            return int(m.group(1)) if m else None
    except OSError:
        return None


def spec_of(topo, port):
    s, c = topo.server, topo.client
    netem = topo.backend == "netem"
    return PairSpec(s.ns, c.ns, af_packet_vdev(s.dev, 1500, netem), af_packet_vdev(c.dev, 1500, netem),
                    s.roce_ip, c.roce_ip, s.tcp_ip, tcp_port=port)


def start_pair(h, work, common, spec, tag):
    """Server, then (once it listens) client, each on its side of spec;
    named and logged to WORK/TAGserver.out, WORK/TAGclient.out."""
    server = Proc(h, f"{tag}server", common + ["--dev", spec.server_dev, "--ip", spec.server_ip],
                  os.path.join(work, f"{tag}server.out"), ns=spec.server_ns)
    wait_listening(server, spec.server_ns, spec.tcp_port, 20)
    client = Proc(h, f"{tag}client", common + ["--dev", spec.client_dev, "--ip", spec.client_ip, spec.server_addr],
                  os.path.join(work, f"{tag}client.out"), ns=spec.client_ns)
    return [server, client]


class Long:
    """The long-lived write_bw pair and its samples."""

    def __init__(self, h, work, perf, spec):
        common = [perf, "write_bw", "-q", "4", "-s", "8192", "--run_infinitely", "-D", str(SAMPLE_S),
                  "--resources", "-p", str(spec.tcp_port)] + QP_TIMEOUT
        self.server, self.client = start_pair(h, work, common, spec, "long-")
        self.server_rss = []  # (t, kB)
        self.t0 = time.monotonic()

    def alive(self):
        return self.server.running() and self.client.running()

    def sample_server(self):
        # The namespace's process is `ip netns exec`'s exec: the same pid.
        kb = rss_kb(self.server.p.pid)
        if kb is not None:
            self.server_rss.append((time.monotonic() - self.t0, kb))

    def client_samples(self):
        rows = RESOURCES.findall(self.client.output())
        return [tuple(int(v) for v in r) for r in rows]

    def stop(self):
        """SIGINT to the client ends --run_infinitely cleanly; the server follows."""
        if self.client.running():
            self.client.p.send_signal(signal.SIGINT)
        wait_all([self.server, self.client], 30)


def churn_once(h, work, perf, pingpong, spec, n):
    tool, test, args, kind = CHURN[n % len(CHURN)]
    disconnect = n % 5 == 4 and tool == "perf"
    label = f"{test or 'pingpong'}{' (SIGTERM mid-run)' if disconnect else ''}"
    if tool == "pingpong":
        procs = start_pair(h, work, [pingpong] + args + ["-p", str(spec.tcp_port)], spec, "pp-")
    elif disconnect:
        # A -D run long enough to be in the middle of its transfer when the
        # signal comes.
        no_n = [a for i, a in enumerate(args) if a != "-n" and (i == 0 or args[i - 1] != "-n")]
        procs = start_pair(h, work, [perf, test] + no_n + QP_TIMEOUT + ["-D", "30", "-p", str(spec.tcp_port)],
                           spec, "")
    else:
        server, client = run_pair(h, work, perf, test, args + QP_TIMEOUT + ["--verify"], spec, deadline_s=120)
        check_pair(server, client, kind, verify=True)
        procs = [server.proc, client.proc]
    if disconnect:
        time.sleep(2)
        for p in procs:
            if not p.running():
                raise Failure(f"{label}: ended before the signal:\n{p.describe()}")
            p.p.send_signal(signal.SIGTERM)
        wait_all(procs, 15, grace_after_failure_s=15)
        for p in procs:
            if p.running():
                raise Failure(f"{label}: still running 15 s after SIGTERM:\n{p.describe()}")
    elif tool == "pingpong":
        wait_all(procs, 120)
        for p in procs:
            if p.returncode != 0:
                raise Failure(f"{label}: failed:\n" + "\n".join(q.describe() for q in procs))
    left = leftovers([], [p.p.pid for p in procs])
    if left:
        raise Failure(f"{label}: " + "\n".join(left))
    return label


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


class Daemon:
    """uroced on a net_ring port, and its short-lived clients."""

    def __init__(self, h, work, uroced, perf):
        self.work, self.perf = work, perf
        self.sock = os.path.join(work, "uroced.sock")
        self.proc = Proc(h, "uroced", [uroced, "--dev", "net_ring0", "--ip", "10.250.0.1", "--socket", self.sock,
                                       "--file-prefix", f"uroced-soak-{os.getpid()}", "--eal", "--no-huge -m 512"],
                         os.path.join(work, "uroced.out"))
        end = time.monotonic() + 20
        while not os.path.exists(self.sock):
            if not self.proc.running() or time.monotonic() > end:
                raise Failure("uroced did not listen:\n" + self.proc.describe())
            time.sleep(0.1)
        self.t0 = time.monotonic()
        self.rss, self.fds = [], []  # (t, value)
        self.h, self.n, self.killed = h, 0, 0

    def client(self):
        """One client; every other one is killed mid-transfer."""
        test, args = DAEMON_CHURN[self.n % len(DAEMON_CHURN)]
        kill = self.n % 2 == 1
        self.n += 1
        argv = [self.perf, test, "--daemon", self.sock] + args + (["-D", "30"] if kill else ["-n", "2000", "--verify"])
        c = Proc(self.h, f"dclient{self.n}", argv, os.path.join(self.work, "client.out"))
        if kill:
            time.sleep(1)
            if not c.running():
                raise Failure(f"daemon client {test}: ended before the kill:\n{c.describe()}")
            c.kill(signal.SIGKILL)
            self.killed += 1
        else:
            wait_all([c], 60)
            if c.returncode != 0 or "data verified" not in c.output():
                raise Failure(f"daemon client {test}: failed:\n{c.describe()}")
            c.kill()  # gone already: closes its log (a long soak runs thousands)
        if not self.proc.running():
            raise Failure("uroced ended:\n" + self.proc.describe())

    def sample(self):
        t = time.monotonic() - self.t0
        kb, fds = rss_kb(self.proc.p.pid), fd_count(self.proc.p.pid)
        if kb is not None:
            self.rss.append((t, kb))
        if fds is not None:
            self.fds.append((t, fds))

    def stop(self):
        self.proc.stop(20)
        if self.proc.returncode != 0:
            raise Failure("uroced did not stop cleanly on SIGTERM:\n" + self.proc.describe())


def judge(name, series, bound, unit):
    """series: [(t, v)]. Returns (line, ok)."""
    if len(series) < 4:
        return f"  {name}: {len(series)} samples, too few to judge", False
    half = series[len(series) // 2:]
    xs, ys = [t for t, _ in half], [v for _, v in half]
    s = slope(xs, ys)
    growth = s * (xs[-1] - xs[0])
    ok = growth <= bound
    line = (f"  {name}: first {series[0][1]} {unit}, last {series[-1][1]} {unit}, max {max(v for _, v in series)} "
            f"{unit}, second-half slope {s * 60:+.1f} {unit}/min, growth over it {growth:+.0f} {unit} "
            f"(bound {bound}) {'ok' if ok else 'GROWING'}")
    return line, ok


def run(minutes, perf, pingpong, work, uroced=None):
    harness.require_root()
    os.makedirs(work, exist_ok=True)
    end = time.monotonic() + minutes * 60
    with Harness("soak") as h:
        imp = Impairment(loss=LOSS_PCT, seed=5)
        long_dir, churn_dir = os.path.join(work, "long"), os.path.join(work, "churn")
        os.makedirs(long_dir, exist_ok=True)
        os.makedirs(churn_dir, exist_ok=True)
        # Two topologies, two sets of namespaces: their names differ by role.
        topo_long = Topology(_Tagged(h, "l"), long_dir, imp=imp)
        topo_churn = Topology(_Tagged(h, "c"), churn_dir, imp=imp)
        print(f"soak: {minutes} min; loss {LOSS_PCT} % each way on both links "
              f"({topo_long.backend}); samples every {SAMPLE_S} s")
        long = Long(h, long_dir, perf, spec_of(topo_long, LONG_PORT))
        daemon = None
        if uroced:
            daemon_dir = os.path.join(work, "daemon")
            os.makedirs(daemon_dir, exist_ok=True)
            daemon = Daemon(h, daemon_dir, uroced, perf)
        churn_spec = spec_of(topo_churn, CHURN_PORT)
        n, done = 0, {}
        next_sample = time.monotonic()
        while time.monotonic() < end:
            if not long.alive():
                raise Failure("the long-lived pair ended:\n" + long.server.describe() + long.client.describe())
            label = churn_once(h, churn_dir, perf, pingpong, churn_spec, n)
            done[label] = done.get(label, 0) + 1
            n += 1
            for _ in range(DAEMON_CLIENTS_PER_PAIR if daemon else 0):
                daemon.client()
            if time.monotonic() >= next_sample:
                long.sample_server()
                if daemon:
                    daemon.sample()
                next_sample = time.monotonic() + SAMPLE_S
        long.sample_server()
        alive = long.alive()
        samples = long.client_samples()
        long.stop()
        if not alive:
            raise Failure("the long-lived pair ended:\n" + long.server.describe() + long.client.describe())
        rep, dropped, through = topo_long.impairment_report()
        print(f"churn: {n} pairs: " + ", ".join(f"{v} {k}" for k, v in sorted(done.items())))
        if daemon:
            daemon.sample()
            daemon.stop()
            print(f"daemon: {daemon.n} clients of one uroced, {daemon.killed} of them killed with SIGKILL mid-transfer")
        print("long pair (write_bw -q 4, --run_infinitely): " + rep.replace("\n", "\n  "))
        if through == 0 or dropped == 0:
            raise Failure(f"the lossy link dropped {dropped} of {through} RoCE frames: loss was not applied")
        t = [SAMPLE_S * (i + 1) for i in range(len(samples))]
        checks = [
            judge("client RSS", list(zip(t, [s[0] for s in samples])), RSS_BOUND_KB, "kB"),
            judge("server RSS", long.server_rss, RSS_BOUND_KB, "kB"),
            judge("client mbufs in use", list(zip(t, [s[1] for s in samples])), MBUF_BOUND, "mbufs"),
            judge("client memzones", list(zip(t, [s[2] for s in samples])), 0, "zones"),
            judge("client DPDK heap", list(zip(t, [s[3] for s in samples])), HEAP_BOUND, "B"),
        ]
        if daemon:
            checks += [judge("uroced RSS", daemon.rss, RSS_BOUND_KB, "kB"),
                       judge("uroced descriptors", daemon.fds, DAEMON_FD_BOUND, "fds")]
        for line, _ in checks:
            print(line)
        bad = [line for line, ok in checks if not ok]
        if bad:
            raise Failure("growth or too few samples:\n" + "\n".join(bad))
    print(f"PASS: soak {minutes} min, {n} churn pairs, {len(samples)} samples of the long-lived pair")


class _Tagged:
    """A view of the harness whose namespaces carry a suffix, so that two
    topologies in one harness get names of their own."""

    def __init__(self, h, tag):
        self._h, self._tag = h, tag

    def new_netns(self, role):
        return self._h.new_netns(f"{role}{self._tag}")

    def __getattr__(self, name):
        return getattr(self._h, name)


def main():
    if len(sys.argv) not in (5, 6):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        minutes = float(sys.argv[1])
    except ValueError:
        minutes = -1
    if minutes <= 0:
        print("soak: MINUTES must be a positive number", file=sys.stderr)
        sys.exit(2)
    harness.main_wrapper(lambda: run(minutes, *sys.argv[2:]))  # UROCED optional


if __name__ == "__main__":
    main()
