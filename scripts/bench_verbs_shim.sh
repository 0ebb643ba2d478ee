#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What the drop-in libibverbs costs: Debian's ib_write_bw and ib_send_lat
# through uroce-run next to uroce-perf's write_bw and send_lat on the same
# link, in interleaved rounds, with the ratio (shim BW / native BW) and the
# difference (shim latency - native latency) of each round and their medians.
#
# The link: a veth pair between two private network namespaces, net_af_packet
# on each end (RoCE addresses 10.0.0.1/.2, path MTU 1024), the TCP exchange
# on a second veth pair (192.168.78.1/.2), as the uroce-run tests set it up.
# Like with like: real perftest on a device it does not know posts with
# ibv_post_send and no inline data, so uroce-perf runs send_lat with -I 0;
# in both, the application's thread runs the engine while it posts and
# polls (the drop-in's engine thread covers the rest). The server runs on
# CPU SERVER_CPU and the client on CLIENT_CPU, the same for both: left to
# the scheduler, the two processes sometimes share a CPU, and two loops
# that busy-poll without yielding (uroce-perf's) then take turns at the
# scheduler's time slice (milliseconds) while the drop-in, which yields
# when idle, does not. Root only.
#   scripts/bench_verbs_shim.sh [BUILD_DIR]
#   REPEAT=5 scripts/bench_verbs_shim.sh build
#   KEEP=1 ...                              # keep every run's output (the path is printed)
#   SERVER_CPU=2 CLIENT_CPU=3 ...           # defaults 0 and 1; PIN=0: no pinning
set -u

if [ "${1:-}" != --in-netns ]; then
  [ "$(id -u)" = 0 ] || { echo "needs root (network namespaces, af_packet)"; exit 1; }
  for t in ib_write_bw ib_send_lat ip unshare nsenter taskset; do
    command -v $t >/dev/null || { echo "$t not found"; exit 1; }
  done
  exec timeout 1800 unshare --net -- "$0" --in-netns "$(cd "${1:-build}" && pwd)"
fi
B=$2
RUN=$B/apps/uroce-run/uroce-run
PERF=$B/apps/uroce-perf/uroce-perf
work=$(mktemp -d)
BW_ARGS=${BW_ARGS:-"-s 65536 -D 2 --report_gbits"}
LAT_ARGS=${LAT_ARGS:-"-s 8 -n 5000"}

SERVER_CPU=${SERVER_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-1}
if [ "${PIN:-1}" = 0 ]; then
  on_server=() on_client=()
else
  on_server=(taskset -c "$SERVER_CPU") on_client=(taskset -c "$CLIENT_CPU")
fi

HOLDER=
cleanup() {
  [ -n "$HOLDER" ] && kill -9 "$HOLDER" 2>/dev/null
  wait 2>/dev/null
  [ -n "${KEEP:-}" ] && echo "outputs kept in $work" || rm -rf "$work"
}
trap cleanup EXIT
. "$(dirname "$0")/../tests/common/netns_b.sh"

start_namespace_b
ip link add ra type veth peer name rb netns "$HOLDER" || fail "ip link add ra/rb"
ip link add mga type veth peer name mgb netns "$HOLDER" || fail "ip link add mga/mgb"
ip addr add 192.168.78.1/24 dev mga
inb ip addr add 192.168.78.2/24 dev mgb
ip link set ra up && ip link set mga up && inb ip link set rb up && inb ip link set mgb up || fail "links up"

# pair NAME SERVER_CMD... :: CLIENT_CMD...: the client's result row in $work/NAME.row.
pair() {
  local name=$1; shift
  local srv=() cli=()
  while [ "$1" != :: ]; do srv+=("$1"); shift; done
  shift
  cli=("$@")
  timeout 60 "${on_server[@]}" "${srv[@]}" >"$work/$name.srv.out" 2>&1 &
  local s=$!
  sleep 0.5
  inb timeout 60 "${on_client[@]}" "${cli[@]}" >"$work/$name.cli.out" 2>&1
  local c=$?
  wait $s
  [ $c = 0 ] || fail "$name: client exited $c"
  grep -m1 -E '^ *[0-9]+ +[0-9]+ +[0-9.]+ ' "$work/$name.cli.out" >"$work/$name.row" || fail "$name: no result row"
}

shim() {  # shim NAME PROGRAM ARGS...
  local name=$1; shift
  pair "$name" "$RUN" --dev net_af_packet0,iface=ra --ip 10.0.0.1 -- "$@" -d uroce0 -x 1 -F :: \
    "$RUN" --dev net_af_packet0,iface=rb --ip 10.0.0.2 -- "$@" -d uroce0 -x 1 -F 192.168.78.1
}

native() {  # native NAME TEST ARGS...
  local name=$1; shift
  pair "$name" "$PERF" "$@" --dev net_af_packet0,iface=ra --ip 10.0.0.1 :: \
    "$PERF" "$@" --dev net_af_packet0,iface=rb --ip 10.0.0.2 192.168.78.1
}

col() { awk -v c="$2" '{print $c}' "$work/$1.row"; }

median() { sort -g | awk -v f="$1" '{v[NR] = $1} END {printf f "\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "# $(date -u +%F) $(uname -r), $(nproc) CPUs:$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# veth + net_af_packet, path MTU 1024; BW: $BW_ARGS (Gb/s, BW average); lat: $LAT_ARGS (us, t_typical)"
echo "# server on CPU ${on_server[2]:-any}, client on CPU ${on_client[2]:-any}"
printf "%-6s %12s %12s %8s %12s %12s %10s\n" round "shim Gb/s" "native Gb/s" ratio "shim us" "native us" "diff us"
ratios= diffs=
for round in $(seq "${REPEAT:-3}"); do
  # Alternate which goes first, so a drift of the machine's load within a
  # round does not always favour one side.
  if [ $((round % 2)) = 1 ]; then
    shim sbw ib_write_bw $BW_ARGS; native nbw write_bw $BW_ARGS
    native nlat send_lat $LAT_ARGS -I 0; shim slat ib_send_lat $LAT_ARGS
  else
    native nbw write_bw $BW_ARGS; shim sbw ib_write_bw $BW_ARGS
    shim slat ib_send_lat $LAT_ARGS; native nlat send_lat $LAT_ARGS -I 0
  fi
  # BW average (Gb/s) and t_typical (us).
  sb=$(col sbw 4) nb=$(col nbw 4) sl=$(col slat 5) nl=$(col nlat 5)
  r=$(awk -v a="$sb" -v b="$nb" 'BEGIN {printf "%.2f", a / b}')
  d=$(awk -v a="$sl" -v b="$nl" 'BEGIN {printf "%+.2f", a - b}')
  ratios="$ratios $r" diffs="$diffs $d"
  printf "%-6s %12s %12s %8s %12s %12s %10s\n" "$round" "$sb" "$nb" "$r" "$sl" "$nl" "$d"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "median: BW shim/native $(tr ' ' '\n' <<<"$ratios" | grep . | median %.2f)," \
  "send_lat shim - native $(tr ' ' '\n' <<<"$diffs" | grep . | median %+.2f) us"
