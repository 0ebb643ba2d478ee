#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# CNPs made by the engine (test_cc_sim.cpp writes them to a pcap) must be
# valid for uroce-dump and for the independent oracle; exit 77 (skip) when
# the oracle is absent, after uroce-dump's check (a failure there still fails).
# usage: cnp_tools.sh CC_SIM_TEST UROCE_DUMP ORACLE_PY OUT_DIR
set -u
test_bin=$1 dump=$2 oracle=$3 out=$4
mkdir -p "$out"
pcap="$out/cnp.pcap"
rm -f "$pcap"
UROCE_CNP_PCAP="$pcap" "$test_bin" "the CNP on the wire*" >"$out/test.log" 2>&1 ||
  { cat "$out/test.log"; echo "FAIL: the CNP test failed"; exit 1; }
[ -s "$pcap" ] || { echo "FAIL: no CNP capture written"; exit 1; }
"$dump" "$pcap" >"$out/dump.txt" 2>&1
rc=$?
cat "$out/dump.txt"
[ $rc -eq 0 ] || { echo "FAIL: uroce-dump exit $rc"; exit 1; }
n=$(grep -c "CNP" "$out/dump.txt")
bad=$(grep -c "INVALID" "$out/dump.txt")
[ "$n" -gt 0 ] && [ "$bad" -eq 0 ] || { echo "FAIL: uroce-dump saw $n CNPs, $bad invalid"; exit 1; }
if [ ! -f "$oracle" ]; then
  # Half of what this test is for could not run: skip, not pass.
  echo "uroce-dump: $n CNPs valid"
  echo "SKIP: the oracle is not at $oracle"
  exit 77
fi
/usr/bin/python3 "$oracle" "$pcap" -q --strict
rc=$?
[ $rc -eq 0 ] && echo "uroce-dump and oracle: $n CNPs valid" || echo "FAIL: oracle exit $rc"
exit $rc
