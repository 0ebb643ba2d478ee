# SPDX-License-Identifier: BSD-3-Clause
"""Where a VM that stopped answering is: its vCPU's instruction pointer,
sampled through qemu's monitor and named with the kernel's System.map.

A vCPU idling in the kernel (default_idle, ...) means everything in the
guest waits for something; one address over and over names the loop.
"""

import bisect
import os
import re
import socket
import time


def parse_kallsyms(text):
    addrs, names = [], []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] in "tTwW":
            addrs.append(int(parts[0], 16))
            names.append(parts[2] + (" " + parts[3] if len(parts) > 3 else ""))
    order = sorted(range(len(addrs)), key=addrs.__getitem__)
    return [addrs[i] for i in order], [names[i] for i in order]


def symbolize(syms, ip):
    if not syms or not syms[0]:
        return f"0x{ip:x}"
    addrs, names = syms
    i = bisect.bisect_right(addrs, ip) - 1
    return f"{names[i]}+0x{ip - addrs[i]:x}" if i >= 0 else f"0x{ip:x}"


def _hmp(sock_path, command, timeout_s=3):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout_s)
        s.connect(sock_path)
        out = b""
        try:
            while b"(qemu)" not in out:
                out += s.recv(65536)
            s.sendall(command.encode() + b"\n")
            end = time.monotonic() + timeout_s
            while out.count(b"(qemu)") < 2 and time.monotonic() < end:
                out += s.recv(65536)
        except socket.timeout:
            pass
    return out.decode(errors="replace")


def sample(sock_path, n=8, gap_s=0.25, words=96):
    """(instruction pointers sampled, kernel text addresses on the stack)."""
    if not os.path.exists(sock_path):
        return [], []
    rips, stack = [], []
    try:
        for _ in range(n):
            m = re.search(r"RIP=([0-9a-f]+)", _hmp(sock_path, "info registers"))
            if m:
                rips.append(int(m.group(1), 16))
            time.sleep(gap_s)
        m = re.search(r"RSP=([0-9a-f]+)", _hmp(sock_path, "info registers"))
        if m:
            dump = _hmp(sock_path, f"x/{words}gx 0x{m.group(1)}")
            stack = [int(w, 16) for w in re.findall(r"0x(ffffffff[0-9a-f]{8})", dump)]
    except OSError:
        pass
    return rips, stack


def describe(rips, stack, syms):
    """The kernel is booted with nokaslr, so a later boot's /proc/kallsyms
    names a hung boot's addresses (modules load in the same order)."""
    seen = {}
    for ip in rips:
        name = symbolize(syms, ip).split("+")[0]
        seen[name] = seen.get(name, 0) + 1
    where = ", ".join(f"{k} x{v}" for k, v in sorted(seen.items(), key=lambda kv: -kv[1])) or "no RIP"
    frames = []
    for w in stack:
        name = symbolize(syms, w)
        if not name.startswith("0x") and name not in frames:
            frames.append(name)
    return f"vCPU in: {where}; kernel text on its stack: {' < '.join(frames[:20]) or 'none'}"
