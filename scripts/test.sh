#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds uroce and runs every test suite (unit, vectors, CLI, the independent
# oracle, the parser and engine fuzzers), then prints one line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
meson test -C build --print-errorlogs --num-processes "$(nproc)" "$@"
status=$?
/usr/bin/python3 scripts/test_summary.py build/meson-logs/testlog.json || status=1
exit $status
