# SPDX-License-Identifier: BSD-3-Clause
"""uroce-perf's output against the rxe perftest tool's in the same scenario.

Both sides run with the same flags, one as server and one as client, so
their stdout differs only where perftest's own roles differ:
  - the server prints the "Waiting for client to connect..." box, and
    "RX depth" instead of the client's "TX depth" (send tests);
  - read_lat's and atomic_lat's server print no result table (whether a
    server prints one is read from the recorded perftest server output,
    tests/data/perftest/<test>.server.txt).
Everything else must match:
  - every line's shape (tests/perf/perftest_shape.py: numbers and hex are
    placeholders), in order;
  - the banner's values (device, QPs, connection, MTU, GID index, CQ
    moderation, ...), field by field, except "Outstand reads" and "Max
    inline data": perftest prints the device's limit and default there
    (rxe 128 and 0, uroce 16 and ConnectX's 220 for the latency tests), as
    in the address lines' OUT field;
  - one local and one remote address line pair per QP on each side, and
    what one side prints as its local QPs the other prints as remote;
  - the result table's header line exactly, the row's #bytes and
    #iterations (perftest counts -n per QP in a bandwidth row), and the
    row's shape unless only one side's Gb/sec average is under 0.1 (then
    perftest prints six decimals on that side).
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "perf"))

from perftest_shape import shape, uroce_lines  # noqa: E402

DATA = os.path.join(HERE, "..", "data", "perftest")
BOX = re.compile(r"^(\**|\* Waiting for client to connect\.\.\. \*)$")
ROLE_FIELD = re.compile(r"^ (TX|RX) depth +: ")
FIELD = re.compile(r"([A-Za-z][\w.* -]*?)\s*:\s*([^\t]+)")
DEVICE_FIELDS = {"Outstand reads", "Max inline data"}
ADDRESS = re.compile(r"^ (local|remote) address: ")
ROW = re.compile(r"^ \d+ +\d+ ")


def stdout_lines(out):
    """The lines of a recorded or captured stdout (a `--- stderr` line ends it)."""
    return out.split("--- stderr\n")[0].splitlines()


def server_prints_table(test):
    with open(os.path.join(DATA, f"{test}.server.txt")) as f:
        return any(ln.startswith(" #bytes") for ln in stdout_lines(f.read()))


class Side:
    def __init__(self, who, lines, server):
        self.who, self.server = who, server
        self.lines = [ln for ln in lines if not BOX.match(ln) and not ROLE_FIELD.match(ln)]
        self.banner = {}
        first_addr = next((i for i, ln in enumerate(self.lines) if ADDRESS.match(ln)), len(self.lines))
        for ln in self.lines[:first_addr]:
            for k, v in FIELD.findall(ln):
                self.banner[k.strip()] = v.strip()
        self.addresses = {"local": [], "remote": []}
        for i, ln in enumerate(self.lines):
            m = ADDRESS.match(ln)
            if m:
                gid = self.lines[i + 1] if i + 1 < len(self.lines) else ""
                self.addresses[m.group(1)].append((ln[m.end():], gid))
        head = next((i for i, ln in enumerate(self.lines) if ln.startswith(" #bytes")), None)
        self.header = self.lines[head] if head is not None else None
        self.row = self.lines[head + 1] if head is not None and head + 1 < len(self.lines) else None

    def without_table(self):
        if self.header is None:
            return self.lines
        i = self.lines.index(self.header)
        return self.lines[:i] + self.lines[i + 3:]  # header, row, closing line


def six_decimals(test, row, gbits):
    """perftest prints a bandwidth row's figures with six decimals when the
    Gb/sec average is under 0.1, so two sides' rows may differ in shape."""
    f = (row or "").split()
    return test.endswith("_bw") and gbits and len(f) > 3 and float(f[3]) < 0.1


def compare(test, uroce_out, tool_out, uroce_server, qps, iters, size, gbits, who="uroce-perf", own_device=None):
    """The list of differences (empty: the outputs agree). own_device: the
    uroce side is real perftest on that device (through uroce-run), whose
    banner names it instead of the VM's rxe0."""
    # uroce.out holds uroce-perf's stderr too: its notes start "uroce".
    u = Side(who, [ln for ln in uroce_lines(uroce_out) if not ln.startswith("uroce")], uroce_server)
    t = Side("perftest", stdout_lines(tool_out), not uroce_server)
    problems = []
    want_server_table = server_prints_table(test)
    for s in (u, t):
        want = want_server_table if s.server else True
        if (s.header is not None) != want:
            problems.append(f"{s.who} ({'server' if s.server else 'client'}) "
                            f"{'printed no' if want else 'printed a'} result table; perftest's "
                            f"{'server' if s.server else 'client'} of {test} {'does' if want else 'does not'}")
        for side in ("local", "remote"):
            if len(s.addresses[side]) != qps:
                problems.append(f"{s.who}: {len(s.addresses[side])} '{side} address' lines, {qps} QPs")
        if s.row is not None:
            f = s.row.split()
            if f[:2] != [str(size), str(iters)]:
                problems.append(f"{s.who}: result row #bytes #iterations {f[:2]}, want [{size}, {iters}]: {s.row!r}")
    for a, b in ((u, t), (t, u)):
        if sorted(a.addresses["local"]) != sorted(b.addresses["remote"]):
            problems.append(f"{a.who}'s local addresses {a.addresses['local']} are not "
                            f"{b.who}'s remote addresses {b.addresses['remote']}")
    skip = DEVICE_FIELDS
    if own_device:
        skip = DEVICE_FIELDS | {"Device"}
        if u.banner.get("Device") != own_device:
            problems.append(f"banner 'Device': {who} {u.banner.get('Device')!r}, want {own_device!r}")
    for k in sorted((set(u.banner) | set(t.banner)) - skip):
        if u.banner.get(k) != t.banner.get(k):
            problems.append(f"banner {k!r}: {who} {u.banner.get(k)!r}, perftest {t.banner.get(k)!r}")
    if u.header is not None and t.header is not None:
        if u.header != t.header:
            problems.append(f"result header: {who} {u.header!r}, perftest {t.header!r}")
        if shape(u.row or "") != shape(t.row or "") and six_decimals(test, u.row, gbits) == six_decimals(test, t.row, gbits):
            problems.append(f"result row shape: {who} {shape(u.row or '')!r}, perftest {shape(t.row or '')!r}")
    ul, tl = [shape(ln) for ln in u.without_table()], [shape(ln) for ln in t.without_table()]
    if ul != tl:
        diff = [f"  line {i + 1}: perftest {w!r}, {who} {g!r}"
                for i, (w, g) in enumerate(zip(tl + [""] * len(ul), ul + [""] * len(tl))) if w != g]
        problems.append(f"{len(diff)} line shapes differ (role lines aside):\n" + "\n".join(diff[:8]))
    return problems
