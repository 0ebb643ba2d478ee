#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Tests of the uroce-dump command line tool.

usage: cli_test.py DUMP DATA_DIR CASE [ARG]

Expected values come from the test data, never from uroce-dump itself: the
independent decodes and summaries in tests/data/rxe/*.txt, the facts in
tests/data/rxe/README.md, and the oracle's vectors in tests/data/synthetic.
"""

import json
import os
import sys
import tempfile

import dumptest
from dumptest import Checker, as_int

MTUS = (256, 512, 1024, 2048, 4096)


def rxe_capture(dump, data, name):
    """Counts, exit status and every packet's headers against the .txt decode."""
    c = Checker('rxe ' + name)
    pcap = os.path.join(data, 'rxe', name + '.pcap')
    ref, ref_roce, ref_errors = dumptest.read_reference_decode(os.path.join(data, 'rxe', name + '.txt'))
    frames = dumptest.pcap_record_count(pcap)
    r = dumptest.run(dump, pcap)
    c.equal(r.returncode, 1 if ref_errors else 0, 'exit status')
    got, summary = dumptest.parse_text_output(r.stdout)
    c.equal(summary.get('packets read'), frames, 'packets read')
    c.equal(summary.get('RoCEv2 packets'), ref_roce, 'RoCEv2 packets')
    c.equal(summary.get('valid'), ref_roce - ref_errors, 'valid')
    c.equal(summary.get('invalid'), ref_errors, 'invalid')
    c.equal(summary.get('other frames'), frames - ref_roce, 'other frames')
    c.equal(sorted(got), sorted(ref), 'RoCE frame numbers')
    for frame in sorted(set(got) & set(ref)):
        g, w = got[frame], ref[frame]
        for key in ('src', 'sport', 'dst', 'opcode', 'qpn', 'psn', 'pad', 'payload'):
            c.equal(g[key], w[key], 'frame %d %s' % (frame, key))
        c.equal(g['valid'], not w['bad_icrc'], 'frame %d verdict' % frame)
        c.equal(g['icrc'].startswith('bad'), w['bad_icrc'], 'frame %d icrc' % frame)
    c.finish()


def hostpeer_bad_icrc(dump, data):
    """README: frame 13 of hostpeer_rc_pingpong.pcap has a deliberately wrong ICRC."""
    c = Checker('hostpeer bad icrc')
    pcap = os.path.join(data, 'rxe', 'hostpeer_rc_pingpong.pcap')
    r = dumptest.run(dump, '--json', pcap)
    c.equal(r.returncode, 1, 'exit status')
    packets, summary = dumptest.parse_json_lines(r.stdout)
    invalid = {f: p for f, p in packets.items() if p['verdict'] != 'valid'}
    c.equal(sorted(invalid), [13], 'invalid frames')
    c.equal(summary['invalid'], 1, 'summary invalid')
    c.equal(summary['errors'], {'icrc': 1}, 'summary error counts')
    if 13 in invalid:
        p = invalid[13]
        c.equal(p['error'], 'icrc', 'frame 13 error')
        c.check(p['icrc']['ok'] is False and p['icrc']['wire'] != p['icrc']['computed'], 'frame 13 icrc: %r' % p['icrc'])
    text = dumptest.run(dump, pcap)
    lines, _ = dumptest.parse_text_output(text.stdout)
    line = lines.get(13, {})
    c.equal(line.get('error'), 'icrc', 'text frame 13 code')
    c.check(bool(line.get('reason')), 'text frame 13 has a reason: %r' % line)
    c.finish()


def load_vectors(data, name):
    with open(os.path.join(data, 'synthetic', name)) as f:
        return json.load(f)


def synthetic_positive(dump, data):
    c = Checker('synthetic positive')
    vec = load_vectors(data, 'roce_vectors.json')
    r = dumptest.run(dump, '--json', os.path.join(data, 'synthetic', vec['pcap']))
    c.equal(r.returncode, 0, 'exit status')
    packets, summary = dumptest.parse_json_lines(r.stdout)
    c.equal(summary['valid'], vec['count'], 'valid')
    c.equal(summary['invalid'], 0, 'invalid')
    c.equal(summary['rocev2_packets'], vec['count'], 'RoCEv2 packets')
    for v in vec['vectors']:
        p = packets.get(v['index'], {})
        c.equal(p.get('verdict'), 'valid', 'frame %d (%s) verdict, error %s' % (v['index'], v['name'], p.get('error')))
    c.finish()


def synthetic_negative(dump, data):
    c = Checker('synthetic negative')
    vec = load_vectors(data, 'roce_vectors_negative.json')
    r = dumptest.run(dump, '--json', os.path.join(data, 'synthetic', vec['pcap']))
    c.equal(r.returncode, 1, 'exit status')
    packets, summary = dumptest.parse_json_lines(r.stdout)
    c.equal(summary['invalid'], vec['count'], 'invalid')
    c.equal(summary['valid'], 0, 'valid')
    for v in vec['vectors']:
        p = packets.get(v['index'], {})
        what = 'frame %d (%s)' % (v['index'], v['name'])
        c.equal(p.get('verdict'), 'invalid', what + ' verdict')
        c.equal(p.get('error'), v['expected_errors'][0], what + ' error')
        c.check(bool(p.get('reason')), what + ' has a reason')
    c.finish()


def compare_fields(c, what, got, want, keys):
    for k in keys:
        if c.check(k in got, '%s: %s missing' % (what, k)):
            c.equal(as_int(got[k]), as_int(want[k]), '%s.%s' % (what, k))


def compare_vector(c, p, v):
    what = 'frame %d (%s)' % (v['index'], v['name'])
    c.equal(p.get('verdict'), 'valid', what + ' verdict')
    b = p.get('bth', {})
    compare_fields(c, what + ' bth', b, v['bth'],
                   ('opcode', 'se', 'migreq', 'padcount', 'tver', 'pkey', 'fecn', 'becn', 'resv6', 'dest_qp',
                    'ackreq', 'resv7', 'psn'))
    c.equal(b.get('opcode_name'), v['bth']['opcode_name'], what + ' opcode_name')
    ip_keys = ('dscp', 'ecn') + (('ttl', 'id', 'df') if v['ip_version'] == 4 else ('hop_limit', 'flow_label'))
    compare_fields(c, what + ' ip', p.get('ip', {}), v['ip'], ('version',) + ip_keys)
    for k in ('src', 'dst'):
        c.equal(p.get('ip', {}).get(k), v['ip'][k], what + ' ip.' + k)
    compare_fields(c, what + ' udp', p.get('udp', {}), v['udp'], ('sport', 'dport', 'length', 'checksum'))
    eth = p.get('eth', {})
    for k in ('src', 'dst', 'ethertype'):
        c.equal(eth.get(k), v['eth'][k], what + ' eth.' + k)
    if 'vlans' in v['eth']:
        compare_fields(c, what + ' vlan', eth.get('vlan', {}), v['eth']['vlans'][0], ('vid', 'pcp', 'dei'))
    c.equal(sorted(p.get('ext', {})), sorted(v['ext']), what + ' extension headers')
    for name, fields in v['ext'].items():
        compare_fields(c, '%s %s' % (what, name), p.get('ext', {}).get(name, {}), fields, fields.keys())
    c.equal(p.get('payload_len'), v['payload_len'], what + ' payload_len')
    icrc = p.get('icrc', {})
    c.equal(as_int(icrc.get('wire', -1)), as_int(v['icrc']['crc32']), what + ' icrc')
    c.equal(icrc.get('ok'), True, what + ' icrc ok')


# One vector per extension header and per unusual encapsulation.
JSON_FIELD_VECTORS = ('v4_send_only_len5', 'v4_send_only_imm', 'v4_send_last_inv', 'v4_write_first',
                      'v4_write_only_imm', 'v4_read_resp_first', 'v4_rnr_nak', 'v4_nak_rem_access', 'v4_cmp_swap',
                      'v4_atomic_ack', 'v4_ud_send_only_imm', 'v4_fecn', 'v4_becn', 'v4_udp_csum', 'v4_vlan',
                      'v4_pkey_migreq', 'v4_max_qp_psn', 'v6_flowlabel', 'v6_fetch_add', 'v6_mtu4096_last')


def json_fields(dump, data):
    c = Checker('json fields')
    vec = load_vectors(data, 'roce_vectors.json')
    r = dumptest.run(dump, '--json', os.path.join(data, 'synthetic', vec['pcap']))
    try:
        packets, _ = dumptest.parse_json_lines(r.stdout)
    except ValueError as e:
        c.check(False, 'output is not valid JSON lines: %s' % e)
        c.finish()
    by_name = {v['name']: v for v in vec['vectors']}
    for name in JSON_FIELD_VECTORS:
        if c.check(name in by_name, 'vector %s exists' % name):
            v = by_name[name]
            compare_vector(c, packets.get(v['index'], {}), v)
    c.finish()


def expect_usage_error(c, r, stderr_mentions=None):
    c.equal(r.returncode, 2, 'exit status')
    c.check(r.stderr.strip() != '', 'a message on stderr')
    if stderr_mentions is not None:
        c.check(stderr_mentions in r.stderr, 'stderr names %r: %r' % (stderr_mentions, r.stderr))


def missing_file(dump, data):
    c = Checker('missing file')
    path = os.path.join(data, 'no_such_capture.pcap')
    expect_usage_error(c, dumptest.run(dump, path), path)
    c.finish()


def not_a_pcap(dump, data):
    c = Checker('not a pcap')
    path = os.path.join(data, 'rxe', 'README.md')
    expect_usage_error(c, dumptest.run(dump, path), path)
    c.finish()


def unknown_option(dump, data):
    c = Checker('unknown option')
    r = dumptest.run(dump, '--no-such-option', os.path.join(data, 'rxe', 'rc_pingpong.pcap'))
    expect_usage_error(c, r, '--no-such-option')
    c.equal(r.stdout, '', 'nothing on stdout')
    c.finish()


def bad_pmtu(dump, data, value):
    c = Checker('--pmtu ' + value)
    r = dumptest.run(dump, '--pmtu', value, os.path.join(data, 'rxe', 'rc_pingpong.pcap'))
    expect_usage_error(c, r, '--pmtu')
    c.finish()


def unsupported_linktype(dump, data):
    c = Checker('unsupported link type')
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'linux_sll.pcap')
        dumptest.write_pcap(path, 113, [bytes(60)])  # 113: DLT_LINUX_SLL
        expect_usage_error(c, dumptest.run(dump, path), path)
    c.finish()


def no_roce(dump, data):
    """A capture without RoCE is not a failure, but the summary says so."""
    c = Checker('no RoCE packets')
    arp = bytes.fromhex('ffffffffffff020000000001' '0806') + bytes(46)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'arp_only.pcap')
        dumptest.write_pcap(path, 1, [arp, arp, arp])
        r = dumptest.run(dump, '--json', path)
        c.equal(r.returncode, 0, 'exit status')
        packets, summary = dumptest.parse_json_lines(r.stdout)
        c.equal(packets, {}, 'packets printed')
        c.equal((summary['packets_read'], summary['rocev2_packets'], summary['other_frames']), (3, 0, 3), 'counts')
        c.check('note' in summary, 'summary has a note: %r' % summary)
        text = dumptest.run(dump, path)
        c.check('note:' in text.stdout, 'text summary has a note')
        listed = dumptest.run(dump, '--all', '--json', path).stdout.splitlines()
        c.equal(len(listed), 4, '--all lists the 3 other frames and the summary')
    c.finish()


def pmtu_capture(dump, data, pmtu):
    """rc_pingpong_mtu4096.pcap at a given --pmtu: the violations follow from
    the rule (FIRST/MIDDLE payload == PMTU, LAST/ONLY <= PMTU) and the .txt decode."""
    pmtu = int(pmtu)
    c = Checker('--pmtu %d on rc_pingpong_mtu4096' % pmtu)
    name = os.path.join(data, 'rxe', 'rc_pingpong_mtu4096')
    ref, _, _ = dumptest.read_reference_decode(name + '.txt')
    want = sorted(f for f, p in ref.items()
                  if p['payload'] > pmtu or (('FIRST' in p['opcode'] or 'MIDDLE' in p['opcode'])
                                             and p['payload'] != pmtu))
    r = dumptest.run(dump, '--json', '--pmtu', str(pmtu), name + '.pcap')
    c.equal(r.returncode, 1 if want else 0, 'exit status')
    packets, summary = dumptest.parse_json_lines(r.stdout)
    bad = sorted(f for f, p in packets.items() if p['verdict'] != 'valid')
    c.equal(bad, want, 'invalid frames')
    c.check(all(packets[f]['error'] == 'pmtu' for f in bad), 'every error is pmtu')
    c.equal(summary['pmtu'], pmtu, 'summary pmtu')
    c.finish()


def help_and_version(dump, data, version):
    c = Checker('--help and --version')
    h = dumptest.run(dump, '--help')
    c.equal(h.returncode, 0, '--help exit status')
    for word in ('--json', '--all', '--pmtu', '--version', 'FILE', 'Exit status', 'ICRC', 'DLT_EN10MB'):
        c.check(word in h.stdout, '--help mentions %s' % word)
    for mtu in MTUS:
        c.check(str(mtu) in h.stdout, '--help lists MTU %d' % mtu)
    v = dumptest.run(dump, '--version')
    c.equal(v.returncode, 0, '--version exit status')
    c.check(version in v.stdout, '--version prints %s: %r' % (version, v.stdout))
    c.finish()


CASES = {
    'rxe': rxe_capture,
    'hostpeer-bad-icrc': hostpeer_bad_icrc,
    'synthetic-positive': synthetic_positive,
    'synthetic-negative': synthetic_negative,
    'json-fields': json_fields,
    'missing-file': missing_file,
    'not-a-pcap': not_a_pcap,
    'unknown-option': unknown_option,
    'bad-pmtu': bad_pmtu,
    'unsupported-linktype': unsupported_linktype,
    'no-roce': no_roce,
    'pmtu': pmtu_capture,
    'help-version': help_and_version,
}

if __name__ == '__main__':
    if len(sys.argv) < 4 or sys.argv[3] not in CASES:
        sys.exit('usage: cli_test.py DUMP DATA_DIR CASE [ARG]; cases: ' + ', '.join(CASES))
    CASES[sys.argv[3]](sys.argv[1], sys.argv[2], *sys.argv[4:])
