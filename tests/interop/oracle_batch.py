# SPDX-License-Identifier: BSD-3-Clause
"""The oracle over a whole group's captures at once.

The oracle (../shared/tools/oracle) judges each RoCE packet on its own (no
state across packets), and its start-up (Scapy, tshark) costs seconds per
call, so a group's captures are joined per path MTU into one pcap and judged
in one call. Only when that fails is each capture judged alone, to name the
scenario.
"""

import os

from captures import oracle, read_pcap
from harness import Failure


def join(paths, out):
    header = None
    with open(out, "wb") as f:
        for p in paths:
            h, records = read_pcap(p)
            if header is None:
                header = h
                f.write(h)
            f.write(b"".join(records))


def judge(oracle_py, results, work):
    """results: objects with .name, .pcap, .pmtu (no .pcap: not for the
    oracle). Returns report lines."""
    if not oracle_py or not os.path.exists(oracle_py):
        return [f"oracle not found at {oracle_py}: not run (uroce-dump judged every capture)"]
    lines = []
    results = [r for r in results if r.pcap]
    for pmtu in sorted({r.pmtu for r in results}):
        group = [r for r in results if r.pmtu == pmtu]
        joined = os.path.join(work, f"all-pmtu{pmtu}.pcap")
        join([r.pcap for r in group], joined)
        rc, out = oracle(oracle_py, joined, pmtu)
        if rc == 0:
            lines.append(f"the oracle passes all {len(group)} captures at path MTU {pmtu} ({joined})")
            continue
        for r in group:
            rc1, out1 = oracle(oracle_py, r.pcap, pmtu)
            if rc1 != 0:
                raise Failure(f"{r.name}: the oracle rejects {r.pcap} (exit {rc1}):\n{out1[-3000:]}")
        raise Failure(f"the oracle rejects the joined captures {joined} but none alone:\n{out[-3000:]}")
    return lines
