#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""uroce-perf's output, line-shape for line-shape, against what perftest 4.5
printed (tests/data/perftest, recorded over rxe; see PROVENANCE.md).

    perftest_shape.py UROCE_PERF DATA_DIR WORKDIR

Each case runs `uroce-perf TEST --loopback -n 20 EXTRA` and compares its
stdout with the client's stdout of the reference case (a loopback run
prints the client's lines). A line's shape is the line with:
  - every hex number (0x...) replaced by H, then every decimal number
    (integers, fractions, GID bytes) with the spaces after it by "N "
    (perftest pads figures to a width, so the spaces after a figure depend
    on its digits; tabs and every other space stay);
  - a figure printed as "nan" or "-nan" (with the spaces after it) by "N "
    too: it is printf's rendering of a value, not of the layout; perftest
    prints a -nan stdev when a deviation's square overflows its int
    arithmetic (cycles of a millisecond round trip over rxe), which
    uroce-perf reproduces for the same samples (perf-report checks that);
  - the value of the banner's Device field replaced by DEV.
uroce's own lines after the table (" uroce..." and the cc lines) are left
out. JSON cases (--out_json) compare the keys of test_info and results
with the reference's JSON, and check that the figures equal the table's.
uroce-perf takes every flag these cases use: a usage error (exit 2) is a
failure.
"""

import json
import os
import re
import subprocess
import sys

TESTS = ["write_bw", "read_bw", "send_bw", "atomic_bw", "write_lat", "read_lat", "send_lat", "atomic_lat"]
BW = [t for t in TESTS if t.endswith("_bw")]
CASES = [(t, t, []) for t in TESTS]
CASES += [(t + "_q2", t, ["-q", "2"]) for t in BW]
CASES += [(t + "_gbits", t, ["--report_gbits"]) for t in BW]
CASES += [(t + "_nopeak", t, ["-N"]) for t in BW]
CASES += [(t + "_out_bw", t, ["--output=bandwidth"]) for t in BW]
CASES += [(t + "_out_rate", t, ["--output=message_rate"]) for t in BW]
CASES += [(t + "_bidir", t, ["-b"]) for t in BW]
CASES += [("send_bw_report_both", "send_bw", ["-b", "--report-both"])]
CASES += [(t + s, t, [f]) for t in TESTS if t.endswith("_lat")
          for s, f in (("_H", "-H"), ("_U", "-U"), ("_C", "-C"), ("_out_lat", "--output=latency"))]
JSON_CASES = [(t + "_json", t, []) for t in TESTS] + [(t + "_q2_json", t, ["-q", "2"]) for t in BW]

HEX = re.compile(r"0x[0-9a-fA-F]+")
NUM = re.compile(r"(?<![A-Za-z_])[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)? *")
NAN = re.compile(r"(?<![A-Za-z_])-?nan *")
DEV = re.compile(r"(Device         : )[^\t\n]*")


def shape(line):
    line = DEV.sub(r"\1DEV", line)
    line = HEX.sub("H", line)
    line = NAN.sub("N ", line)
    return NUM.sub("N ", line)


def reference_stdout(data, name):
    with open(os.path.join(data, f"{name}.client.txt")) as f:
        return f.read().split("--- stderr\n")[0].splitlines()


def uroce_lines(out):
    return [ln for ln in out.splitlines() if not ln.startswith((" uroce", "  qp 0x"))]


def loose_json_keys(path):
    """perftest's JSON has unquoted keys: `key: value,` per line, `name: {` opens an object."""
    keys, cur = {}, None
    for ln in open(path):
        ln = ln.strip()
        m = re.match(r"^([^:{}]+?)\s*:\s*\{$", ln)
        if m:
            cur = m.group(1)
            keys[cur] = []
            continue
        m = re.match(r"^([^:{}]+?)\s*:\s*(.+?),?$", ln)
        if m and cur:
            keys[cur].append(m.group(1))
    return keys


def usage_error(p):
    """A flag or test uroce-perf refused: its usage error (exit 2)."""
    return p.returncode == 2 and "Run with --help" in p.stderr


def run(perf, test, extra, cwd):
    argv = [perf, test, "--loopback", "-n", "20"] + extra
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120, cwd=cwd)
    return argv, p


def main(perf, data, work):
    os.makedirs(work, exist_ok=True)
    failures, ran = [], 0
    for name, test, extra in CASES:
        argv, p = run(perf, test, extra, work)
        if usage_error(p):
            failures.append(f"{name}: {' '.join(argv)}: usage error\n{p.stderr[-800:]}")
            continue
        ran += 1
        if p.returncode != 0:
            failures.append(f"{name}: {' '.join(argv)} exited {p.returncode}\n{p.stderr[-800:]}")
            continue
        want = [shape(ln) for ln in reference_stdout(data, name)]
        got = [shape(ln) for ln in uroce_lines(p.stdout)]
        if want != got:
            diff = [f"  line {i + 1}:\n    perftest {w!r}\n    uroce    {g!r}"
                    for i, (w, g) in enumerate(zip(want + [""] * len(got), got + [""] * len(want))) if w != g]
            failures.append(f"{name}: {' '.join(argv)}: {len(diff)} line shapes differ\n" + "\n".join(diff[:6]))
    for name, test, extra in JSON_CASES:
        path = os.path.join(work, f"{name}.json")
        argv, p = run(perf, test, extra + ["--out_json", "--out_json_file=" + path], work)
        if usage_error(p):
            failures.append(f"{name}: {' '.join(argv)}: usage error\n{p.stderr[-800:]}")
            continue
        ran += 1
        if p.returncode != 0:
            failures.append(f"{name}: {' '.join(argv)} exited {p.returncode}\n{p.stderr[-800:]}")
            continue
        got = json.load(open(path))
        want = loose_json_keys(os.path.join(data, f"{name}.client.json"))
        for section in ("test_info", "results"):
            if list(got[section]) != want[section]:
                failures.append(f"{name}: {section} keys {list(got[section])}, perftest's {want[section]}")
        row = next((ln for ln in p.stdout.splitlines() if re.match(r"^ [0-9]+ +[0-9]+ ", ln)), "")
        figures = [float(x) for x in row.split()[2:]]
        r = got["results"]
        table = [r["BW_peak"], r["BW_average"], r["MsgRate"]] if "BW_peak" in r else \
            [r[k] for k in ("t_min", "t_max", "t_typical", "t_avg", "t_stdev", "percentile_99", "percentile_99.9")]
        if [round(x, 2) for x in figures] != [round(x, 2) for x in table]:
            failures.append(f"{name}: the JSON's figures {table} are not the table's {figures}")
        tx = re.search(r"TX depth +: (\d+)", p.stdout)
        if tx and got["test_info"].get("TX_depth") != int(tx.group(1)):
            failures.append(f"{name}: JSON TX_depth {got['test_info'].get('TX_depth')}, banner {tx.group(1)}")
    # --out_json alone: perftest_out.json in the working directory, nothing more on stdout.
    default = os.path.join(work, "perftest_out.json")
    if os.path.exists(default):
        os.unlink(default)
    argv, p = run(perf, "write_bw", ["--out_json"], work)
    ran += 1
    if p.returncode != 0 or not os.path.exists(default) or "{" in p.stdout:
        failures.append(f"--out_json: exit {p.returncode}, perftest_out.json "
                        f"{'written' if os.path.exists(default) else 'missing'}, stdout:\n{p.stdout}")
    # An unwritable JSON path fails before the run, with the reason.
    argv, p = run(perf, "write_bw", ["--out_json", "--out_json_file=/nonexistent/dir/r.json"], work)
    ran += 1
    if p.returncode != 1 or "No such file or directory" not in p.stderr or "#bytes" in p.stdout:
        failures.append(f"unwritable --out_json_file: exit {p.returncode}, stderr {p.stderr!r}, stdout {p.stdout[:200]!r}")
    for f in failures:
        print("FAIL " + f)
    print(f"{ran} cases run, {len(failures)} failed")
    if failures:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]))
