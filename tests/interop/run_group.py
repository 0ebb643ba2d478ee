#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""One interop test: boot one rxe VM, run a group of scenarios against it.

usage: run_group.py GROUP[:ROLE] UROCE_PERF UROCE_PINGPONG UROCE_RUN UROCE_DUMP ORACLE_PY CACHE WORKDIR [NAME...]
       run_group.py --list

GROUP is a key of scenarios.GROUPS; ROLE (vm_server or vm_client) keeps the
scenarios of one role; NAMEs keep only those scenarios. `image` as GROUP
only builds the VM image. Exit 0 pass, 1 fail, 77 skip (not root, or qemu or
the kernel package cannot be had). Every scenario's outputs and capture stay
in WORKDIR/<scenario>/.
"""

import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
sys.path.insert(0, HERE)

import harness  # noqa: E402
import image  # noqa: E402
import net  # noqa: E402
import oracle_batch  # noqa: E402
import vm_probe  # noqa: E402
import scenario_run  # noqa: E402
import scenarios  # noqa: E402
from harness import Failure, Harness, Skip  # noqa: E402
from vm import VM, Unresponsive  # noqa: E402

BASE_PORT = 18600


def missing_mode(app, sc):
    """uroce-pingpong --ud / --srq are added separately: skip those scenarios
    (reported, not passed) while the binary lacks them; and a Debian program
    that is not installed (it also goes into the VM)."""
    if sc.uroce[0] == "uroce-run":
        prog = scenario_run.shim_program(sc)
        return None if shutil.which(prog) else f"{prog} is not installed"
    flag = next((a for a in sc.uroce if a in ("--ud", "--srq")), None)
    if not flag:
        return None
    out = subprocess.run([app, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    return None if flag in out else f"{os.path.basename(app)} has no {flag}"


def tool_versions():
    out = []
    for pkg in ("ibverbs-utils", "perftest", "ibverbs-providers", "ucx-utils"):
        p = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        out.append(f"{pkg} {p.stdout or '?'}")
    return ", ".join(out)


def main(argv):
    if argv[1:2] == ["--list"]:
        for g, names in scenarios.all_names().items():
            print(f"{g}: {' '.join(names)}")
        return 0
    group, perf, pingpong, uroce_run, dump, oracle_py, cache, work = argv[1:9]
    only = set(argv[9:])
    harness.require_root()
    img = image.build(cache)
    if group == "image":
        print(f"image: kernel {img['kver']} ({img['deb']}), {img['kernel']}, {img['initrd']}")
        return 0
    gname, _, role = group.partition(":")
    scs = [s for s in scenarios.GROUPS[gname]() if (not role or s.name.endswith(role)) and (not only or s.name in only)]
    bins = {"uroce-perf": perf, "uroce-pingpong": pingpong, "uroce-run": uroce_run}
    os.makedirs(work, exist_ok=True)
    skipped, results = [], []
    with Harness(f"ix{gname[:6]}") as h:
        n = net.create(h, gname[:6])
        if gname in scenarios.SHARED_ADDRESS:
            net.share_roce_address(n)
        boots = [0]

        def boot():
            boots[0] += 1
            v = VM(h, work, img, n.ns, n.tap, net.VM_MAC, net.VM_IP + "/24", net.LINK_MTU, name=f"rxe{boots[0]}")
            info = v.wait_ready(60)
            print(f"VM up in {v.boot_s:.1f} s: kernel {info.get('kernel')}, rxe0 GID index {info.get('gid_idx')} "
                  f"{info.get('gid')}, active MTU {info.get('active_mtu')}", flush=True)
            return v

        vm = boot()
        print("VM tools (the host's, copied in): " + tool_versions(), flush=True)
        for i, sc in enumerate(scs):
            why = missing_mode(pingpong, sc)
            if why:
                skipped.append(f"{sc.name}: {why}")
                print(f"SKIP {sc.name}: {why}", flush=True)
                continue
            try:
                r = scenario_run.run(h, vm, n, sc, bins, dump, oracle_py, work, BASE_PORT + i)
            except Unresponsive as e:
                # Say where the guest is before failing: sample its vCPU,
                # then name the addresses with a fresh boot's kallsyms.
                rips, stack = vm.probe()
                vm.proc.kill()
                where = vm_probe.describe(rips, stack, boot().kallsyms())
                raise Failure(f"{sc.name}: {e}\nthe unresponsive VM's {where}")
            results.append(r)
            print(f"PASS {sc.name} ({r.seconds:.1f} s)", flush=True)
            for note in r.notes:
                print(f"     {note}", flush=True)
        vm.poweroff()
    for line in oracle_batch.judge(oracle_py, results, work):
        print(line, flush=True)
    print(f"{len(results)} scenarios passed, {len(skipped)} skipped")
    if not results and skipped:
        raise Skip("; ".join(skipped))
    return 0


if __name__ == "__main__":
    t = time.monotonic()
    try:
        rc = main(sys.argv)
    except Skip as e:
        print(f"SKIP: {e}")
        rc = 77
    except Failure as e:
        print(f"FAIL: {e}")
        rc = 1
    except harness.Terminated as e:
        print(f"FAIL: terminated ({e}); everything created was removed")
        rc = 1
    print(f"({time.monotonic() - t:.1f} s)")
    sys.exit(rc)
