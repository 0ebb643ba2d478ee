#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Records what real perftest prints: the reference uroce-perf's output is
compared with (tests/perf/perftest_shape.py).

    perftest_reference.py CACHE OUTDIR [NAME...]

Boots one rxe VM (the interop image, tests/interop/image.py) and runs each
case of CASES inside it: the perftest server in the background and the
client against the VM's own address, so both ends run over rxe0 (rxe loops
the frames back). Writes OUTDIR/NAME.server.txt and NAME.client.txt (stdout,
then a line `--- stderr` and stderr) and, for --out_json cases,
NAME.server.json and NAME.client.json. Root only; exit 77 when the image
cannot be had.
"""

import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
sys.path.insert(0, HERE)

import harness  # noqa: E402
import image  # noqa: E402
import net  # noqa: E402
from harness import Failure, Harness, Skip  # noqa: E402
from vm import VM  # noqa: E402

BASE = "-d rxe0 -x 1 -F -n 20"
TESTS = ["write_bw", "read_bw", "send_bw", "atomic_bw", "write_lat", "read_lat", "send_lat", "atomic_lat"]
BW = [t for t in TESTS if t.endswith("_bw")]
LAT = [t for t in TESTS if t.endswith("_lat")]

# name -> (tool, extra arguments for both sides, json?)
CASES = {}
for t in TESTS:
    CASES[t] = (t, "", False)
    CASES[t + "_q2"] = (t, "-q 2", False) if t in BW else None
    CASES[t + "_json"] = (t, "", True)
for t in BW:
    CASES[t + "_gbits"] = (t, "--report_gbits", False)
    CASES[t + "_nopeak"] = (t, "-N", False)
    CASES[t + "_out_bw"] = (t, "--output=bandwidth", False)
    CASES[t + "_out_rate"] = (t, "--output=message_rate", False)
    CASES[t + "_sizes"] = (t, "-s 8 -s 64", False) if False else None
    CASES[t + "_bidir"] = (t, "-b", False)
    CASES[t + "_q2_json"] = (t, "-q 2", True)
for t in LAT:
    CASES[t + "_H"] = (t, "-H", False)
    CASES[t + "_U"] = (t, "-U", False)
    CASES[t + "_C"] = (t, "-C", False)
    CASES[t + "_out_lat"] = (t, "--output=latency", False)
CASES["write_bw_s8"] = ("write_bw", "-s 8", False)
CASES["write_bw_D1"] = ("write_bw", "-D 2", False)
CASES["send_bw_report_both"] = ("send_bw", "-b --report-both", False)
CASES = {k: v for k, v in CASES.items() if v}

PORT = 18515


def run_case(vm, name, tool, extra, js, outdir, port):
    sj = f"--out_json --out_json_file=/tmp/{name}.server.json" if js else ""
    cj = f"--out_json --out_json_file=/tmp/{name}.client.json" if js else ""
    srv = f"ib_{tool} {BASE} {extra} -p {port} {sj}".split()
    cli = f"ib_{tool} {BASE} {extra} -p {port} {cj} {net.VM_IP}".split()
    script = (
        "cd /tmp; rm -f s.out s.err s.rc c.out c.err; "
        f"(timeout 60 {' '.join(srv)} > s.out 2> s.err; echo $? > s.rc) & "
        f"uix-listen {port} 30 && timeout 60 {' '.join(cli)} > c.out 2> c.err; echo $? > c.rc; "
        "i=0; while [ ! -s s.rc ] && [ $i -lt 400 ]; do sleep 0.1; i=$((i+1)); done; "
        "echo '=== s.out'; cat s.out; echo '=== s.err'; cat s.err; echo '=== s.rc'; cat s.rc; "
        "echo '=== c.out'; cat c.out; echo '=== c.err'; cat c.err; echo '=== c.rc'; cat c.rc; "
        + (f"echo '=== s.json'; cat /tmp/{name}.server.json; echo '=== c.json'; cat /tmp/{name}.client.json; " if js else "")
        + "echo '=== end'")
    _, out = vm.run(script, timeout_s=150, check=False)
    parts, cur = {}, None
    for ln in out.splitlines(keepends=True):
        if ln.startswith("=== "):
            cur = ln[4:].strip()
            parts[cur] = ""
        elif cur:
            parts[cur] += ln
    for side, s in (("server", "s"), ("client", "c")):
        cmd = srv if side == "server" else cli
        with open(os.path.join(outdir, f"{name}.{side}.txt"), "w") as f:
            f.write(parts.get(f"{s}.out", ""))
            f.write("--- stderr\n" + parts.get(f"{s}.err", ""))
        if js:
            with open(os.path.join(outdir, f"{name}.{side}.json"), "w") as f:
                f.write(parts.get(f"{s}.json", ""))
        yield side, " ".join(cmd), parts.get(f"{s}.rc", "?").strip()


def main(argv):
    cache, outdir = argv[1:3]
    only = argv[3:]
    harness.require_root()
    img = image.build(cache)
    os.makedirs(outdir, exist_ok=True)
    prov = []
    with Harness("ixref") as h:
        n = net.create(h, "ref")
        work = tempfile.mkdtemp(prefix="perftest-ref-")
        vm = VM(h, work, img, n.ns, n.tap, net.VM_MAC, net.VM_IP + "/24", 1500, name="ref")
        info = vm.wait_ready(60)
        print(f"VM up: kernel {info.get('kernel')}, active MTU {info.get('active_mtu')}", flush=True)
        for i, (name, (tool, extra, js)) in enumerate(CASES.items()):
            if only and name not in only:
                continue
            t = time.monotonic()
            for side, cmd, rc in run_case(vm, name, tool, extra, js, outdir, PORT + i % 50):
                prov.append(f"{name}.{side}: `{cmd}` (exit {rc})")
            print(f"{name} ({time.monotonic() - t:.1f} s)", flush=True)
        vm.poweroff()
    with open(os.path.join(outdir, "commands.txt"), "w") as f:
        f.write("\n".join(prov) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Skip as e:
        print(f"SKIP: {e}")
        sys.exit(77)
    except Failure as e:
        print(f"FAIL: {e}")
        sys.exit(1)
