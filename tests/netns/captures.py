# SPDX-License-Identifier: BSD-3-Clause
"""Judging a uroce-perf --pcap capture: uroce-dump, then the independent oracle.

Every RoCEv2 packet must be valid (uroce-dump exit 0 at the path MTU, the
oracle exit 0). The one exception is a link that corrupts frames: the
capture is taken by the port, so the frames this side SENT are recorded
before the wire touched them and must still be perfect, while frames it
RECEIVED may carry the link's damage. For that case the capture is split by
sender (source MAC and IP both, so no single flipped bit can move a frame to
the other half); the sent half is judged strictly, and of the received half
only the invalid count is reported (it shows the corruption reached uroce).
"""

import json
import os
import struct
import subprocess

from harness import Failure

PCAP_MAGICS = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24 or data[:4] not in PCAP_MAGICS:
        raise Failure(f"{path} is not a classic pcap file")
    endian = "<" if data[:4] in (PCAP_MAGICS[0], PCAP_MAGICS[2]) else ">"
    records, off = [], 24
    while off + 16 <= len(data):
        incl = struct.unpack_from(endian + "I", data, off + 8)[0]
        records.append(data[off:off + 16 + incl])
        off += 16 + incl
    return data[:24], records


def split_by_sender(path, mac, ip):
    """Writes PATH.sent.pcap and PATH.rcvd.pcap; returns their paths."""
    header, records = read_pcap(path)
    mac_b = bytes.fromhex(mac.replace(":", ""))
    ip_b = bytes(int(x) for x in ip.split("."))
    sent, rcvd = [], []
    for r in records:
        frame = r[16:]
        mine = frame[6:12] == mac_b and frame[12:14] == b"\x08\x00" and frame[26:30] == ip_b
        (sent if mine else rcvd).append(r)
    out = []
    for suffix, recs in (("sent", sent), ("rcvd", rcvd)):
        p = f"{path}.{suffix}.pcap"
        with open(p, "wb") as f:
            f.write(header + b"".join(recs))
        out.append(p)
    return out


def uroce_dump(dump, pcap, pmtu):
    """(exit status, summary object, invalid packet objects, text for errors)."""
    p = subprocess.run([dump, "--json", "--pmtu", str(pmtu), pcap], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    summary, invalid = None, []
    for line in p.stdout.splitlines():
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if o.get("type") == "summary":
            summary = o
        elif o.get("type") == "packet" and o.get("verdict") != "valid":
            invalid.append(o)
    if p.returncode == 2 or summary is None:
        raise Failure(f"uroce-dump could not read {pcap} (exit {p.returncode}): {p.stdout[-2000:]}")
    return p.returncode, summary, invalid


def _oracle_one(oracle_py, pcap, pmtu):
    p = subprocess.run(["/usr/bin/python3", oracle_py, pcap, "-q", "--pmtu", str(pmtu)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    return p.returncode, p.stdout


ORACLE_PART = 2000  # packets: below this a capture is judged in one call


def oracle(oracle_py, pcap, pmtu):
    """The oracle's exit status (the first part's that failed) and output.
    Given the path MTU it judges each packet on its own, and it takes seconds
    per thousand packets (Scapy), so a large capture is cut into a part per
    CPU, judged at once."""
    try:
        header, records = read_pcap(pcap)
    except Failure:
        return _oracle_one(oracle_py, pcap, pmtu)  # not a classic pcap: the oracle says what it is
    parts = min(os.cpu_count() or 1, len(records) // ORACLE_PART)
    if parts < 2:
        return _oracle_one(oracle_py, pcap, pmtu)
    per = -(-len(records) // parts)
    paths = []
    for i in range(parts):
        paths.append(f"{pcap}.part{i}.pcap")
        with open(paths[-1], "wb") as f:
            f.write(header + b"".join(records[i * per:(i + 1) * per]))
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(parts) as pool:
        results = list(pool.map(lambda path: _oracle_one(oracle_py, path, pmtu), paths))
    rc = next((rc for rc, _ in results if rc != 0), 0)
    if rc == 0:
        for path in paths:
            os.unlink(path)
    return rc, "".join(f"{path}:\n{out}" for path, (_, out) in zip(paths, results))


def judge_strict(dump, oracle_py, pcap, pmtu, what):
    rc, summary, invalid = uroce_dump(dump, pcap, pmtu)
    if rc != 0:
        reasons = "\n".join(f"  #{o['frame']}: {o.get('error')}: {o.get('reason')}" for o in invalid[:10])
        raise Failure(f"uroce-dump --pmtu {pmtu}: {len(invalid)} invalid RoCE packets in {what} ({pcap}):\n{reasons}")
    text = f"uroce-dump: {summary['valid']} valid RoCE packets in {what}"
    if oracle_py and os.path.exists(oracle_py):
        orc, out = oracle(oracle_py, pcap, pmtu)
        if orc != 0:
            raise Failure(f"the oracle rejects {what} ({pcap}, exit {orc}):\n{out[-3000:]}")
        text += "; the oracle agrees"
    else:
        text += f"; oracle not found at {oracle_py}, not run"
    return summary, text


def check_capture(dump, oracle_py, pcap, pmtu, mac, ip, link_corrupts=False, expect_roce=True):
    """Returns (RoCE packets in the capture, report lines). expect_roce=False
    for raw_* tests, whose frames are not RoCE: the capture must still decode."""
    if not os.path.exists(pcap):
        raise Failure(f"no capture written at {pcap}")
    if not link_corrupts:
        summary, text = judge_strict(dump, oracle_py, pcap, pmtu, "the client's capture")
        if expect_roce and summary["rocev2_packets"] == 0:
            raise Failure(f"the client's capture {pcap} holds no RoCE packets")
        if summary["packets_read"] == 0:
            raise Failure(f"the client's capture {pcap} is empty")
        return summary["rocev2_packets"], [text]
    sent, rcvd = split_by_sender(pcap, mac, ip)
    summary, text = judge_strict(dump, oracle_py, sent, pmtu, "the frames the client sent")
    if summary["rocev2_packets"] == 0:
        raise Failure(f"no frame from {mac} / {ip} in {pcap}: the split by sender found nothing")
    _, rs, invalid = uroce_dump(dump, rcvd, pmtu)
    kinds = sorted({str(o.get("error")) for o in invalid})
    return summary["rocev2_packets"] + rs["rocev2_packets"], [
        text,
        f"received frames (not judged: the link corrupts): {rs['rocev2_packets']} RoCE, "
        f"{len(invalid)} invalid ({', '.join(kinds) or '-'})"]
