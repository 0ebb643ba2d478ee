#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ICRC and parse/build cost per build and per small-span CRC path, in one
# run: wire-bench of each BUILD_DIR, once per UROCE_CRC_IMPL value, rounds
# interleaved so that load from other processes hits all alike. Prints, for
# each benchmark, the lowest and the median over the rounds of Catch's mean
# (ns per call): on a shared machine the lowest is the least disturbed.
#   scripts/bench_crc_paths.sh [-r ROUNDS] [-c CPU] [-f CATCH_FILTER] BUILD_DIR...
# e.g. scripts/bench_crc_paths.sh build build-native   (docs/dependencies.md)
set -euo pipefail
rounds=3 cpu=1 filter='[crc],[parse],[build]'
while getopts r:c:f: o; do
  case $o in
    r) rounds=$OPTARG ;;
    c) cpu=$OPTARG ;;
    f) filter=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r ROUNDS] [-c CPU] [-f FILTER] BUILD_DIR..." >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$rounds"); do
  for b in "$@"; do
    for impl in portable avx512; do
      # An unusable value falls back with a note on stderr: keep it visible.
      UROCE_CRC_IMPL=$impl taskset -c "$cpu" "$b/tests/bench/wire-bench" "$filter" -r xml \
        > "$out/${b//\//%}@$impl@$r.xml"
    done
  done
done
python3 - "$out" <<'EOF'
import collections, glob, os, statistics, sys
import xml.etree.ElementTree as ET
runs = collections.defaultdict(list)  # (config, benchmark) -> means
order = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.xml"))):
    config = os.path.basename(f).rsplit("@", 1)[0].replace("%", "/").replace("@", " UROCE_CRC_IMPL=")
    for b in ET.parse(f).iter("BenchmarkResults"):
        name = b.get("name")
        if name not in order:
            order.append(name)
        runs[(config, name)].append(float(b.find("mean").get("value")))
configs = sorted({c for c, _ in runs})
print("| benchmark | " + " | ".join(configs) + " |")
print("|---" * (len(configs) + 1) + "|")
for name in order:
    cells = [f"{min(v):.1f} [{statistics.median(v):.1f}]" if (v := runs[(c, name)]) else "–" for c in configs]
    print(f"| {name} | " + " | ".join(cells) + " |")
print(f"\nns per call: lowest [median] of {len(next(iter(runs.values())))} rounds of Catch's mean")
EOF
