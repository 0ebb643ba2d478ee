#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The harness checks itself, without uroce: links, MTU, impairments,
deadlines and cleanup on every way out.

usage: selftest.py CASE WORKDIR
  links         kernel TCP across the veth (direct and control link); the MTU
                holds (a DF datagram of MTU-28 bytes passes, one byte more is refused)
  impair-netem  tc netem on the veth does what it is asked, to RoCE frames only
                (skip 77 when the kernel has no netem)
  impair-relay  the same for the userspace relay
  supervision   deadlines kill a hanging process; a failed peer ends the wait
  cleanup       namespaces and processes are gone after an exception, after
                SIGTERM (within meson's 0.5 s), and after SIGKILL (next sweep)
"""

import json
import os
import signal
import subprocess
import sys
import time

import harness
import impair
from harness import Failure, Harness, Skip, run
from impair import Impairment
from procs import Proc, wait_all, wait_listening
from topology import Topology

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable


def py_in(ns, code, timeout=15):
    return run(["ip", "netns", "exec", ns, PY, "-c", code], timeout=timeout, check=False)


def check_tcp(h, topo, work, tag):
    server = Proc(h, f"tcp-echo-{tag}", [PY, "-c",
        "import socket;s=socket.create_server(('%s',5555));c,_=s.accept();c.sendall(c.recv(100)[::-1])"
        % topo.server.tcp_ip], os.path.join(work, f"echo-{tag}.log"), ns=topo.server.ns)
    wait_listening(server, topo.server.ns, 5555, 10)
    rc, out = py_in(topo.client.ns,
        "import socket;c=socket.create_connection(('%s',5555),timeout=5);c.sendall(b'uroce');print(c.recv(100))"
        % topo.server.tcp_ip)
    if rc != 0 or "ecoru" not in out:
        raise Failure(f"[{tag}] TCP from the client's namespace to {topo.server.tcp_ip}:5555 failed: {out}")
    wait_all([server], 5)


def check_mtu(topo, tag):
    # IP_MTU_DISCOVER=IP_PMTUDISC_DO (10, 2): the kernel refuses datagrams over the link MTU.
    code = ("import socket,sys;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.setsockopt(0,10,2);"
            "s.connect(('%s',9));n=int(sys.argv[1])\n"
            "try:\n s.send(b'x'*n);print('sent')\nexcept OSError as e:\n print('refused',e.errno)")
    mtu = topo.mtu
    for n, want in ((mtu - 28, "sent"), (mtu - 27, "refused 90")):
        _, out = run(["ip", "netns", "exec", topo.client.ns, PY, "-c", code % topo.server.tcp_ip, str(n)],
                     check=False)
        if want not in out:
            raise Failure(f"[{tag}] a {n}-byte datagram on a {mtu}-byte link: expected '{want}', got: {out.strip()}")


def case_links(work):
    with Harness("links") as h:
        for mtu in (1500, 9000):
            topo = Topology(h, work, mtu=mtu)
            check_tcp(h, topo, work, f"direct-{mtu}")
            check_mtu(topo, f"direct-{mtu}")
            for ep in (topo.server, topo.client):
                run(["ip", "netns", "del", ep.ns])
        topo = Topology(h, work, ctl_link=True)
        check_tcp(h, topo, work, "ctl")
    print("links: kernel TCP over the data veth and over the control pair; MTU 1500 and 9000 hold")


def probe(h, topo, work, tag, count, dport, size=200):
    """Sends `count` numbered frames client -> server; returns what arrived."""
    out = os.path.join(work, f"probe-{tag}.json")
    rx = Proc(h, f"probe-rx-{tag}", [PY, os.path.join(HERE, "frameprobe.py"), "recv", topo.server.dev, out, "30"],
              os.path.join(work, f"probe-rx-{tag}.log"), ns=topo.server.ns)
    end = time.monotonic() + 10
    while "ready" not in rx.output():
        if not rx.running() or time.monotonic() > end:
            raise Failure(f"frame receiver did not start:\n{rx.describe()}")
        time.sleep(0.02)
    run(["ip", "netns", "exec", topo.client.ns, PY, os.path.join(HERE, "frameprobe.py"), "send",
         topo.client.dev, str(count), str(size), str(dport)], timeout=30)
    time.sleep(0.3)  # netem's delay and the relay's hold
    rx.stop(grace_s=5)
    with open(out) as f:
        return json.load(f)


def summarize(r, count):
    seqs = r["seqs"]
    unique = len(set(s for s in seqs if s < count))
    inversions = sum(1 for a, b in zip(seqs, seqs[1:]) if b < a)
    return dict(frames=r["frames"], received=len(seqs), unique=unique, lost=count - unique, duplicates=len(seqs) - unique,
                inversions=inversions, damaged=r["damaged"])


def expect(tag, stats, key, lo, hi):
    if not lo <= stats[key] <= hi:
        raise Failure(f"[{tag}] {key} = {stats[key]}, expected {lo}..{hi} ({stats})")


def check_impairments(backend, work):
    os.environ["UROCE_NETNS_IMPAIR"] = backend
    n = 2000
    # (impairment, checks): bounds hold for netem's unseeded randomness with
    # overwhelming probability (binomial, > 6 sigma) and for the relay's seed.
    plan = [
        ("loss", Impairment(loss=30), [("lost", 450, 750), ("duplicates", 0, 0), ("damaged", 0, 0)]),
        ("duplicate", Impairment(duplicate=30), [("lost", 0, 0), ("duplicates", 450, 750)]),
        ("corrupt", Impairment(corrupt=30), [("frames", n, n), ("damaged", 450, 750)]),
        ("reorder", Impairment(reorder=30), [("lost", 0, 0), ("duplicates", 0, 0), ("inversions", 100, n)]),
    ]
    for tag, imp, checks in plan:
        with Harness("imp") as h:
            topo = Topology(h, work, imp=imp)
            if topo.backend != backend:
                raise Failure(f"asked for {backend}, got {topo.backend}")
            st = summarize(probe(h, topo, work, tag, n, 4791), n)
            for key, lo, hi in checks:
                expect(f"{backend} {tag}", st, key, lo, hi)
            report, dropped, seen = topo.impairment_report()
            print(f"{backend} {imp}: {st}\n{report}")
            if backend == "relay" and tag == "loss" and dropped != st["lost"]:
                raise Failure(f"relay counted {dropped} drops, the receiver missed {st['lost']}")
    with Harness("imp") as h:  # only RoCE frames are impaired
        topo = Topology(h, work, imp=Impairment(loss=100))
        roce = summarize(probe(h, topo, work, "roce", 300, 4791), 300)
        other = summarize(probe(h, topo, work, "other", 300, 4792), 300)
        expect(f"{backend} loss 100% RoCE", roce, "lost", 300, 300)
        expect(f"{backend} loss 100% UDP/4792", other, "lost", 0, 0)
    print(f"{backend}: loss, duplicate, corrupt and reorder measured; only UDP/4791 is impaired")


def case_impair_netem(work):
    with Harness("nprobe") as h:
        if not impair.netem_available(h):
            raise Skip("this kernel cannot add a netem qdisc (no sch_netem, sch_prio or cls_u32); "
                       "the netns tests use the relay instead")
    check_impairments("netem", work)


def case_supervision(work):
    with Harness("sup") as h:
        ns = h.new_netns("a")
        hang = Proc(h, "hang", ["sleep", "30"], os.path.join(work, "hang.log"), ns=ns)
        t0 = time.monotonic()
        wait_all([hang], deadline_s=1.0)
        took = time.monotonic() - t0
        if not hang.timed_out or hang.running() or not 0.9 < took < 3:
            raise Failure(f"deadline: {hang.status()} after {took:.2f} s, expected a kill at 1 s")
        fail = Proc(h, "fail", ["sh", "-c", "echo broken; exit 3"], os.path.join(work, "fail.log"), ns=ns)
        peer = Proc(h, "peer", ["sleep", "30"], os.path.join(work, "peer.log"), ns=ns)
        t0 = time.monotonic()
        wait_all([fail, peer], deadline_s=20, grace_after_failure_s=0.5)
        took = time.monotonic() - t0
        if fail.returncode != 3 or "broken" not in fail.output() or not peer.timed_out or took > 3:
            raise Failure(f"failed peer: {fail.status()}, {peer.status()} after {took:.2f} s")
    print("supervision: a hanging process is killed at its deadline; a failure ends the peer's wait")


def namespaces_of(pid):
    try:
        return [n for n in os.listdir(harness.NETNS_DIR) if n.startswith(f"{harness.NS_PREFIX}{pid}-")]
    except OSError:
        return []


def pid_gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] == "Z"
    except OSError:
        return True


def hold(work):
    """Child of the cleanup case: builds a topology with a process, reports, waits."""
    def body():
        with Harness("hold") as h:
            topo = Topology(h, work)
            p = Proc(h, "sleeper", ["sleep", "60"], os.path.join(work, "sleeper.log"), ns=topo.client.ns)
            with open(os.path.join(work, "hold.json"), "w") as f:
                json.dump({"pid": os.getpid(), "sleeper": p.p.pid}, f)
            if sys.argv[3] == "raise":
                raise Failure("raised on purpose")
            time.sleep(60)
    harness.main_wrapper(body)


def case_cleanup(work):
    for how in ("raise", "SIGTERM", "SIGKILL"):
        info = os.path.join(work, "hold.json")
        if os.path.exists(info):
            os.unlink(info)
        child = subprocess.Popen([PY, os.path.abspath(__file__), "hold", work, how], start_new_session=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            end = time.monotonic() + 20
            while not os.path.exists(info) and child.poll() is None and time.monotonic() < end:
                time.sleep(0.02)
            time.sleep(0.1)
            with open(info) as f:
                held = json.load(f)
            if how != "raise":
                if not namespaces_of(child.pid):
                    raise Failure(f"{how}: the child made no namespaces")
                # As meson does on a timeout: the signal to the test's process group.
                os.killpg(child.pid, getattr(signal, how))
            t0 = time.monotonic()
            out, _ = child.communicate(timeout=10)
            took = time.monotonic() - t0
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        if how == "SIGKILL":
            if not namespaces_of(child.pid):
                raise Failure("SIGKILL: namespaces vanished although nobody could delete them")
            Harness("sweep").__enter__().cleanup()  # a new harness sweeps them
        elif how == "SIGTERM" and took > 0.5:
            raise Failure(f"SIGTERM: cleanup took {took:.2f} s; meson sends SIGKILL after 0.5 s")
        left = namespaces_of(child.pid)
        if left or not pid_gone(held["sleeper"]):
            raise Failure(f"{how}: left behind namespaces {left}, sleeper gone: {pid_gone(held['sleeper'])}\n{out}")
        if child.returncode == 0:
            raise Failure(f"{how}: the child exited 0")
        print(f"cleanup after {how}: nothing left (exit {child.returncode}, {took:.2f} s)")


def main():
    case, work = sys.argv[1], sys.argv[2]
    if case == "hold":
        return hold(work)
    cases = {"links": case_links, "impair-netem": case_impair_netem,
             "impair-relay": lambda w: check_impairments("relay", w),
             "supervision": case_supervision, "cleanup": case_cleanup}

    def body():
        harness.require_root()
        os.makedirs(work, exist_ok=True)
        cases[case](work)
    harness.main_wrapper(body)


if __name__ == "__main__":
    main()
