# SPDX-License-Identifier: BSD-3-Clause
"""The interop network: one namespace holding a bridge, the VM's tap and a veth.

    [netns uroce-nt-<pid>-<group>-br]
      br0 10.91.0.1/24 (kernel TCP for the out-of-band exchange)
       |-- tap0     <- qemu: the VM's eth0, 10.91.0.2, rxe0 on top
       '-- hv-br == hv   <- uroce (net_af_packet, iface=hv), 10.91.0.10

The namespace name carries the harness's pid, so a later harness deletes it
if this test is SIGKILLed (tests/netns/harness.py). Everything is jumbo
(MTU 9000): the VM's own eth0 MTU decides rxe's active MTU.
"""

import os
import signal
import time
from dataclasses import dataclass

from harness import Failure, run
from procs import Proc

BR_IP = "10.91.0.1"
VM_IP = "10.91.0.2"
VM_MAC = "52:54:00:91:00:02"
UROCE_IP = "10.91.0.10"
LINK_MTU = 9000


@dataclass(frozen=True)
class Vlan:
    """An 802.1Q scenario's addresses: the VM's VLAN interface (eth0.100,
    whose GID rxe0 has; guest/uix-vlan) and uroce's, tagged with PCP 3."""
    vid: int = 100
    pcp: int = 3
    vm_ip: str = "10.91.100.2"
    uroce_ip: str = "10.91.100.10"


VLAN = Vlan()


def roce_ips(sc):
    """(uroce's, the VM's) RoCE addresses in scenario sc."""
    return (VLAN.uroce_ip, VLAN.vm_ip) if getattr(sc, "vlan", False) else (UROCE_IP, VM_IP)


@dataclass
class Net:
    ns: str
    bridge: str = "br0"
    tap: str = "tap0"
    host_if: str = "hv"


def create(h, group):
    ns = h.new_netns(f"{group}-br")
    n = Net(ns)
    ipn = ["ip", "-n", ns]
    run(ipn + ["link", "add", n.bridge, "type", "bridge", "stp_state", "0", "forward_delay", "0",
               "mcast_snooping", "0"])
    run(ipn + ["link", "set", n.bridge, "mtu", str(LINK_MTU)])
    run(ipn + ["tuntap", "add", "dev", n.tap, "mode", "tap"])
    run(ipn + ["link", "add", n.host_if, "type", "veth", "peer", "name", n.host_if + "-br"])
    for dev in (n.tap, n.host_if, n.host_if + "-br"):
        run(ipn + ["link", "set", dev, "mtu", str(LINK_MTU)])
    for dev in (n.tap, n.host_if + "-br"):
        run(ipn + ["link", "set", dev, "master", n.bridge])
    for dev in (n.bridge, n.tap, n.host_if, n.host_if + "-br"):
        run(ipn + ["link", "set", dev, "up"])
    run(ipn + ["addr", "add", BR_IP + "/24", "dev", n.bridge])
    return n


def share_roce_address(net):
    """Gives `hv` uroce's address in the kernel too, for programs that look
    for their RDMA device among the kernel's interfaces (libfabric's verbs
    provider lists getifaddrs() and binds rdma_cm to each address), and has
    the kernel drop RoCE's UDP port, whose frames uroce takes from the same
    interface (the kernel would answer each with an ICMP error)."""
    run(["ip", "-n", net.ns, "addr", "add", UROCE_IP + "/24", "dev", net.host_if])
    run(["ip", "netns", "exec", net.ns, "iptables", "-A", "INPUT", "-p", "udp", "--dport", "4791", "-j", "DROP"])


def restore_mtu(net):
    """Sets `hv` back to the link MTU; returns the MTU found. net_af_packet's
    set_mtu is SIOCSIFMTU: uroce used to leave `hv` at 1500 after a -m 1024
    run, and the next -m 4096 run failed (fixed in drivers/dpdk/mtu_plan.cpp;
    scenario_run fails if it comes back)."""
    _, out = run(["ip", "-n", net.ns, "link", "show", "dev", net.host_if])
    mtu = int(out.split(" mtu ")[1].split()[0])
    if mtu != LINK_MTU:
        run(["ip", "-n", net.ns, "link", "set", "dev", net.host_if, "mtu", str(LINK_MTU)])
    return mtu


def vdev(net):
    # 4 KB RoCE frames do not fit af_packet's default 2048-byte ring slots.
    return f"net_af_packet0,iface={net.host_if},framesz=8192,blocksz=8192,framecnt=512"


class Capture:
    """tcpdump on the bridge: it sees every frame between the VM and uroce
    (libpcap makes the bridge promiscuous). RoCE, tagged or not, and the
    exchange's TCP.
    Immediate mode: TPACKET_V3 blocks still held at SIGINT would be lost; a
    64 MB buffer: with the default 2 MB, bursts were dropped on a busy host."""

    def __init__(self, h, net, path, tcp_port):
        self.path = path
        if os.path.exists(path):
            os.unlink(path)
        log = path + ".log"
        # `vlan` last: in a filter it shifts what follows to the tagged
        # frame's offsets.
        self.proc = Proc(h, "tcpdump", ["tcpdump", "-i", net.bridge, "-s", "0", "-U", "--immediate-mode", "-B", "65536", "-Z", "root", "-n", "-w", path,
                                        f"udp port 4791 or tcp port {tcp_port} or (vlan and udp port 4791)"], log, ns=net.ns)
        end = time.monotonic() + 10
        while "listening on" not in self.proc.output():
            if not self.proc.running() or time.monotonic() > end:
                raise Failure(f"tcpdump did not start on {net.bridge}:\n{self.proc.describe()}")
            time.sleep(0.02)

    def stop(self):
        """SIGINT: tcpdump writes what it has and exits."""
        if self.proc.running():
            os.kill(self.proc.p.pid, signal.SIGINT)
            try:
                self.proc.p.wait(timeout=5)
            except Exception:  # noqa: BLE001
                self.proc.kill()
