#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Agreement of uroce-dump with the independent packet oracle.

usage: dump_vs_oracle.py DUMP DATA_DIR ORACLE_PY

For every capture in DATA_DIR/rxe and DATA_DIR/synthetic, runs the oracle
(Scapy + tshark + its own decoder; /usr/bin/python3 has Scapy) and
uroce-dump --json, and checks, packet by packet, that both see the same
UDP/4791 frames, give the same pass/fail verdict (oracle warnings do not
fail a packet), and agree on opcode, dest QP, PSN, payload length and the
extension header fields. Exits 77 (meson: skipped) if the oracle is absent.
"""

import glob
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import dumptest
from dumptest import Checker

ORACLE_PYTHON = '/usr/bin/python3'
CNP_OPCODE = 0x81
CNP_RESERVED_LEN = 16


def run_oracle(oracle, pcap):
    r = subprocess.run([ORACLE_PYTHON, oracle, pcap, '--json'], capture_output=True, text=True, timeout=120)
    if r.returncode not in (0, 1):
        raise RuntimeError('oracle failed on %s (exit %d): %s' % (pcap, r.returncode, r.stderr.strip()))
    return {p['frame']: p for p in json.loads(r.stdout)['packets']}


def oracle_payload_len(p):
    # The oracle counts a CNP's 16 reserved bytes as its payload (its opcode
    # table gives CNP no extension header and a fixed 16-byte body); uroce's
    # opcode table makes them a header (Ext::cnp_reserved) with no payload.
    n = p['payload_len']
    return n - CNP_RESERVED_LEN if p['bth']['opcode'] == CNP_OPCODE else n


def compare_ext(c, what, ours, theirs):
    for name, fields in theirs.items():
        mine = ours.get(name)
        if not c.check(mine is not None, '%s: %s missing' % (what, name)):
            continue
        for k, v in fields.items():
            c.equal(dumptest.normalize(mine.get(k, 'missing')), dumptest.normalize(v), '%s %s.%s' % (what, name, k))


def compare_packet(c, what, ours, theirs):
    c.equal(ours['verdict'] == 'valid', theirs['verdict'] == 'PASS',
            '%s verdict (ours %s, oracle issues %s)' % (what, ours.get('error'), theirs.get('issues')))
    if 'bth' in ours and 'bth' in theirs:
        for k in ('opcode', 'dest_qp', 'psn'):
            c.equal(ours['bth'][k], theirs['bth'][k], '%s %s' % (what, k))
    else:
        c.equal('bth' in ours, 'bth' in theirs, what + ' BTH decoded')
    if 'payload_len' in ours and 'payload_len' in theirs:
        c.equal(ours['payload_len'], oracle_payload_len(theirs), what + ' payload_len')
    elif ours['verdict'] == 'valid':
        c.check(False, what + ' payload_len missing')
    if 'ext' in ours and 'ext' in theirs:
        compare_ext(c, what, ours['ext'], theirs['ext'])


def compare_file(c, dump, pcap, theirs):
    name = os.path.relpath(pcap, os.path.dirname(os.path.dirname(pcap)))
    r = dumptest.run(dump, '--json', pcap)
    ours, summary = dumptest.parse_json_lines(r.stdout)
    c.equal(sorted(ours), sorted(theirs), name + ' RoCEv2 frames')
    for frame in sorted(set(ours) & set(theirs)):
        compare_packet(c, '%s frame %d' % (name, frame), ours[frame], theirs[frame])
    failed = sum(1 for p in theirs.values() if p['verdict'] != 'PASS')
    c.equal(r.returncode, 1 if failed else 0, name + ' exit status')
    print('%-40s %3d packets, %2d failed by the oracle, %2d invalid for uroce-dump'
          % (name, len(theirs), failed, summary['invalid']))


def main():
    dump, data, oracle = sys.argv[1:4]
    if not os.path.isfile(oracle):
        print('SKIP: independent oracle not found at %s (it lives in ../shared, beside the project)' % oracle)
        sys.exit(77)
    c = Checker('uroce-dump vs oracle')
    pcaps = sorted(glob.glob(os.path.join(data, 'rxe', '*.pcap')) + glob.glob(os.path.join(data, 'synthetic', '*.pcap')))
    c.check(len(pcaps) > 0, 'captures found in ' + data)
    start = time.monotonic()
    # The oracle's start-up (Scapy, tshark) is most of its time: one per CPU at once.
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        verdicts = list(pool.map(lambda pcap: run_oracle(oracle, pcap), pcaps))
    for pcap, theirs in zip(pcaps, verdicts):
        compare_file(c, dump, pcap, theirs)
    print('%d captures in %.1f s' % (len(pcaps), time.monotonic() - start))
    c.finish()


if __name__ == '__main__':
    main()
