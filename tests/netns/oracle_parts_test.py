# SPDX-License-Identifier: BSD-3-Clause
"""captures.oracle() on a capture it cuts into parts: a valid capture passes
and leaves no part file behind; one bad ICRC in a later part fails it and
keeps the parts for a look. The part size is lowered so that
Linux rxe's send_bw capture (tests/data/rxe) is cut into a part per CPU.

usage: oracle_parts_test.py ORACLE_PY PCAP WORK
"""

import os
import shutil
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import captures  # noqa: E402

ROCE_PORT = 4791


def is_roce(record):
    frame = record[16:]
    if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return False
    ihl = (frame[14] & 0x0F) * 4
    return struct.unpack_from(">H", frame, 14 + ihl + 2)[0] == ROCE_PORT


def main():
    oracle_py, pcap, work = sys.argv[1:4]
    if not os.path.exists(oracle_py):
        print(f"SKIP: independent oracle not found at {oracle_py}")
        return 77
    cpus = os.cpu_count() or 1
    if cpus < 2:
        print("SKIP: one CPU: captures.oracle() judges every capture in one call")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    header, records = captures.read_pcap(pcap)
    captures.ORACLE_PART = max(1, len(records) // cpus)
    parts = min(cpus, len(records) // captures.ORACLE_PART)

    good = os.path.join(work, "good.pcap")
    shutil.copy(pcap, good)
    rc, out = captures.oracle(oracle_py, good, 1024)
    if rc != 0:
        print(f"FAIL: the valid capture, cut in {parts} parts, fails (exit {rc}):\n{out[-2000:]}")
        return 1
    if "part0" not in out:
        print(f"FAIL: the capture was not cut into parts:\n{out[-2000:]}")
        return 1
    left = [f for f in os.listdir(work) if ".part" in f]
    if left:
        print(f"FAIL: part files left after a pass: {left}")
        return 1

    last = max(i for i, r in enumerate(records) if is_roce(r))
    bad_record = bytearray(records[last])
    bad_record[-1] ^= 0xFF  # the ICRC's last byte
    bad = os.path.join(work, "bad.pcap")
    with open(bad, "wb") as f:
        f.write(header + b"".join(records[:last]) + bytes(bad_record) + b"".join(records[last + 1:]))
    rc, out = captures.oracle(oracle_py, bad, 1024)
    part = last // -(-len(records) // parts)  # as captures.oracle() cuts
    if part == 0:
        print(f"FAIL: packet {last + 1} of {len(records)} is in the first part: nothing to show")
        return 1
    last_part = f"bad.pcap.part{part}.pcap"
    if rc == 0:
        print(f"FAIL: a bad ICRC in packet {last + 1} of {len(records)} passes:\n{out[-2000:]}")
        return 1
    if not os.path.exists(os.path.join(work, last_part)):
        print(f"FAIL: the failing run did not keep {last_part}")
        return 1
    whole_rc, _ = captures._oracle_one(oracle_py, bad, 1024)
    if whole_rc == 0:
        print("FAIL: the oracle in one call passes what the parts reject")
        return 1
    print(f"{len(records)} packets in {parts} parts: the valid capture passes, "
          f"a bad ICRC in packet {last + 1} fails (exit {rc}, one call: {whole_rc})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
