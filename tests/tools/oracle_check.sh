#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds a frame for every opcode with the library and has the independent
# oracle (Scapy + tshark + its own decoder) judge them.
# usage: oracle_check.sh GEN_ALL_OPCODES ORACLE_PY OUT_DIR
set -u
gen=$1 oracle=$2 out=$3
if [ ! -f "$oracle" ]; then
  echo "SKIP: independent oracle not found at $oracle (it lives in ../shared, beside the project)"
  exit 77
fi
mkdir -p "$out"
pcap="$out/all_opcodes.pcap"
"$gen" "$pcap" || { echo "FAIL: generator failed"; exit 1; }
/usr/bin/python3 "$oracle" "$pcap" -q --strict
rc=$?
[ $rc -eq 0 ] && echo "oracle: every library-built frame passed" || echo "FAIL: oracle exit $rc"
exit $rc
