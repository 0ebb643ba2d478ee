# SPDX-License-Identifier: BSD-3-Clause
"""Helpers shared by the uroce-dump tests: run the tool, read its output,
read the reference files. Standard library only."""

import json
import re
import struct
import subprocess
import sys


class Checker:
    """Collects failed assertions so one run reports all of them."""

    def __init__(self, name):
        self.name = name
        self.failures = []

    def check(self, cond, msg):
        if not cond:
            self.failures.append(msg)
        return cond

    def equal(self, got, want, what):
        return self.check(got == want, '%s: got %r, want %r' % (what, got, want))

    def finish(self):
        for f in self.failures[:50]:
            print('FAIL:', f)
        if len(self.failures) > 50:
            print('... and %d more failures' % (len(self.failures) - 50))
        print('%s: %s' % (self.name, 'FAILED' if self.failures else 'ok'))
        sys.exit(1 if self.failures else 0)


def as_int(x):
    """JSON values here are ints, 0/1 or true/false flags, or "0x..." strings."""
    return int(x, 16) if isinstance(x, str) and x.startswith('0x') else int(x)


def normalize(x):
    """Like as_int for numbers; other strings stay as they are."""
    return as_int(x) if not isinstance(x, str) or x.startswith('0x') else x


def run(dump, *args, timeout=120):
    return subprocess.run([dump, *args], capture_output=True, text=True, timeout=timeout)


def parse_json_lines(stdout):
    """uroce-dump --json output -> ({frame: packet object}, summary object).
    Raises ValueError if a line is not JSON or the structure is wrong."""
    objs = [json.loads(line) for line in stdout.splitlines()]
    summaries = [o for o in objs if o.get('type') == 'summary']
    if len(summaries) != 1 or objs[-1] is not summaries[0]:
        raise ValueError('expected exactly one summary object, as the last line')
    packets = {}
    for o in objs[:-1]:
        if o.get('type') == 'packet':
            if o['frame'] in packets:
                raise ValueError('frame %d printed twice' % o['frame'])
            packets[o['frame']] = o
    return packets, summaries[0]


def pcap_record_count(path):
    """Number of frames in a classic pcap file (any byte order, us or ns)."""
    with open(path, 'rb') as f:
        data = f.read()
    magic = data[:4]
    if magic in (b'\xd4\xc3\xb2\xa1', b'\x4d\x3c\xb2\xa1'):
        endian = '<'
    elif magic in (b'\xa1\xb2\xc3\xd4', b'\xa1\xb2\x3c\x4d'):
        endian = '>'
    else:
        raise ValueError('%s: not a classic pcap file' % path)
    off, n = 24, 0
    while off + 16 <= len(data):
        caplen = struct.unpack(endian + 'I', data[off + 8:off + 12])[0]
        off += 16 + caplen
        n += 1
    return n


def write_pcap(path, linktype, frames):
    with open(path, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, linktype))
        for fr in frames:
            f.write(struct.pack('<IIII', 0, 0, len(fr), len(fr)))
            f.write(fr)


# A RoCE line of the independent decode (tests/data/rxe/*.txt), e.g.
# #13  0.033021 10.99.0.10:49443 -> 10.99.0.2 RC_SEND_ONLY  dqpn=0x000011 psn=0xa3e84a -A- pad=0 ... payload=64 icrc=...
_REF_LINE = re.compile(r'^#(\d+)\s+[\d.]+\s+(\S+):(\d+) -> (\S+)\s+(\w+)\s+dqpn=0x([0-9a-f]+) '
                       r'psn=0x([0-9a-f]+) \S+ pad=(\d) .*payload=(\d+) icrc=(\S+)(.*)$')
_REF_SUMMARY = re.compile(r'^== \S+: (\d+) RoCEv2 packets, ICRC/IPv4-checksum errors: (\d+)')


def read_reference_decode(path):
    """-> ({frame: fields}, roce_count, error_count) from an rxe .txt file."""
    packets, summary = {}, None
    with open(path) as f:
        for line in f:
            m = _REF_LINE.match(line)
            if m:
                packets[int(m[1])] = dict(src=m[2], sport=int(m[3]), dst=m[4], opcode=m[5],
                                          qpn=int(m[6], 16), psn=int(m[7], 16), pad=int(m[8]),
                                          payload=int(m[9]), bad_icrc='BAD' in m[11])
            s = _REF_SUMMARY.match(line)
            if s:
                summary = (int(s[1]), int(s[2]))
    if summary is None:
        raise ValueError('%s: no summary line' % path)
    return packets, summary[0], summary[1]


# One packet line of uroce-dump's text output.
_DUMP_LINE = re.compile(r'^#(\d+) \[?([^\]\s]+?)\]?:(\d+) -> (\S+) (\w+) qpn=0x([0-9a-f]{6}) psn=0x([0-9a-f]{6}) '
                        r'flags=(\S+) pad=(\d)(.*?)(?: payload=(\d+))? icrc=(\S+) (valid|INVALID (\w+): (.+))$')


def parse_text_output(stdout):
    """-> ({frame: fields}, {summary key: number}) from uroce-dump's text output."""
    packets, summary = {}, {}
    for line in stdout.splitlines():
        m = _DUMP_LINE.match(line)
        if m:
            packets[int(m[1])] = dict(src=m[2], sport=int(m[3]), dst=m[4], opcode=m[5], qpn=int(m[6], 16),
                                      psn=int(m[7], 16), flags=m[8], pad=int(m[9]), ext=m[10].strip(),
                                      payload=None if m[11] is None else int(m[11]), icrc=m[12],
                                      valid=m[13] == 'valid', error=m[14], reason=m[15])
            continue
        s = re.match(r'^\s*([A-Za-z][\w ]*?|[a-z_0-9]+):\s+(\d+)', line)
        if s:
            summary[s[1].strip()] = int(s[2])
    return packets, summary
