#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Soak test: MINUTES of uroce-perf and uroce-pingpong processes over lossy
# veth links between network namespaces, a long-lived pair watched for
# growth (RSS, mbufs in use, DPDK memzones and heap) while short pairs come
# and go, and a uroced whose clients come and go (every other one killed
# with SIGKILL) watched for growth too; see tests/soak/soak.py for what is
# run and judged. Root only.
#
# usage: scripts/soak.sh MINUTES [WORKDIR]
#   BUILD_DIR: the build whose programs run (build). WORKDIR keeps every
#   process's output (default: a new temporary directory).
set -uo pipefail

minutes=${1:-}
[ -n "$minutes" ] || { echo "usage: scripts/soak.sh MINUTES [WORKDIR]"; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
work=${2:-$(mktemp -d -t uroce-soak.XXXXXX)}
perf=$build/apps/uroce-perf/uroce-perf
pp=$build/apps/uroce-pingpong/uroce-pingpong
uroced=$build/apps/uroced/uroced
for p in "$perf" "$pp" "$uroced"; do
  [ -x "$p" ] || { echo "soak: $p missing (ninja -C $build)"; exit 2; }
done
echo "soak: outputs in $work"
PYTHONDONTWRITEBYTECODE=1 exec /usr/bin/python3 "$root/tests/soak/soak.py" "$minutes" "$perf" "$pp" "$work" "$uroced"
