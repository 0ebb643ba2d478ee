#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Two uroce-perf processes over memif, one per core (server on CPU 1,
# client on CPU 0): each RDMA test next to the raw limit of the same link,
# measured by the same binary in the same run. Figures go to stdout; see
# docs/benchmarks.md for what they mean.
#   scripts/bench_memif.sh [BUILD_DIR [OTHER_BUILD_DIR]]
#   REPEAT=5 scripts/bench_memif.sh    # the whole sequence 5 times: memif
#                                      # figures on a VM vary by 2-3x run to run
# With OTHER_BUILD_DIR, every RDMA line runs with both builds back to back
# (lines tagged with the directory), so a change is compared within one
# round, next to one raw measurement.
set -euo pipefail
B=${1:-build}/apps/uroce-perf/uroce-perf
B2=${2:+$2/apps/uroce-perf/uroce-perf}
SOCK=/tmp/uroce-bench-memif.sock
PORT=47311
MEMIF_EXTRA=""  # e.g. ",bsize=8192": memif buffer size (frames above it are chained)
run() {  # run TEST ARGS...: each build in turn (raw tests: the first only)
  run_with "$B" "$@"
  if [ -n "$B2" ] && [[ $1 != raw_* ]]; then run_with "$B2" "$@"; fi
}
run_with() {  # run_with BINARY TEST ARGS...: server and client, client's table to stdout
  local B=$1 test=$2; shift 2
  local tag="$test"
  if [ -n "$B2" ]; then tag="[${B%/apps/uroce-perf/uroce-perf}] $test"; fi
  rm -f "$SOCK"
  taskset -c 1 timeout 120 "$B" "$test" "$@" -p $PORT --ip 10.90.0.1 \
    --dev "net_memif0,role=server,id=0,socket=$SOCK,socket-abstract=no$MEMIF_EXTRA" > /tmp/uroce-bench-server.txt 2>&1 &
  local server=$!
  sleep 0.5
  taskset -c 0 timeout 120 "$B" "$test" "$@" -p $PORT --ip 10.90.0.2 \
    --dev "net_memif0,role=client,id=0,socket=$SOCK,socket-abstract=no$MEMIF_EXTRA" 127.0.0.1 2>/dev/null |
    awk -v t="$tag $*" '/^ *[0-9]+ +[0-9]+ /{print t ": " $0} / uroce:/{print t ": " $0}'
  wait $server || true
  if [ "$test" = raw_bw ]; then
    awk -v t="$test $* (receiver)" '/^ *[0-9]+ +[0-9]+ /{print t ": " $0} /lost/{print t ": " $0}' /tmp/uroce-bench-server.txt
  fi
}
echo "# $(date -u +%F) $(uname -r), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
for round in $(seq "${REPEAT:-1}"); do
  echo "# round $round"
  MEMIF_EXTRA=""
  # Bandwidth: 64 KB WRITEs at path MTU 1024 (memif carries 1500-byte frames
  # by default), next to raw frames of the RoCE frame's size (1024 B payload +
  # 14 Eth + 20 IP + 8 UDP + 12 BTH + 4 ICRC = 1082 B; the first packet of a
  # WRITE also has a 16-byte RETH).
  run write_bw -s 65536 -D 2 --report_gbits
  run raw_bw -s 1082 -D 2 --report_gbits
  # Small messages: the message rate.
  run write_bw -s 64 -D 2
  run send_bw -s 64 -D 2
  run raw_bw -s 64 -D 2
  # Latency: 8 bytes, next to raw frames of the same size on the wire.
  run write_lat -s 8 -n 20000
  run send_lat -s 8 -n 20000
  run raw_lat -s 82 -n 20000   # an 8-byte RDMA WRITE ONLY frame is 82 bytes
  run raw_lat -s 82 -n 20000 --raw-acks  # and with an ACK-sized frame ahead of it: what RC's ACKs cost the link
  # Bandwidth at path MTU 4096 (memif buffers of 8 KB, so a 4154-byte frame
  # is one buffer): the per-packet costs spread over four times the bytes.
  MEMIF_EXTRA=",bsize=8192"
  run write_bw -s 65536 -m 4096 -D 2 --report_gbits
  run raw_bw -s 4154 -m 4096 -D 2 --report_gbits
done
