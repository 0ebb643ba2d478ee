# SPDX-License-Identifier: BSD-3-Clause
"""The interop scenarios: what runs in the VM, what runs on the host, and
what each must show. Grouped so that one VM boot serves a whole group
(one meson test per group, see meson.build).

Each scenario exists in both roles: `vm=server` (the rxe tool serves, uroce
is the client) and `vm=client` (uroce serves, the rxe tool connects to the
bridge address). Every command line passes the path MTU explicitly, so one
jumbo VM (eth0 MTU 9000, rxe active MTU 4096) serves -m 1024 and -m 4096.

The uroce side is one of uroce's tools (`uroce-perf`, `uroce-pingpong`) or,
in the verbs_* and ucx groups, `uroce-run` and the same Debian program the
VM runs (perftest, ibv_*_pingpong, ucx_perftest), unmodified, on the drop-in
libibverbs.
"""

import os
from dataclasses import dataclass, field

import net

PP_ITERS = 10     # ibv_rc_pingpong round trips
BW_ITERS = 8      # perftest -n for the bandwidth tests
LAT_ITERS = 8     # and for the latency tests
LOSS_ITERS = 40   # enough messages that netem's loss hits both directions
VERBS_LOSS_ITERS = 20  # the same, with half the oracle's work (go-back-N under reordering resends a lot)
BW_QPS = 2        # perftest -q for the bandwidth tests (the latency tests take no -q)
NETEM = "delay 1ms reorder 10% loss 4%"
# uix-vlan's arguments: the VLAN id and the VM's address on it.
VLAN_TOOL = f"{net.VLAN.vid} {net.VLAN.vm_ip}/24"


@dataclass
class Scenario:
    name: str
    kind: str              # pingpong | perf | ud | srq | ucx | cm | fi
    vm: str                # the VM's role: server | client
    tool: str              # the rxe tool's command line, without the server address
    uroce: list            # uroce's app name and arguments (no --dev/--ip/server)
    pmtu: int
    netem: str = ""        # netem arguments inside the VM during the run
    iters: int = 0         # what both sides must report (perftest's BW row: -n times -q)
    checks: list = field(default_factory=list)  # ucx: (name, BTH opcodes) the client must send
    uc: bool = False       # a UC run: every packet on the bridge must carry a UC opcode
    # cm, fi: (side, regex) pairs, side "uroce" or "tool": the side's output
    # must match the regex `iters` times. Their tool and uroce command lines
    # are templates of {port}, {vm_ip}, {uroce_ip} and {br_ip} (the host's
    # kernel address, for a TCP rendezvous): these programs are given
    # addresses, and their roles differ in flags. fi programs meet on TCP
    # first; cm programs only through the CM.
    expect: list = field(default_factory=list)
    cm_wire: bool = False  # an fi run connected by the CM: its exchange is checked as a cm run's
    # The server serves until stopped (qperf): once the client is done the
    # harness stops it with SIGTERM, and that ending is its success.
    serves: bool = False
    # A cm run whose ids are UD (rdma_cm's UDP port space): service ID
    # resolution (SIDR REQ, SIDR REP) instead of a connection.
    sidr: bool = False
    # The port a server listens on when it takes none from its command line.
    fixed_port: int = 0
    # Whether the oracle judges the capture too (uroce-dump judges every
    # one): not for time-bound runs of tens of thousands of packets.
    oracle: bool = True
    # An 802.1Q run: rxe0's GID of the VM's VLAN interface (guest/uix-vlan,
    # the tool's GID index given as @GID), uroce with --vlan and --pcp and its
    # own address on that VLAN (net.VLAN); every RoCE frame on the bridge
    # must carry the tag.
    vlan: bool = False


def _both(name, kind, tool, uroce, pmtu, **kw):
    return [Scenario(f"{name}-vm_{role}", kind, role, tool, uroce, pmtu, **kw) for role in ("server", "client")]


def rc_pingpong():
    out = []
    for mtu in (1024, 4096):
        for size in (64, 4096, 65536):
            common = ["-s", str(size), "-m", str(mtu), "-n", str(PP_ITERS)]
            tool = "ibv_rc_pingpong -d rxe0 -g $GID_IDX " + " ".join(common)
            for s in _both(f"rc_pingpong-m{mtu}-s{size}", "pingpong", tool, ["uroce-pingpong"] + common, mtu,
                           iters=PP_ITERS):
                # As the client, uroce checks each echo (ibv_rc_pingpong sends
                # back the buffer it received into); as the server it cannot:
                # ibv_rc_pingpong's payload is not uroce's pattern.
                if s.vm == "server":
                    s.uroce = s.uroce + ["-c"]
                out.append(s)
    # On VLAN 100: rxe0's GID of Linux's VLAN interface eth0.100, uroce
    # tagging its frames.
    common = ["-s", "4096", "-m", "1024", "-n", str(PP_ITERS)]
    tool = f"uix-vlan {VLAN_TOOL} ibv_rc_pingpong -d rxe0 -g @GID " + " ".join(common)
    for s in _both("rc_pingpong-vlan-m1024-s4096", "pingpong", tool, ["uroce-pingpong"] + common, 1024,
                   iters=PP_ITERS, vlan=True):
        if s.vm == "server":
            s.uroce = s.uroce + ["-c"]
        out.append(s)
    return out


PERF_TESTS = [
    # (uroce-perf test, perftest binary, extra args, size, path MTU)
    ("write_bw", "ib_write_bw", [], 5000, 1024),
    ("write_bw", "ib_write_bw", [], 65536, 1024),
    ("read_bw", "ib_read_bw", [], 5000, 1024),
    ("read_bw", "ib_read_bw", [], 65536, 1024),
    ("send_bw", "ib_send_bw", [], 5000, 1024),
    ("atomic_bw", "ib_atomic_bw", ["-A", "FETCH_AND_ADD"], 8, 1024),
    ("atomic_bw", "ib_atomic_bw", ["-A", "CMP_AND_SWAP"], 8, 1024),
    ("write_lat", "ib_write_lat", [], 5000, 1024),
    ("read_lat", "ib_read_lat", [], 5000, 1024),
    ("send_lat", "ib_send_lat", [], 5000, 1024),
    # jumbo: 10000 B at path MTU 4096 is two full packets and 1808 B
    ("write_bw", "ib_write_bw", [], 10000, 4096),
    ("read_bw", "ib_read_bw", [], 10000, 4096),
    ("send_bw", "ib_send_bw", [], 10000, 4096),
    ("write_lat", "ib_write_lat", [], 10000, 4096),
]


def perftest_flags(test, gid_idx, dev="rxe0"):
    """perftest's usual flags, the same on both sides: -F (no cpufreq
    warning; a no-op in uroce-perf), -x the GID of the port's IPv4 address
    (1 on rxe, whose GID 0 is the link-local address, and 1 on uroce, whose
    GID table has Linux's shape), -d the device (uroce-perf prints it in the
    banner, so it gets rxe0's name; real perftest on uroce opens uroce0).
    Only the bandwidth tests take --report_gbits and -q."""
    flags = ["-F", "-x", gid_idx, "-d", dev]
    if test.endswith("_bw"):
        flags += ["--report_gbits", "-q", str(BW_QPS)]
    return flags


def _perf_pair(name, test, binary, common, mtu, **kw):
    """Both roles of one perftest scenario, with perftest's row count: a
    bandwidth test's #iterations is -n times the number of QPs."""
    n = int(common[common.index("-n") + 1])
    iters = n * BW_QPS if test.endswith("_bw") else n
    tool = " ".join([binary] + perftest_flags(test, "$GID_IDX") + common)
    uroce = ["uroce-perf", test] + perftest_flags(test, "1") + common
    return _both(name, "perf", tool, uroce, mtu, iters=iters, **kw)


def perf():
    out = []
    for test, binary, extra, size, mtu in PERF_TESTS:
        n = LAT_ITERS if test.endswith("_lat") else BW_ITERS
        common = ["-s", str(size), "-n", str(n), "-m", str(mtu)] + extra
        tag = "-".join([test] + ([extra[1].lower()] if extra else []) + ([f"m{mtu}"] if mtu != 1024 else [])
                       + [f"s{size}"])
        out += _perf_pair(tag, test, binary, common, mtu)
    return out


def loss():
    out = []
    for test, binary in (("write_bw", "ib_write_bw"), ("read_bw", "ib_read_bw")):
        common = ["-s", "5000", "-n", str(LOSS_ITERS), "-m", "1024"]
        out += _perf_pair(f"loss-{test}", test, binary, common, 1024, netem=NETEM)
    return out


def ud_srq():
    out = []
    ud = ["-s", "512", "-n", str(PP_ITERS)]
    out += _both("ud_pingpong-s512", "ud", "ibv_ud_pingpong -d rxe0 -g $GID_IDX " + " ".join(ud),
                 ["uroce-pingpong", "--ud"] + ud, 1024, iters=PP_ITERS)
    srq = ["-s", "4096", "-q", "4", "-n", str(PP_ITERS), "-m", "1024"]
    out += _both("srq_pingpong-q4-s4096", "srq", "ibv_srq_pingpong -d rxe0 -g $GID_IDX " + " ".join(srq),
                 ["uroce-pingpong", "--srq"] + srq, 1024, iters=PP_ITERS)
    return out


def uc():
    """UC both ways: ibv_uc_pingpong against uroce-pingpong --uc (single-
    and multi-packet SENDs, jumbo), and perftest's -c UC SEND and WRITE
    tests against uroce-perf -c UC."""
    out = []
    for mtu, size in ((1024, 64), (1024, 4096), (4096, 10000)):
        common = ["-s", str(size), "-m", str(mtu), "-n", str(PP_ITERS)]
        tool = "ibv_uc_pingpong -d rxe0 -g $GID_IDX " + " ".join(common)
        for s in _both(f"uc_pingpong-m{mtu}-s{size}", "pingpong", tool, ["uroce-pingpong", "--uc"] + common, mtu,
                       iters=PP_ITERS, uc=True):
            if s.vm == "server":  # as in rc_pingpong(): uroce checks the echoes it gets
                s.uroce = s.uroce + ["-c"]
            out.append(s)
    for test, binary in (("write_bw", "ib_write_bw"), ("send_bw", "ib_send_bw"), ("write_lat", "ib_write_lat"),
                         ("send_lat", "ib_send_lat")):
        n = LAT_ITERS if test.endswith("_lat") else BW_ITERS
        common = ["-c", "UC", "-s", "5000", "-n", str(n), "-m", "1024"]
        out += _perf_pair(f"uc-{test}-s5000", test, binary, common, 1024, uc=True)
    return out


# The Debian programs on the host through uroce-run. Sizes are not MTU
# multiples (the last packet of a message is short); the UD message fits
# one packet, as ibv_ud_pingpong requires.
VERBS_PINGPONG = [
    ("rc", "ibv_rc_pingpong", "pingpong", ["-s", "5000", "-m", "1024"]),
    ("rc", "ibv_rc_pingpong", "pingpong", ["-s", "10000", "-m", "4096"]),
    ("uc", "ibv_uc_pingpong", "pingpong", ["-s", "5000", "-m", "1024"]),
    ("ud", "ibv_ud_pingpong", "ud", ["-s", "1000"]),
    ("srq", "ibv_srq_pingpong", "srq", ["-s", "3000", "-q", "4", "-m", "1024"]),
]
VERBS_PERF = ["write_bw", "read_bw", "send_bw", "atomic_bw", "write_lat", "read_lat", "send_lat", "atomic_lat"]


def verbs_pingpong():
    out = []
    for short, binary, kind, args in VERBS_PINGPONG:
        common = args + ["-n", str(PP_ITERS)]
        mtu = int(args[args.index("-m") + 1]) if "-m" in args else 1024
        tag = f"verbs-{short}_pingpong-" + "-".join(f"{a[1:]}{b}" for a, b in zip(args[::2], args[1::2])
                                                   if a != "-m" or b != "1024")
        tool = f"{binary} -d rxe0 -g $GID_IDX " + " ".join(common)
        out += _both(tag, kind, tool, ["uroce-run", binary, "-d", "uroce0", "-g", "1"] + common, mtu,
                     iters=PP_ITERS, uc=short == "uc")
    # The drop-in on VLAN 100 (uroce-run --vlan --pcp).
    common = ["-s", "4096", "-n", str(PP_ITERS)]
    tool = f"uix-vlan {VLAN_TOOL} ibv_rc_pingpong -d rxe0 -g @GID " + " ".join(common)
    out += _both("verbs-rc_pingpong-vlan-s4096", "pingpong", tool,
                 ["uroce-run", "ibv_rc_pingpong", "-d", "uroce0", "-g", "1"] + common, 1024, iters=PP_ITERS, vlan=True)
    return out


def _verbs_perf_pair(name, test, common, mtu, **kw):
    binary = "ib_" + test
    n = int(common[common.index("-n") + 1])
    iters = n * BW_QPS if test.endswith("_bw") else n
    tool = " ".join([binary] + perftest_flags(test, "$GID_IDX") + common)
    host = ["uroce-run", binary] + perftest_flags(test, "1", "uroce0") + common
    return _both(name, "perf", tool, host, mtu, iters=iters, **kw)


def verbs_perf():
    out = []
    for test in VERBS_PERF:
        atomic = test.startswith("atomic")
        n = LAT_ITERS if test.endswith("_lat") else BW_ITERS
        common = ["-s", "8" if atomic else "5000", "-n", str(n), "-m", "1024"]
        out += _verbs_perf_pair(f"verbs-{test}-s{common[1]}", test, common, 1024)
    common = ["-s", "10000", "-n", str(BW_ITERS), "-m", "4096"]
    out += _verbs_perf_pair("verbs-write_bw-m4096-s10000", "write_bw", common, 4096)
    return out


def verbs_loss():
    out = []
    for test in ("write_bw", "read_bw"):
        common = ["-s", "5000", "-n", str(VERBS_LOSS_ITERS), "-m", "1024"]
        out += _verbs_perf_pair(f"verbs-loss-{test}", test, common, 1024, netem=NETEM)
    return out


# ucx_perftest (UCX 1.13, Debian's ucx-utils) on uroce-run against
# ucx_perftest on rxe0: UCP tests, each side's device and transports from
# its own UCX_NET_DEVICES and UCX_TLS (rc_verbs needs ud_verbs beside it to
# connect: "no auxiliary transport" otherwise). UCT tests (-x, -d) cannot
# cross: the server takes the client's parameters, device name included,
# and has no uroce0. Each entry: a name, UCX_TLS, ucx_perftest's arguments,
# and the opcodes the client must send. Sizes are not MTU multiples.
UCX_ITERS = 20
# BTH opcodes (IBA 9.2.1) the client must have sent, proof that the data
# took the transport and operation asked for.
RC_SEND = set(range(0x00, 0x06))
RC_WRITE = set(range(0x06, 0x0C))
RC_READ_REQUEST = {0x0C}
UD_SEND = {0x64, 0x65}
UCX_TESTS = [
    ("tag_lat", "rc_verbs,ud_verbs", ["-t", "tag_lat"], ("RC SEND", RC_SEND)),
    ("tag_bw-s10000", "rc_verbs,ud_verbs", ["-t", "tag_bw", "-s", "10000"], ("RC SEND", RC_SEND)),
    ("ucp_put_bw-s10000", "rc_verbs,ud_verbs", ["-t", "ucp_put_bw", "-s", "10000"], ("RC RDMA WRITE", RC_WRITE)),
    ("ucp_get-s10000", "rc_verbs,ud_verbs", ["-t", "ucp_get", "-s", "10000"], ("RC RDMA READ", RC_READ_REQUEST)),
    ("tag_bw-ud-s10000", "ud_verbs", ["-t", "tag_bw", "-s", "10000"], ("UD SEND", UD_SEND)),
]


def ucx_env(dev, tls):
    """UCX's settings on one side. UCX_UD_VERBS_ETH_DGID_CHECK=n: ud_verbs
    takes the received GRH's address length (IPv4 or IPv6) from the
    completion's `sl`, where mlx5 reports the packet's L3 type; rxe and uroce
    both report the service level (0) there, and with the check on, UD
    endpoints time out (rxe against itself as well)."""
    env = [f"UCX_NET_DEVICES={dev}:1", "UCX_UD_VERBS_ETH_DGID_CHECK=n"]
    return env + ([f"UCX_TLS={tls}"] if tls else [])


def ucx():
    """Both roles of each UCX_TESTS entry: the path MTU is the ports' active
    MTU (UCX's default), 4096 on both the jumbo rxe VM and uroce-run
    --mtu 9000."""
    out = []
    for name, tls, args, sent in UCX_TESTS:
        common = args + ["-n", str(UCX_ITERS)]
        tool = " ".join(["env"] + ucx_env("rxe0", tls) + ["ucx_perftest"] + common)
        host = ["uroce-run", "env"] + ucx_env("uroce0", tls) + ["ucx_perftest"] + common
        out += _both(f"ucx-{name}", "ucx", tool, host, 4096, iters=UCX_ITERS, checks=[sent])
    return out


# rdma_cm programs, connected by the CM on the wire: Linux's rdma_cm on rxe
# in the VM, uroce's librdmacm.so.1 through uroce-run on the host. Their
# data moves at the path MTU the CM settles: 4096 between the jumbo VM and
# uroce-run --mtu 9000.
RPING_COUNT = 20


def cm():
    out = []
    rping = f"-p {{port}} -v -C {RPING_COUNT}"
    server_line, client_line = r"^server ping data: rdma-ping-\d+: ", r"^ping data: rdma-ping-\d+: "
    out.append(Scenario("rping-vm_server", "cm", "server", f"rping -s -a {{vm_ip}} {rping}",
                        ["uroce-run", "rping", "-c", "-a", "{vm_ip}"] + rping.split(), 4096, iters=RPING_COUNT,
                        expect=[("uroce", client_line), ("tool", server_line)]))
    out.append(Scenario("rping-vm_client", "cm", "client", f"rping -c -a {{uroce_ip}} {rping}",
                        ["uroce-run", "rping", "-s", "-a", "{uroce_ip}"] + rping.split(), 4096, iters=RPING_COUNT,
                        expect=[("uroce", server_line), ("tool", client_line)]))
    # (name, server's command, client's command (the server's address
    # appended), what each must print once)
    pairs = [
        ("ucmatose", "ucmatose -b {addr} -p {port} -c 2 -C 10 -S 3000", "ucmatose -s {addr} -p {port} -c 2 -C 10 -S 3000",
         r"^return status 0$", r"^return status 0$"),
        ("rdma_server-client", "rdma_server -s {addr} -p {port}", "rdma_client -s {addr} -p {port}",
         r"^rdma_server: end 0$", r"^rdma_client: end 0$"),
    ]
    for test in ("write_bw", "read_bw", "send_lat"):
        cmd = f"ib_{test} -R -F -n 100 -s 5000 -p {{port}}"
        row = r"^ *5000 +100 "
        pairs.append((f"{test}-R", cmd, cmd + " {addr}", row, row))
    for name, srv, cli, srv_ok, cli_ok in pairs:
        rxe_dev = lambda c: c.replace(" -R ", " -R -d rxe0 ")
        own_dev = lambda c: c.replace(" -R ", " -R -d uroce0 ")
        out.append(Scenario(f"{name}-vm_server", "cm", "server", rxe_dev(srv).replace("{addr}", "{vm_ip}"),
                            ["uroce-run"] + own_dev(cli).replace("{addr}", "{vm_ip}").split(), 4096, iters=1,
                            expect=[("uroce", cli_ok), ("tool", srv_ok)]))
        out.append(Scenario(f"{name}-vm_client", "cm", "client", rxe_dev(cli).replace("{addr}", "{uroce_ip}"),
                            ["uroce-run"] + own_dev(srv).replace("{addr}", "{uroce_ip}").split(), 4096, iters=1,
                            expect=[("uroce", srv_ok), ("tool", cli_ok)]))
    # uroce-perf -R (its own perftest conversation over an rdma_cm QP, the
    # test's QPs connected by the CM) against rxe's perftest -R.
    for test in ("write_bw", "read_bw", "send_bw", "send_lat"):
        common = "-R -F -n 100 -s 5000 -p {port}"
        row = r"^ *5000 +100 "
        own = ["uroce-perf", test] + common.split() + ["-m", "4096"]
        out.append(Scenario(f"uroce-perf-{test}-R-vm_server", "cm", "server", f"ib_{test} -d rxe0 {common}",
                            own + ["{vm_ip}"], 4096, iters=1, expect=[("uroce", row), ("tool", row)]))
        out.append(Scenario(f"uroce-perf-{test}-R-vm_client", "cm", "client",
                            f"ib_{test} -d rxe0 {common} {{uroce_ip}}", own, 4096, iters=1,
                            expect=[("uroce", row), ("tool", row)]))
    # udaddy: UD ids found by SIDR, ten messages each way (its port is
    # fixed: 7174 in the UDP port space).
    ok = r"^return status 0$"
    out.append(Scenario("udaddy-vm_server", "cm", "server", "udaddy -b {vm_ip}",
                        ["uroce-run", "udaddy", "-s", "{vm_ip}"], 4096, iters=1, sidr=True, fixed_port=7174,
                        expect=[("uroce", ok), ("tool", ok)]))
    out.append(Scenario("udaddy-vm_client", "cm", "client", "udaddy -s {uroce_ip}",
                        ["uroce-run", "udaddy", "-b", "{uroce_ip}"], 4096, iters=1, sidr=True, fixed_port=7174,
                        expect=[("uroce", ok), ("tool", ok)]))
    # A program that moves its QP itself (rdma_init_qp_attr, and
    # rdma_establish after CONNECT_RESPONSE: tests/abi/rdmacm_manual_qp.cpp)
    # against ucmatose's ten messages each way, when the build gives it.
    manual = os.environ.get("RDMACM_MANUAL_QP")
    if manual:
        ok = r"^rdmacm_manual_qp: end 0$"
        out.append(Scenario("manual_qp-vm_server", "cm", "server", "ucmatose -b {vm_ip} -p {port}",
                            ["uroce-run", manual, "-c", "{vm_ip}", "-p", "{port}"], 4096, iters=1,
                            expect=[("uroce", ok), ("tool", r"^return status 0$")]))
        out.append(Scenario("manual_qp-vm_client", "cm", "client", "ucmatose -s {uroce_ip} -p {port}",
                            ["uroce-run", manual, "-s", "{uroce_ip}", "-p", "{port}"], 4096, iters=1,
                            expect=[("uroce", ok), ("tool", r"^return status 0$")]))
    # fio's rdma engine: the client writes to (RDMA WRITE) or reads from
    # (RDMA READ) the server's buffer, every block with a crc32c header that
    # fio checks; err= 0 on both sides. uroce as the client only: uroce's
    # server job often ends, its QP gone, before rxe's slower client sends
    # its last SEND (fio's "done" message), which then goes unanswered
    # (fio's own race; docs/cm.md).
    fio = "fio --name={role} --ioengine=rdma --port={port} --bs=64k --size=2m --verify=crc32c"
    for verb in ("write", "read"):
        srv = fio.replace("{role}", "srv") + " --rw=read"
        cli = fio.replace("{role}", "cli") + f" --rw=write --verb={verb} --hostname={{addr}}"
        ok = r"err= 0:"
        out.append(Scenario(f"fio-{verb}-vm_server", "cm", "server", srv, ["uroce-run"] + cli.replace("{addr}", "{vm_ip}").split(),
                            4096, iters=1, expect=[("uroce", ok), ("tool", ok)]))
    return out


# Programs that find their RDMA device through the kernel's interfaces, or
# reach the rdma_cm peer at the address of their TCP connection: the host's
# interface carries uroce's address too (net.share_roce_address). Their
# tool and uroce command lines are templates, as cm's are.
#
# libfabric's verbs provider (fi_pingpong -p verbs): its datagram endpoint
# (UD QPs and address handles) and its connected one (RC QPs connected by
# rdma_cm: the CM on the wire). Each message is checked (-c). The two sides
# first meet on fi_pingpong's own TCP connection (-B/-P), where they swap
# their endpoint names (GID and QPN, or the listener's address). The
# reliable datagram endpoint (-e rdm, ofi_rxm over the connected one) runs
# between two uroce processes only (tests/abi): on rxe in the VM its
# fi_enable fails with EINVAL before anything is sent.
FI_ITERS = 10
# Groups whose host side has uroce's address in the kernel as well.
SHARED_ADDRESS = {"apps"}


def apps():
    out = []
    for ep in ("dgram", "msg"):
        # msg goes up to 1 MiB by default: 64 KiB is enough to segment,
        # and keeps the emulated VM's share short.
        common = f"fi_pingpong -p verbs -e {ep} -c -I {FI_ITERS}" + ("" if ep == "dgram" else " -S 65536")
        srv, cli = common + " -B {port}", common + " -P {port}"
        # Both sides name their IPv4 GID: libfabric takes index 0 unless
        # told, which is the link-local IPv6 one on rxe and on uroce alike,
        # and an IPv4 peer cannot be reached from it (perftest's -x, the same).
        vm_srv, vm_cli = "env FI_VERBS_GID_IDX=$GID_IDX " + srv, "env FI_VERBS_GID_IDX=$GID_IDX " + cli
        own = ["uroce-run", "env", "FI_VERBS_GID_IDX=1"]
        row = rf"^64k? +{FI_ITERS} +={FI_ITERS} "
        out.append(Scenario(f"fi_pingpong-{ep}-vm_server", "fi", "server", vm_srv,
                            own + (cli + " {vm_ip}").split(), 4096, iters=1,
                            expect=[("uroce", row), ("tool", row)], cm_wire=ep == "msg"))
        out.append(Scenario(f"fi_pingpong-{ep}-vm_client", "fi", "client", vm_cli + " {br_ip}",
                            own + srv.split(), 4096, iters=1,
                            expect=[("uroce", row), ("tool", row)], cm_wire=ep == "msg"))
    # qperf -cm1: its client reaches the server's rdma_cm at the address of
    # their TCP control connection; its server serves until stopped, a
    # process per connection. A second a test, messages of one packet.
    tests = "-cm1 -t 1 -m 4096 rc_bw rc_lat"
    result = [r"^rc_bw:$", r"^rc_lat:$", r"^ +bw += +[0-9.]+ [KMG]?B/sec$", r"^ +latency += +[0-9.]+ [mun]?s$"]
    out.append(Scenario("qperf-vm_server", "fi", "server", "qperf -lp {port}",
                        ["uroce-run", "qperf", "{vm_ip}", "-lp", "{port}"] + tests.split(), 4096, iters=1,
                        expect=[("uroce", r) for r in result], cm_wire=True, serves=True, oracle=False))
    out.append(Scenario("qperf-vm_client", "fi", "client", f"qperf {{uroce_ip}} -lp {{port}} {tests}",
                        ["uroce-run", "qperf", "-lp", "{port}"], 4096, iters=1,
                        expect=[("tool", r) for r in result], cm_wire=True, serves=True, oracle=False))
    return out


GROUPS = {
    "rc_pingpong": rc_pingpong,
    "perf": perf,
    "loss": loss,
    "ud_srq": ud_srq,
    "uc": uc,
    "verbs_pingpong": verbs_pingpong,
    "verbs_perf": verbs_perf,
    "verbs_loss": verbs_loss,
    "ucx": ucx,
    "cm": cm,
    "apps": apps,
}


def all_names():
    return {g: [s.name for s in f()] for g, f in GROUPS.items()}
