# SPDX-License-Identifier: BSD-3-Clause
"""One scenario on a running VM: the rxe tool in the VM, uroce on the host,
tcpdump on the bridge, and the verdict.

The VM side is one shell script per step through the control channel. As a
server, the tool runs in the VM's background under `timeout`, and
uix-listen returns once it listens; uroce then connects to it. As a client,
the tool runs in the foreground of one command while uroce serves.

The uroce side is a uroce tool (`uroce-perf ... --dev D --ip A`) or, for a
scenario whose program is `uroce-run`, the Debian program itself on the
drop-in libibverbs (`uroce-run --dev D --ip A --mtu 9000 -- PROGRAM ...`),
whose stderr is kept apart from the stdout that is compared.
"""

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field

import cm_wire
import net
import perf_output
import wire_check
from captures import uroce_dump
from harness import Failure
from perf_run import UROCE_LINE
from procs import Proc, wait_all, wait_listening

TOOL_TIMEOUT_S = 25
# What the guest's `timeout` returns for a tool that SIGTERM ended.
TERMINATED = 128 + 15
ITERS_LINE = re.compile(r"^(\d+) iters in [\d.]+ seconds", re.M)
# ucx_perftest's client: "Final: ITERATIONS <latency and bandwidth columns>".
UCX_FINAL = re.compile(r"^Final:\s+(\d+)(\s+[\d.]+){7}\s*$", re.M)
# The tool's stderr follows its stdout after this line, as in the recorded
# perftest outputs (tests/data/perftest), so the two can be told apart.
STDERR_MARK = "echo '--- stderr'; cat /tmp/tool.err"


@dataclass
class Outcome:
    name: str
    seconds: float = 0.0
    pcap: str = ""
    pmtu: int = 0
    procs: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def _tool_server(vm, tool, port, cm=False):
    listen = "uix-cm-listen" if cm else "uix-listen"
    vm.run("rm -f /tmp/tool.rc /tmp/tool.out /tmp/tool.err; "
           f"(timeout {TOOL_TIMEOUT_S} {tool} > /tmp/tool.out 2> /tmp/tool.err; echo $? > /tmp/tool.rc) & "
           f"{listen} {port} 20")


def wait_port_open(proc, program, ns, timeout_s):
    """An rdma_cm server on uroce-run opens no TCP socket: waits until its
    port is open (an AF_PACKET socket of PROGRAM's, which may be a child
    process: fio's jobs), then lets it reach rdma_listen, which follows
    within milliseconds."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if not proc.running():
            raise Failure(f"{proc.name} exited before its port opened:\n{proc.describe()}")
        out = subprocess.run(["ip", "netns", "exec", ns, "ss", "-f", "link", "-p"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        if f'(("{program}",' in out:
            time.sleep(1.0)
            return
        time.sleep(0.05)
    raise Failure(f"{proc.name} did not open its port within {timeout_s} s:\n{proc.describe()}")


def _tool_server_result(vm):
    """Waits for the background tool (bounded by the guest's own clock, so a
    slow guest still answers), with ps and dmesg when it did not finish."""
    return vm.run("read -r up _ < /proc/uptime; end=$((${up%.*} + " + str(TOOL_TIMEOUT_S + 5) + ")); "
                  "while [ ! -s /tmp/tool.rc ]; do read -r up _ < /proc/uptime; "
                  "if [ ${up%.*} -ge $end ]; then cat /tmp/tool.out; " + STDERR_MARK + "; "
                  "echo '--- the tool did not finish; ps:'; ps; "
                  "echo '--- dmesg:'; dmesg | tail -n 30; exit 124; fi; sleep 0.1; done; "
                  "cat /tmp/tool.out; " + STDERR_MARK + "; exit $(cat /tmp/tool.rc)", timeout_s=TOOL_TIMEOUT_S + 20, check=False)


def _describe(up, tool_rc, tool_out, tool):
    tail = "\n".join("    " + ln for ln in tool_out.splitlines()[-30:])
    return f"{up.describe()}\nrxe tool [exit {tool_rc}]: {tool}\n{tail}"


def is_shim(sc):
    return sc.uroce[0] == "uroce-run"


def shim_program(sc):
    """The program uroce-run starts, past an `env VAR=VALUE ...` prefix."""
    args = sc.uroce[1:]
    if args and args[0] == "env":
        args = [a for a in args[1:] if "=" not in a]
    return args[0]


def templated(sc):
    """Command lines given as templates (scenarios.Scenario.expect)."""
    return sc.kind in ("cm", "fi")


def cm_args(template, port):
    return template.format(port=port, vm_ip=net.VM_IP, uroce_ip=net.UROCE_IP, br_ip=net.BR_IP)


def vlan_args(sc):
    return ["--vlan", str(net.VLAN.vid), "--pcp", str(net.VLAN.pcp)] if sc.vlan else []


def host_argv(sc, bins, n, port):
    app = bins[sc.uroce[0]]
    if templated(sc) and sc.uroce[0] == "uroce-perf":
        # uroce-perf -R: the port's MTU is the link's, as -m 4096 asks.
        return [app] + [cm_args(a, port) for a in sc.uroce[1:]] + ["--dev", net.vdev(n), "--ip", net.UROCE_IP]
    if templated(sc):
        return [app, "--dev", net.vdev(n), "--ip", net.UROCE_IP, "--mtu", str(net.LINK_MTU), "--"] + \
            [cm_args(a, port) for a in sc.uroce[1:]]
    if is_shim(sc):
        # The port's MTU is the link's: uroce-run's default (1500) would be
        # a smaller port than the bridge carries; -m picks the path MTU.
        return [app, "--dev", net.vdev(n), "--ip", net.roce_ips(sc)[0], "--mtu", str(net.LINK_MTU)] + vlan_args(sc) + \
            ["--"] + sc.uroce[1:] + ["-p", str(port)]
    return [app] + sc.uroce[1:] + ["-p", str(port), "--dev", net.vdev(n), "--ip", net.roce_ips(sc)[0]] + vlan_args(sc)


def perf_test(sc):
    """uroce-perf's test name (write_bw, ...) of a perf scenario."""
    return sc.uroce[1][len("ib_"):] if is_shim(sc) else sc.uroce[1]


# perftest -R's own race: after the two sides' sync on the control
# connection its server starts listening for the test connections while its
# client already connects, and a REQ that arrives first is rejected
# (reason 8). Against the emulated VM, whose perftest runs many times
# slower, uroce's client loses it about every other time (its REQ leaves
# within a millisecond of the server's last sync message; the emulated
# kernel takes longer to listen): up to ten attempts, each a few seconds.
PERFTEST_CM_RACE = "RDMA_CM_EVENT_REJECTED; error: 8."
# qperf's, of the same kind: its server forks a process per test and that
# process listens on rdma_cm only after the test's TCP exchange, which the
# client has already seen; a REQ ahead of the listen is rejected.
QPERF_CM_RACE = "unexpected event from RDMA CM: Event rejected"
# qperf's server in the emulated VM has been seen to stop in the middle of
# rc_lat: rxe ACKs uroce's SEND and its qperf never answers, so the client
# times out waiting for the results. Once per scenario it runs again.
QPERF_VM_STALL = "failed to receive results: timed out"


def lost_connect_race(sc, e):
    """Whether failure e is the VM tool's own connect race (above)."""
    if sc.kind == "cm" and sc.tool.startswith("ib_"):
        return PERFTEST_CM_RACE in str(e)
    if sc.kind == "fi" and sc.tool.startswith("qperf") and sc.vm == "server":
        return QPERF_CM_RACE in str(e)
    return False


def vm_stalled(sc, e):
    """Whether failure e is the VM's qperf server stopping (above)."""
    return sc.kind == "fi" and sc.tool.startswith("qperf") and sc.vm == "server" and QPERF_VM_STALL in str(e)


def run(h, vm, n, sc, bins, dump, oracle_py, work, port):
    """One scenario; a perftest -R or qperf scenario that lost the tool's
    connect race (above) runs again, on another port, and says so; so does
    one whose VM qperf stalled, once."""
    lost = stalled = 0
    while True:
        again = lost + stalled
        try:
            res = _run_once(h, vm, n, sc, bins, dump, oracle_py, work + ("-again" * again), port + 1000 * again)
        except Failure as e:
            if vm_stalled(sc, e) and stalled == 0:
                stalled = 1
            elif not lost_connect_race(sc, e) or lost == 9:
                raise
            else:
                lost += 1
            vm.run(f"killall {sc.tool.split()[0]}; sleep 0.5; true", check=False)
            continue
        if lost:
            res.notes.append(f"{sc.tool.split()[0]}'s connect race lost {lost} time(s) (REJ 8 before its server "
                             "listened), then passed")
        if stalled:
            res.notes.append("the VM's qperf stopped answering once (rxe ACKed, its server never sent the results), "
                             "then passed")
        return res


def _run_once(h, vm, n, sc, bins, dump, oracle_py, work, port):
    d = os.path.join(work, sc.name)
    os.makedirs(d, exist_ok=True)
    t0 = time.monotonic()
    res = Outcome(sc.name)
    net.restore_mtu(n)
    cap = net.Capture(h, n, os.path.join(d, "bridge.pcap"), port)
    if sc.netem:
        vm.run("uix-netem on " + sc.netem)
    before = vm.counters()
    t_run = time.monotonic()
    argv = host_argv(sc, bins, n, port)
    tool = cm_args(sc.tool, port) if templated(sc) else f"{sc.tool} -p {port}"
    try:
        return _run(h, vm, n, sc, d, res, cap, argv, tool, port, before, t0, t_run, dump)
    finally:
        # On any way out (a hung VM is retried on a fresh one): no uroce or
        # tcpdump of this attempt may stay on the link.
        cap.stop()
        for p in res.procs:
            p.kill()


def _run(h, vm, n, sc, d, res, cap, argv, tool, port, before, t0, t_run, dump):
    err = os.path.join(d, "uroce.err") if is_shim(sc) else None
    cm = sc.kind == "cm"
    if sc.vm == "server":
        _tool_server(vm, tool, sc.fixed_port or port, cm)
        up = Proc(h, "uroce", argv + ([] if templated(sc) else [net.VM_IP]), os.path.join(d, "uroce.out"), ns=n.ns,
                  err_path=err)
        res.procs.append(up)
        wait_all([up], TOOL_TIMEOUT_S + 5)
        if cm and up.returncode != 0 and PERFTEST_CM_RACE in up.output() + up.errors():
            # It would wait for the lost connection. (The guest's busybox has
            # killall, not pkill.)
            vm.run(f"killall {tool.split()[0]}; true", check=False)
        if sc.serves:
            vm.run(f"killall {tool.split()[0]}; true", check=False)
        tool_rc, tool_out = _tool_server_result(vm)
        if sc.serves and tool_rc == TERMINATED:
            tool_rc = 0
    else:
        up = Proc(h, "uroce", argv, os.path.join(d, "uroce.out"), ns=n.ns, err_path=err)
        res.procs.append(up)
        if cm:
            # As ss shows it: the command's name, cut to 15 characters.
            program = sc.uroce[0] if sc.uroce[0] == "uroce-perf" else sc.uroce[1]
            wait_port_open(up, os.path.basename(program)[:15], n.ns, 20)
        else:
            wait_listening(up, n.ns, port, 20)
        target = "" if templated(sc) else net.BR_IP
        cid = vm.send(f"timeout {TOOL_TIMEOUT_S} {tool} {target} 2> /tmp/tool.err; rc=$?; {STDERR_MARK}; exit $rc")
        tool_rc, tool_out = vm.result(cid, TOOL_TIMEOUT_S + 15, f"running {tool}")
        if sc.serves and up.running():
            up.stop(5)
        wait_all([up], 10)
    t_ran = time.monotonic()
    after = vm.counters()
    left_mtu = net.restore_mtu(n)
    if left_mtu != net.LINK_MTU:
        raise Failure(f"{sc.name}: uroce left {n.host_if} at MTU {left_mtu} (it was {net.LINK_MTU}): "
                      "a port must not shrink the kernel interface")
    netem = ""
    if sc.netem:
        _, netem = vm.run("uix-netem stats; uix-netem off")
    cap.stop()
    with open(os.path.join(d, "tool.out"), "w") as f:
        f.write(f"$ {tool}\n{tool_out}")
    stopped = sc.serves and sc.vm == "client" and up.returncode == -signal.SIGTERM
    if (up.returncode != 0 and not stopped) or tool_rc != 0:
        raise Failure(f"{sc.name}: a side failed\n{_describe(up, tool_rc, tool_out, tool)}")
    uroce_out = up.output()
    _check_output(sc, uroce_out, tool_out, up, tool_rc, tool)
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    res.notes.append("rxe: " + ", ".join(f"{k} {v}" for k, v in sorted(delta.items()) if v and k != "lifespan"))
    rc, summary, invalid = uroce_dump(dump, cap.path, sc.pmtu)
    if rc != 0:
        reasons = "\n".join(f"  #{o['frame']}: {o.get('error')}: {o.get('reason')}" for o in invalid[:10])
        raise Failure(f"{sc.name}: uroce-dump --pmtu {sc.pmtu}: {len(invalid)} invalid RoCE packets in "
                      f"{cap.path}:\n{reasons}")
    res.notes.append(f"uroce-dump: {summary['valid']} valid RoCE packets on the bridge")
    if sc.oracle:
        res.pcap, res.pmtu = cap.path, sc.pmtu
    uroce_ip, vm_ip = net.roce_ips(sc)
    wire = wire_check.check(cap.path, [uroce_ip, vm_ip])
    if sc.vlan:
        res.notes.append(_check_vlan(sc, wire, uroce_ip, vm_ip))
    elif wire["tags"]:
        raise Failure(f"{sc.name}: tagged RoCE frames in an untagged run: {wire['tags']}")
    if sc.uc and sc.kind == "perf" and sc.uroce[1].endswith("_bw"):
        # One way: the client (perftest's requester) sends, and on UC
        # nothing comes back, not even an ACK.
        client = net.UROCE_IP if sc.vm == "server" else net.VM_IP
        if wire["by_sender"][client] == 0 or sum(wire["by_sender"].values()) != wire["by_sender"][client]:
            raise Failure(f"{sc.name}: a UC {sc.uroce[1]} run must carry the client's packets only: "
                          f"{wire['by_sender']}")
    elif any(v == 0 for v in wire["by_sender"].values()):
        raise Failure(f"{sc.name}: a side sent no RoCE packet on the bridge: {wire['by_sender']}")
    if sc.kind == "ucx":
        client = net.UROCE_IP if sc.vm == "server" else net.VM_IP
        for what, ops in sc.checks:
            if not wire["opcodes"][client] & ops:
                raise Failure(f"{sc.name}: the client ({client}) sent no {what} on the bridge; its opcodes: "
                              f"{sorted(hex(o) for o in wire['opcodes'][client])}")
    if sc.kind == "cm" or sc.cm_wire:
        client, server = (net.UROCE_IP, net.VM_IP) if sc.vm == "server" else (net.VM_IP, net.UROCE_IP)
        problems, seq = (cm_wire.check_sidr if sc.sidr else cm_wire.check)(cap.path, client, server)
        if problems:
            raise Failure(f"{sc.name}: the CM exchange on the bridge:\n  " + "\n  ".join(problems[:10]))
        who = {net.UROCE_IP: "uroce", net.VM_IP: "rxe"}
        res.notes.append("cm: " + ", ".join(f"{m} from {who.get(s, s)}" for s, m in seq) +
                         ("; the SIDR REP answers the REQ" if sc.sidr else "; REQ and REP fields as Linux's"))
    if sc.uc and wire["not_uc"]:
        raise Failure(f"{sc.name}: packets that are not UC SEND/WRITE in a UC run: {wire['not_uc']}")
    if wire["differing"]:
        raise Failure(f"{sc.name}: copies of one packet carry different payloads: {wire['differing']}")
    res.notes.append(f"wire: {wire['packets']} RoCE packets, sent {wire['by_sender']}, "
                     f"copies seen {wire['resent_seen']}, all copies identical")
    if sc.netem:
        res.notes += _check_loss(sc, uroce_out, delta, netem, wire)
    res.seconds = time.monotonic() - t0
    res.notes.append(f"time: set-up {t_run - t0:.1f} s, run {t_ran - t_run:.1f} s, checks {time.monotonic() - t_ran:.1f} s")
    return res


def _check_vlan(sc, wire, uroce_ip, vm_ip):
    """Every RoCE frame on the bridge tagged with the VLAN: uroce's with its
    PCP, rxe's as Linux's VLAN interface sends them (priority 0 unless an
    egress map says otherwise)."""
    want = net.VLAN
    for ip in (uroce_ip, vm_ip):
        tags = wire["tags"].get(ip, set())
        if not tags or any(vid != want.vid for vid, _ in tags):
            raise Failure(f"{sc.name}: {ip}'s RoCE frames carry VLAN tags {sorted(tags)}, not VLAN {want.vid} only "
                          f"(untagged: {wire['untagged'].get(ip, 0)})")
        if wire["untagged"].get(ip, 0):
            raise Failure(f"{sc.name}: {wire['untagged'][ip]} of {ip}'s RoCE frames are untagged")
    if wire["tags"][uroce_ip] != {(want.vid, want.pcp)}:
        raise Failure(f"{sc.name}: uroce's frames carry {sorted(wire['tags'][uroce_ip])}, not VLAN {want.vid} "
                      f"PCP {want.pcp}")
    return (f"vlan: every RoCE frame tagged with VLAN {want.vid}; PCP {want.pcp} from uroce, "
            f"{sorted(p for _, p in wire['tags'][vm_ip])} from rxe")


def _check_output(sc, uroce_out, tool_out, up, tool_rc, tool):
    def fail(why):
        raise Failure(f"{sc.name}: {why}\n{_describe(up, tool_rc, tool_out, tool)}")

    if sc.kind == "ucx":
        # The client prints the result; the server, whose parameters come
        # from the client, prints the table's header only.
        client_out, who = (uroce_out, "ucx_perftest on uroce-run") if sc.vm == "server" else (tool_out, "rxe's ucx_perftest")
        m = UCX_FINAL.search(client_out)
        if not m or int(m.group(1)) != sc.iters:
            fail(f"the client ({who}) printed no 'Final: {sc.iters} ...' row")
        for side, out in (("uroce", uroce_out), ("rxe tool", tool_out)):
            if " UCX  ERROR " in out:
                fail(f"{side} logged a UCX error")
        return
    if templated(sc):
        for side, regex in sc.expect:
            out = uroce_out if side == "uroce" else tool_out
            got = len(re.findall(regex, out, re.M))
            if got != sc.iters:
                fail(f"{'uroce' if side == 'uroce' else 'the rxe tool'} printed {got} lines matching "
                     f"'{regex}', not {sc.iters}")
        return
    if sc.kind in ("pingpong", "ud", "srq"):
        for who, out in (("uroce", uroce_out), ("rxe tool", tool_out)):
            m = ITERS_LINE.search(out)
            if not m or int(m.group(1)) != sc.iters:
                fail(f"{who} did not report '{sc.iters} iters in ...'")
        return
    shim = is_shim(sc)
    if not shim and not UROCE_LINE.search(uroce_out):
        fail("uroce-perf printed no ' uroce: N packets sent, ...' line")
    qps = int(sc.uroce[sc.uroce.index("-q") + 1]) if "-q" in sc.uroce else 1
    size = int(sc.uroce[sc.uroce.index("-s") + 1])
    who = f"{sc.uroce[1]} on uroce-run" if shim else "uroce-perf"
    problems = perf_output.compare(perf_test(sc), uroce_out, tool_out, sc.vm == "client", qps, sc.iters, size,
                                    "--report_gbits" in sc.uroce, who=who,
                                    own_device=sc.uroce[sc.uroce.index("-d") + 1] if shim else None)
    if problems:
        fail(f"{who}'s output does not match perftest's on rxe:\n" + "\n".join(problems))


def _check_loss(sc, uroce_out, delta, netem, wire):
    """The requester retransmitted, the responder saw it, netem dropped. A
    Debian program on uroce-run prints no counter: uroce's retransmissions
    are then its requests that went back in PSN on the bridge."""
    if is_shim(sc):
        uroce_rexmit = wire["rewinds"][net.UROCE_IP]
    else:
        uroce_rexmit = int(UROCE_LINE.search(uroce_out).group(3))
    rxe_rexmit = delta.get("completer_retry_err", 0) + delta.get("rcvd_seq_err", 0)
    rxe_saw = delta.get("duplicate_request", 0) + delta.get("out_of_seq_request", 0)
    drops = sum(int(ln.split()[2]) for ln in netem.splitlines() if len(ln.split()) == 3)
    how = "uroce's requests went back in PSN on the bridge" if is_shim(sc) else "uroce retransmitted"
    notes = [f"netem: {netem.strip()}", f"{how} {uroce_rexmit}; rxe retried {rxe_rexmit}, "
             f"rxe saw {rxe_saw} duplicate/out-of-sequence requests"]
    if drops == 0:
        raise Failure(f"{sc.name}: netem dropped nothing ({netem.strip()})")
    if sc.vm == "server":  # uroce is the requester
        if uroce_rexmit == 0:
            raise Failure(f"{sc.name}: uroce (requester) retransmitted nothing under loss; {notes}")
    elif rxe_rexmit == 0:
        raise Failure(f"{sc.name}: rxe (requester) retried nothing under loss; {notes}")
    return notes
