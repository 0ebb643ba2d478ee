# SPDX-License-Identifier: BSD-3-Clause
"""Runs a uroce-perf server and client over a real link and reads their results.

The server starts first; the client starts once the server listens on its
TCP port (checked in /proc/net/tcp, never by connecting). Both get one
deadline; if one fails, the other has a few seconds to notice before it is
killed. Both must exit 0.
"""

import os
import re
import socket
from dataclasses import dataclass, field

from harness import Failure, run
from procs import Proc, wait_all, wait_listening

# With --verify each side says whether it checked data: the side that holds
# the data (WRITE/SEND/atomic server, READ client, latency client, raw
# receiver) says "data verified", the other "no data to check on this side".
UROCE_LINE = re.compile(r"^ uroce: (\d+) packets sent, (\d+) received, (\d+) retransmitted"
                        r"(; data verified|; no data to check on this side)?\s*$", re.M)
RESULT_ROW = re.compile(r"^ \d+ +\d+ ", re.M)


@dataclass
class Side:
    name: str
    proc: Proc
    sent: int = 0
    received: int = 0
    retransmitted: int = 0
    verified: bool = False
    rows: int = 0
    notes: list = field(default_factory=list)


def mac_of(ns, dev):
    _, out = run(["ip", "-n", ns, "link", "show", "dev", dev])
    m = re.search(r"link/ether ([0-9a-f:]{17})", out)
    if not m:
        raise Failure(f"no MAC address for {dev} in {ns}: {out}")
    return m.group(1)


def af_packet_vdev(dev, mtu, through_qdisc):
    # No framesz/blocksz even for jumbo frames: the port derives its ring
    # slots from the MTU (checked by the mtu4096 cases).
    v = f"net_af_packet0,iface={dev}"
    if through_qdisc:
        # Default is qdisc_bypass=1 (PACKET_QDISC_BYPASS): TX would skip netem.
        v += ",qdisc_bypass=0"
    return v


SLOTS_NOTICE = "needs af_packet ring slots of"


def leftovers(ns_devs, pids):
    """What finished uroce processes left behind: an XDP program still
    attached to a data veth, an EAL runtime directory uroce-<pid>."""
    found = []
    for ns, dev in ns_devs:
        _, out = run(["ip", "-n", ns, "-d", "link", "show", "dev", dev])
        if re.search(r"prog/xdp|\bxdp\w*\b", out):
            found.append(f"{dev} (netns {ns}) still has an XDP program attached:\n{out}")
    for pid in pids:
        d = f"/var/run/dpdk/uroce-{pid}"
        if os.path.exists(d):
            found.append(f"{d} was left behind")
    return found


def af_xdp_vdev(dev):
    return f"net_af_xdp0,iface={dev},busy_budget=0"


def memif_vdev(role, sock):
    return f"net_memif0,role={role},id=0,socket={sock},socket-abstract=no"


def free_tcp_port():
    """A port nobody listens on now, for endpoints in the shared root namespace."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PairSpec:
    """Where the two uroce-perf processes run and how they reach each other."""
    server_ns: str
    client_ns: str
    server_dev: str
    client_dev: str
    server_ip: str        # --ip of each side
    client_ip: str
    server_addr: str      # the client's SERVER argument (a kernel address)
    tcp_port: int = 18515


def run_pair(h, work, perf, test, args, spec, client_pcap=None, server_pcap=None, deadline_s=45):
    """Starts both, waits for both; returns (server Side, client Side)."""
    common = [perf, test] + list(args) + ["-p", str(spec.tcp_port)]
    s_argv = common + ["--dev", spec.server_dev, "--ip", spec.server_ip]
    if server_pcap:
        s_argv += ["--pcap", server_pcap]
    c_argv = common + ["--dev", spec.client_dev, "--ip", spec.client_ip]
    if client_pcap:
        c_argv += ["--pcap", client_pcap]
    c_argv.append(spec.server_addr)
    for p in (client_pcap, server_pcap):
        if p and os.path.exists(p):
            os.unlink(p)
    s = Proc(h, "server", s_argv, os.path.join(work, "server.out"), ns=spec.server_ns)
    wait_listening(s, spec.server_ns, spec.tcp_port, 20)
    c = Proc(h, "client", c_argv, os.path.join(work, "client.out"), ns=spec.client_ns)
    wait_all([s, c], deadline_s)
    return Side("server", s), Side("client", c)


def memif_crash_hint(sides):
    for side in sides:
        if side.proc.returncode is not None and side.proc.returncode < 0 and "SIGSEGV" in side.proc.status():
            # Seen here: main() already in exit() while EAL's interrupt thread
            # handles the peer's disconnect inside librte_net_memif.
            return ("\nnote: a SIGSEGV around the peer's exit is the memif peer-disconnect pitfall "
                    "(dpdk-notes.md): each side must stop polling and close its memif port "
                    "(rte_eth_dev_close, rte_eal_cleanup) before it exits")
    return ""


def check_pair(server, client, kind, verify=True, memif=False, raw=False):
    """Both exited 0, printed the perftest table and the uroce line."""
    sides = (server, client)
    if any(sd.proc.returncode != 0 for sd in sides):
        hint = memif_crash_hint(sides) if memif else ""
        raise Failure("uroce-perf failed:\n" + "\n".join(sd.proc.describe() for sd in sides) + hint)
    header = "BW average[" if kind == "bw" else "t_typical[usec]"
    for sd in sides:
        out = sd.proc.output()
        m = UROCE_LINE.search(out)
        if not m:
            raise Failure(f"{sd.name}: no ' uroce: N packets sent, N received, N retransmitted' line:\n"
                          + sd.proc.describe())
        sd.sent, sd.received, sd.retransmitted = (int(m.group(i)) for i in (1, 2, 3))
        sd.verified = m.group(4) == "; data verified"
        sd.verdict = m.group(4)
        sd.rows = len(RESULT_ROW.findall(out))
    if header not in client.proc.output() or client.rows < 1:
        raise Failure(f"client: no perftest result table ('{header}' and a row):\n{client.proc.describe()}")
    if verify:
        for sd in sides:
            if not sd.verdict:
                raise Failure(f"{sd.name} ran with --verify but printed no verdict:\n{sd.proc.describe()}")
        if not any(sd.verified for sd in sides):
            raise Failure("neither side reported '; data verified':\n"
                          + "\n".join(sd.proc.describe() for sd in sides))
    if not raw and (client.sent == 0 or client.received == 0):
        raise Failure(f"client: {client.sent} packets sent, {client.received} received: no traffic?")
