#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/bench_qp_scaling.sh still runs end to end: one short round, its
# table with a row for each QP count. No figure is asserted.
# usage: qp_scaling_smoke.sh SCRIPT BUILD_DIR
out=$(QPS="1 10" REPEAT=1 DURATION=1 MEMIF=no "$1" "$2" 2>&1) || { echo "$out"; echo "FAIL: the script failed"; exit 1; }
echo "$out"
for q in 1 10; do
  echo "$out" | grep -qE "^\| loopback \| $q \| [0-9]+\.[0-9]+ \|" || { echo "FAIL: no loopback row with a rate for $q QPs"; exit 1; }
done
