#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fails on an #include that runs against uroce's layering (docs/architecture.md).

Each source file belongs to a layer by its directory; each quoted include
names a layer by its path. A layer may include itself and the layers listed
for it below, nothing else. Public headers (lib/include/uroce/...) are split
into the public *types* any layer may use (wire, port, cc, capture and the
verbs value types) and the public verbs *objects* (Device, QueuePair, ...),
which only the verbs layer implements and only the layers above it use.

Known exceptions are listed in EXCEPTIONS with the reason; the check also
fails when an exception is no longer needed, so the list only shrinks.

Usage: check_layers.py [REPO_ROOT]
"""
import os
import re
import sys

# Layers from the top down; each may include what its list names.
TYPES = {"api/types"}
ALLOWED = {
    # uroced speaks the daemon protocol (lib/daemon).
    "apps":          {"apps", "api/objects", "exchange", "daemon"} | TYPES,
    # C ABI libraries (drop-in libibverbs): the public API only.
    "abi":           {"abi", "api/objects", "util"} | TYPES,
    "endpoint":      {"endpoint", "api/objects", "capture", "drivers/dpdk"} | TYPES,
    # A Device opened on uroced's socket holds the client library's objects.
    "verbs":         {"verbs", "api/objects", "engine", "transport", "memory", "cc", "wire", "client", "daemon"} | TYPES,
    # uroced's client library: the protocol and the verbs value types, no DPDK.
    "client":        {"client", "daemon"} | TYPES,
    "daemon":        {"daemon"} | TYPES,
    "engine":        {"engine", "transport", "memory", "cc", "wire", "util"} | TYPES,
    "transport":     {"transport", "memory", "cc", "wire"} | TYPES,
    "memory":        {"memory", "wire"} | TYPES,
    "cc":            {"cc"} | TYPES,
    # The Communication Manager: its messages on QP1 (IB CM MADs, rdma_cm's
    # header) and the connection manager on a Device's public objects; the
    # verbs layer's access.h gives it QP number 1. On a client of uroced the
    # manager is the daemon's: its calls go through the client library.
    "cm":            {"cm", "api/objects", "verbs", "util", "client", "daemon"} | TYPES,
    "wire":          {"wire"} | TYPES,
    # Threads the library starts (signal mask, name): below every layer.
    "util":          {"util"} | TYPES,
    "capture":       {"capture"} | TYPES,
    "exchange":      {"exchange"} | TYPES,
    "drivers/dpdk":  {"drivers/dpdk"} | TYPES,
    "drivers/sim":   {"drivers/sim", "wire"} | TYPES,
    "api/objects":   {"api/objects"} | TYPES,
    "api/types":     TYPES,
}

# (file, included header): why it is allowed for now.
EXCEPTIONS = {
    ("lib/transport/post.cpp", "uroce/verbs/address_handle.h"):
        "a UD send reads its AddressHandle at post time; an internal AH record would replace it",
    ("lib/transport/post.cpp", "uroce/verbs/memory_window.h"):
        "a bind reads its window's handle at post time (fixed at allocation), as a UD send reads its AH",
    ("lib/transport/post.cpp", "uroce/verbs/memory_region.h"):
        "a bind reads its region's lkey at post time (fixed at registration), as a UD send reads its AH",
}

OBJECT_HEADERS = {"address_handle.h", "completion_queue.h", "device.h", "memory_region.h", "memory_window.h",
                  "protection_domain.h", "queue_pair.h", "shared_receive_queue.h", "verbs.h",
                  "endpoint.h"}


def layer_of_file(rel):
    p = rel.split("/")
    if p[0] == "apps":
        return "apps"
    if p[0] == "drivers":
        return "drivers/" + p[1]
    if p[0] == "lib" and p[1] == "include":
        return header_layer("/".join(p[2:]))
    if p[0] == "lib" and p[1] == "exchange":
        return "exchange"
    if p[0] == "lib":
        return p[1]
    return None


def header_layer(inc):
    """The layer an include path names, relative to an include root."""
    p = inc.split("/")
    if p[0] == "uroce":
        if len(p) == 2:
            return "api/types"  # uroce/api.h
        if p[1] == "sim":
            return "drivers/sim"
        if p[1] == "exchange":
            return "exchange"
        if p[1] == "client":
            return "client"
        if p[1] == "port" and p[2] == "endpoint.h":
            return "api/objects"
        if p[1] == "cm":
            return "api/objects"
        if p[1] == "verbs" and p[2] in OBJECT_HEADERS:
            return "api/objects"
        return "api/types"
    return p[0]


def resolve(rel_file, inc):
    """The layer of a quoted include as the compiler would find it."""
    here = os.path.dirname(rel_file)
    if inc.startswith("../") or "/" not in inc:
        path = os.path.normpath(os.path.join(here, inc))
        return layer_of_file(path), path
    return header_layer(inc), inc


def main(root):
    bad, used = [], set()
    for top in ("lib", "drivers", "apps"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if not n.endswith((".h", ".cpp")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, n), root)
                me = layer_of_file(rel)
                if me not in ALLOWED:
                    continue
                with open(os.path.join(root, rel)) as f:
                    text = f.read()
                for inc in re.findall(r'^#include "([^"]+)"', text, re.M):
                    them, _ = resolve(rel, inc)
                    if them is None or them in ALLOWED[me]:
                        continue
                    if them not in ALLOWED and me != "apps":
                        continue  # a header of the directory itself, e.g. apps' own
                    if (rel, inc) in EXCEPTIONS:
                        used.add((rel, inc))
                        continue
                    bad.append(f"{rel}: includes {inc} ({me} -> {them})")
    for key in sorted(set(EXCEPTIONS) - used):
        bad.append(f"exception no longer needed, remove it: {key[0]} -> {key[1]}")
    for b in bad:
        print("check_layers:", b)
    print(f"check_layers: {len(bad)} problem(s), {len(used)} known exception(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")))
