# SPDX-License-Identifier: BSD-3-Clause
"""The netns test cases: which uroce-perf test, over which link, with which faults.

Every case runs uroce-perf with --verify and --pcap on the client. Sizes
span several packets and are not multiples of the path MTU (5000 B at 1024:
four full packets and 904 B; 10000 B at 4096: two and 1808 B).
"""

from dataclasses import dataclass, field

from impair import Impairment


@dataclass
class Case:
    test: str                       # uroce-perf TEST
    args: list                      # its options (besides --dev/--ip/-p/--pcap/--verify)
    port: str = "af_packet"         # af_packet | af_xdp | memif
    mtu: int = 1500                 # veth MTU
    pmtu: int = 1024                # RoCE path MTU (-m)
    imp: Impairment = field(default_factory=Impairment)
    expect_retransmits: bool = False
    client_says: str = ""           # a line the client must print

    @property
    def raw(self):
        """raw_bw / raw_lat: plain frames, no RoCE stack (its counters stay 0)."""
        return self.test.startswith("raw_")

    @property
    def kind(self):
        return "lat" if self.test.endswith("_lat") else "bw"


BW_ARGS = ["-s", "5000", "-n", "200", "-m", "1024"]
LAT_ARGS = ["-s", "5000", "-n", "100", "-m", "1024"]

CASES = {}

# Every test over af_packet on a 1500-byte veth, path MTU 1024.
for t in ("write_bw", "read_bw", "send_bw"):
    CASES[f"afpacket-{t}"] = Case(t, BW_ARGS)
CASES["afpacket-atomic_bw"] = Case("atomic_bw", ["-n", "500", "-m", "1024"])
CASES["afpacket-atomic_bw-cmp_swap"] = Case("atomic_bw", ["-n", "500", "-m", "1024", "-A", "CMP_AND_SWAP"])
for t in ("write_lat", "read_lat", "send_lat"):
    CASES[f"afpacket-{t}"] = Case(t, LAT_ARGS)
CASES["afpacket-raw_bw"] = Case("raw_bw", ["-n", "2000", "-m", "1024"])
CASES["afpacket-raw_lat"] = Case("raw_lat", ["-s", "1000", "-n", "500", "-m", "1024"])

# Path MTU 4096 on a 9000-byte veth.
for t in ("write_bw", "read_bw", "send_lat"):
    CASES[f"afpacket-mtu4096-{t}"] = Case(t, ["-s", "10000", "-n", "200", "-m", "4096"], mtu=9000, pmtu=4096)

# Faults on the link, both directions, RoCE frames only; 200 x 5 packets
# each way, so that 2 % loss drops nothing with probability 0.98^1000 ~ 2e-9
# (netem; the relay is seeded). Go-back-N resends the whole window after a
# reordered frame, so reorder stays at 2 %: at 10 % a run retransmitted 12x
# its data, and the oracle (~4 ms per packet) would not finish in time.
FAULTS = {
    "loss": Impairment(loss=2, seed=11),
    "reorder": Impairment(reorder=2, seed=12),
    "duplicate": Impairment(duplicate=2, seed=13),
    "corrupt": Impairment(corrupt=2, seed=14),
}
for fault, imp in FAULTS.items():
    for t in ("write_bw", "read_bw"):
        CASES[f"{fault}-{t}"] = Case(t, BW_ARGS, imp=imp, expect_retransmits=(fault == "loss"))

# memif between two processes in the root namespace, TCP over 127.0.0.1.
CASES["memif-write_bw"] = Case("write_bw", BW_ARGS, port="memif")
CASES["memif-write_lat"] = Case("write_lat", LAT_ARGS, port="memif")
# raw_lat with a 62-byte frame ahead of each frame, both ways (what RC's ACKs
# cost the link, docs/benchmarks.md), between two processes.
CASES["memif-raw_lat-acks"] = Case("raw_lat", ["-s", "82", "-n", "2000", "--raw-acks"], port="memif",
                                   client_says=" uroce: 82 B: 2000 ACK-sized frames received")

# af_xdp on the veth (copy mode); frames must stay under ~3.4 KB, so path MTU 1024.
CASES["afxdp-write_bw"] = Case("write_bw", BW_ARGS, port="af_xdp")
