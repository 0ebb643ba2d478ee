#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every flag of rdma-core's ibv_rc/uc/ud/srq_pingpong is taken by uroce-pingpong.

usage: flags_test.py UROCE_PINGPONG DATA_DIR

The flags come from the tools' own usage texts (tests/data/pingpong/*.help.txt,
rdma-core 44; see tests/data/PROVENANCE.md), in both their short and long
forms. Each one is, per the table below, either
  accepted: the server runs (prints its local address, then gives up
            waiting for a client after --accept-timeout);
  ignored:  the same, plus one stderr line naming the flag and "ignored";
  refused:  exit 2 with a message saying why.
Never CLI11's "not expected" or "unknown". A flag missing from the table, or
a table row no usage text has, fails the test. The server runs on net_null0
(no traffic), so this needs no network namespace; it needs the EAL, which
runs without hugepages as root (exit 77 otherwise).
"""

import os
import re
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

MODES = {'ibv_rc_pingpong': [], 'ibv_uc_pingpong': ['--uc'], 'ibv_ud_pingpong': ['--ud'], 'ibv_srq_pingpong': ['--srq']}

# long name -> (what uroce-pingpong does, value if the flag takes one, extra
# arguments, what its message must say).
TABLE = {
    'port': ('accepted', 'PORT', [], None),
    'ib-dev': ('accepted', 'uroce0', [], None),
    'ib-port': ('accepted', '1', [], None),
    'size': ('accepted', '256', [], None),
    'mtu': ('accepted', '1024', [], None),
    'rx-depth': ('accepted', '64', [], None),
    'iters': ('accepted', '10', [], None),
    'sl': ('accepted', '1', [], None),
    'gid-idx': ('accepted', '0', [], None),
    'chk': ('accepted', None, [], None),
    'num-qp': ('accepted', '2', [], None),
    'odp': ('ignored', None, [], 'registers all memory up front'),
    'iodp': ('ignored', None, [], 'registers all memory up front'),
    'prefetch': ('ignored', None, ['-o'], 'no on-demand MR'),  # rdma-core: needs -o or -O
    'dm': ('ignored', None, [], 'no device memory'),
    'new_send': ('ignored', None, [], 'one way to post a send'),
    'events': ('accepted', None, [], None),
    'ts': ('refused', None, [], 'not supported'),
}

FLAG_LINE = re.compile(r'^\s+-(\w), --([\w-]+)(=<[^>]*>)?')


def usage_flags(path):
    """[(short, long, takes_value)] of one usage text."""
    out = []
    with open(path) as f:
        for line in f:
            m = FLAG_LINE.match(line)
            if m:
                out.append((m.group(1), m.group(2), m.group(3) is not None))
    return out


def free_port(taken):
    """A free TCP port no other run of this test is given (they run at once)."""
    while True:
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            port = s.getsockname()[1]
        if port not in taken:
            taken.add(port)
            return port


def run(pp, args):
    return subprocess.run([pp] + args, capture_output=True, text=True, timeout=60)


def main():
    pp, data = sys.argv[1], sys.argv[2]
    if os.geteuid() != 0:
        print('SKIP: needs root (the DPDK EAL on net_null0)')
        return 77
    failures, seen, checked, jobs, ports = [], set(), 0, [], set()
    for tool, mode in MODES.items():
        flags = usage_flags(os.path.join(data, 'pingpong', tool + '.help.txt'))
        if len(flags) < 10:
            failures.append('%s: only %d flags read from its usage text' % (tool, len(flags)))
        for short, long_, takes_value in flags:
            seen.add(long_)
            if long_ not in TABLE:
                failures.append('%s --%s: not in the table of this test' % (tool, long_))
                continue
            what, value, extra, needle = TABLE[long_]
            if (value is not None) != takes_value:
                failures.append('%s --%s: the table disagrees with the usage text on its value' % (tool, long_))
                continue
            for form in ('short', 'long'):
                port = str(free_port(ports))
                v = port if value == 'PORT' else value
                if form == 'short':
                    flag = ['-' + short] + ([v] if v is not None else [])
                else:
                    flag = ['--' + long_ + ('=' + v if v is not None else '')]
                base = ['--dev', 'net_null0', '--ip', '10.0.0.1', '--accept-timeout', '0.05'] + mode
                if value != 'PORT':
                    base += ['-p', port]
                if mode == ['--ud'] and long_ != 'size':
                    base += ['-s', '512']  # ud_pingpong's 2048 exceeds the default path MTU
                args = base + extra + flag
                jobs.append(('%s %s (%s)' % (tool, ' '.join(flag), what), args, what, needle, long_))
    # Each run starts the EAL and waits out --accept-timeout: one per CPU at once.
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        results = list(pool.map(lambda job: run(pp, job[1]), jobs))
    for (label, _, what, needle, long_), r in zip(jobs, results):
        checked += 1
        errs = r.stderr
        if 'not expected' in errs or 'unknown' in errs.lower() or 'not an option' in errs:
            failures.append('%s: rejected as an option: %s' % (label, errs.strip()))
            continue
        if what == 'refused':
            if r.returncode != 2 or needle not in errs:
                failures.append('%s: exit %d, stderr %r; expected exit 2 saying %r' %
                                (label, r.returncode, errs, needle))
            continue
        ran = r.returncode == 1 and 'no client connected to TCP port' in errs and \
            'local address:' in r.stdout
        if not ran:
            failures.append('%s: the server did not run: exit %d, stderr %r' % (label, r.returncode, errs))
            continue
        mine = [l for l in errs.splitlines() if '--' + long_ + ' ignored' in l]
        others = [l for l in errs.splitlines() if 'ignored' in l and l not in mine]
        if what == 'ignored':
            if len(mine) != 1 or needle not in mine[0]:
                failures.append('%s: expected one line "--%s ignored: ...%s...", got %r' %
                                (label, long_, needle, errs))
        elif mine or others:
            failures.append('%s: accepted, yet stderr says ignored: %r' % (label, errs))
    for long_ in sorted(set(TABLE) - seen):
        failures.append('table row --%s is in no usage text' % long_)
    for f in failures:
        print('FAIL: ' + f)
    print('%d flag forms checked, %d failures' % (checked, len(failures)))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
