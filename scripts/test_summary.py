#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Prints 'N passed, N failed' alone on a line from meson's testlog.json,
then 'N skipped' on the next.

Meson and Catch2 print no line in that form; CI reads the first one.
"""
import json
import sys

PASS = {"OK", "EXPECTEDFAIL"}
SKIP = {"SKIP"}


def main(path):
    passed = failed = skipped = 0
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            result = json.loads(line)["result"]
            if result in PASS:
                passed += 1
            elif result in SKIP:
                skipped += 1
            else:
                failed += 1
    print(f"{passed} passed, {failed} failed")
    print(f"{skipped} skipped")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
