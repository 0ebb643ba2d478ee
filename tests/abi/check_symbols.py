#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fails unless LIBRARY exports exactly the symbols and versions of EXPECTED.

The version nodes and their parents must match EXPECTED's .verdefs twin
(IBVERBS_1.0 <- 1.1 <- 1.5 ... <- 1.14, IBVERBS_PRIVATE_34 alone; RDMACM_1.0
<- 1.1 <- 1.2 <- 1.3). EXPECTED is tests/data/abi/libibverbs1-44.0-2.symbols
or librdmacm1-44.0-2.symbols ("VERSION NAME KIND" per line, compat versions
in parentheses); LIBRARY is read with objdump -T
the same way. A difference that is meant must be listed in ALLOWED with its
reason; none is today.

With --installed it also compares EXPECTED with the system's own
library when that is Debian's 44.0 (exit 77 otherwise): a newer
rdma-core shows up here first.

usage: check_symbols.py EXPECTED LIBRARY [--installed]
"""
import os
import subprocess
import sys

ALLOWED = {}  # (version, name, kind): why the drop-in differs


def exported(lib):
    out = subprocess.run(["objdump", "-T", lib], check=True, capture_output=True, text=True).stdout
    rows = set()
    for line in out.splitlines()[4:]:
        f = line.split()
        if len(f) < 6 or "*UND*" in line:
            continue
        rows.add((f[-2], f[-1], f[2]))
    return rows


def verdefs(lib):
    """{node: parent or "-"} from readelf -V's version definitions."""
    out = subprocess.run(["readelf", "-V", lib], check=True, capture_output=True, text=True).stdout
    out = out.split(".gnu.version_d")[1].split(".gnu.version_r")[0] if ".gnu.version_d" in out else ""
    nodes, cur = {}, None
    for line in out.splitlines():
        if "Name:" in line and "Flags: BASE" not in line:
            cur = line.split("Name:")[1].split()[0]
            nodes[cur] = "-"
        elif "Parent 1:" in line and cur:
            nodes[cur] = line.split("Parent 1:")[1].split()[0]
    return nodes


def main(argv):
    expected_file, lib = argv[1], argv[2]
    with open(expected_file) as f:
        expected = {tuple(l.split()) for l in f if l.strip()}
    if "--installed" in argv:
        system = ("/usr/lib/x86_64-linux-gnu/librdmacm.so.1.3.44.0" if "librdmacm" in expected_file
                  else "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0")
        if not os.path.exists(system):
            print(f"SKIP: {system} not installed (another libibverbs version)")
            return 77
        lib = system
    have = exported(lib)
    missing = sorted(expected - have - set(ALLOWED))
    extra = sorted(have - expected - set(ALLOWED))
    chain_file = expected_file.replace(".symbols", ".verdefs")
    with open(chain_file) as f:
        chain = dict(l.split() for l in f if l.strip())
    nodes = verdefs(lib)
    bad_chain = sorted(set(chain.items()) ^ set(nodes.items()))
    for node, parent in bad_chain:
        print(f"version node differs: {node} <- {parent}")
    for v, n, k in missing:
        print(f"missing: {n} {v} {k}")
    for v, n, k in extra:
        print(f"extra:   {n} {v} {k}")
    print(f"{lib}: {len(have)} dynamic entries, {len(expected)} expected, "
          f"{len(missing)} missing, {len(extra)} extra")
    return 1 if missing or extra or bad_chain else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
