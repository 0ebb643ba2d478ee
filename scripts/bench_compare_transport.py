#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Compares transport-bench between two builds, interleaved in one run.

Runs BUILD_A's and BUILD_B's tests/bench/transport-bench in turn, ROUNDS times
(A, B, A, B, ...), pinned to one CPU, and prints per case the median ns per
message of each build, the median of the per-round ratios B/A, and the ratio
of the fastest rounds. Alternating in one run is what makes the ratio mean
something on a shared machine: both builds see the same noise.

Usage: bench_compare_transport.py BUILD_A BUILD_B [ROUNDS] [CPU]
"""
import re
import statistics
import subprocess
import sys

SUMMARY = re.compile(r"summary: (.+?)\s+\d+ msgs,\s+\d+ frames/batch:\s+([\d.]+) ns/msg")


def run(build, cpu):
    prog = f"{build}/tests/bench/transport-bench"
    cmd = ["taskset", "-c", str(cpu), prog, "[transport]", "--benchmark-samples", "10"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return {m.group(1).strip(): float(m.group(2)) for m in SUMMARY.finditer(out)}


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    a, b = argv[1], argv[2]
    rounds = int(argv[3]) if len(argv) > 3 else 6
    cpu = int(argv[4]) if len(argv) > 4 else 1
    res_a, res_b = [], []
    for i in range(rounds):
        res_a.append(run(a, cpu))
        res_b.append(run(b, cpu))
        print(f"round {i + 1}/{rounds} done", file=sys.stderr, flush=True)
    cases = [c for c in res_a[0] if all(c in r for r in res_a + res_b)]
    print(f"| case | A ns/msg (median) | B ns/msg (median) | B/A, median of rounds | B/A, fastest rounds |")
    print("| --- | --- | --- | --- | --- |")
    for c in cases:
        xa = [r[c] for r in res_a]
        xb = [r[c] for r in res_b]
        ratios = [y / x for x, y in zip(xa, xb)]
        print(f"| {c} | {statistics.median(xa):.1f} | {statistics.median(xb):.1f} | "
              f"{statistics.median(ratios):.3f} | {min(xb) / min(xa):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
