#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Aggregate 64-byte WRITE message rate against the number of active QPs:
# `uroce-perf write_bw -s 64 -D 2 -q N` for each N, in one process
# (--loopback, pinned to the last CPU) and, when the machine has two CPUs
# and DPDK's memif PMD, between two processes over memif (one CPU each).
# Every round runs all the QP counts back to back, so they share the
# machine's state; the table compares each figure with the 1-QP figure of
# its own round. Figures go to stdout; see docs/benchmarks.md.
#   scripts/bench_qp_scaling.sh [BUILD_DIR [OTHER_BUILD_DIR]]
#   REPEAT=5 QPS="1 1000 10000" scripts/bench_qp_scaling.sh build
#   MEMIF=no scripts/bench_qp_scaling.sh     # --loopback only
# With OTHER_BUILD_DIR every line runs with both builds back to back, the
# other's tagged "@DIR" (its directory's name): a change compared within
# each round. Each line also gives the CPU share the run got (CPU time over wall time,
# about 1.0 per process when undisturbed): on a shared machine a low share
# explains a low figure.
set -euo pipefail
BUILD=${1:-build}
B=$BUILD/apps/uroce-perf/uroce-perf
B2=${2:+$2/apps/uroce-perf/uroce-perf}
TAG2=${2:+@$(basename "$2")}
QPS=${QPS:-1 100 1000 10000}
REPEAT=${REPEAT:-3}
DURATION=${DURATION:-2}
SOCK=/tmp/uroce-bench-qps.sock
PORT=47321
TMP=$(mktemp -d)
trap 'rm -rf "$TMP" "$SOCK"' EXIT
for b in "$B" ${B2:+"$B2"}; do
  [ -x "$b" ] || { echo "bench_qp_scaling: $b not built (ninja -C ${b%/apps/uroce-perf/uroce-perf})" >&2; exit 1; }
done
LAST_CPU=$(($(nproc) - 1))

rate_of() { awk '/^ *64 +[0-9]+ /{print $5; exit}' "$1"; }
share_of() { awk 'END {printf "%.2f", ($2 + $3) / ($1 > 0 ? $1 : 1)}' "$1"; }  # time -f "%e %U %S %M"
rss_of() { awk 'END {print $4}' "$1"; }

loopback() {  # loopback BINARY QPS: "rate share rss_kb" of one run
  /usr/bin/time -o "$TMP/time" -f "%e %U %S %M" taskset -c "$LAST_CPU" timeout 300 \
    "$1" write_bw --loopback -s 64 -D "$DURATION" -q "$2" >"$TMP/out" 2>&1 || true
  local r
  r=$(rate_of "$TMP/out")
  echo "${r:-failed} $(share_of "$TMP/time") $(rss_of "$TMP/time")"
}

memif() {  # memif BINARY QPS: "rate share" of one run (the client's rate, both processes' mean share)
  local B=$1
  shift
  rm -f "$SOCK"
  /usr/bin/time -o "$TMP/time_s" -f "%e %U %S" taskset -c 1 timeout 300 "$B" write_bw -s 64 -D "$DURATION" -q "$1" \
    -p $PORT --ip 10.91.0.1 --dev "net_memif0,role=server,id=0,socket=$SOCK,socket-abstract=no" >"$TMP/out_s" 2>&1 &
  local server=$!
  sleep 0.5
  /usr/bin/time -o "$TMP/time_c" -f "%e %U %S" taskset -c 0 timeout 300 "$B" write_bw -s 64 -D "$DURATION" -q "$1" \
    -p $PORT --ip 10.91.0.2 --dev "net_memif0,role=client,id=0,socket=$SOCK,socket-abstract=no" 127.0.0.1 \
    >"$TMP/out" 2>&1 || true
  wait $server || true
  local s r
  s=$(awk '{a += $1} END {printf "%.2f", a / 2}' <(share_of "$TMP/time_s"; echo; share_of "$TMP/time_c"; echo))
  r=$(rate_of "$TMP/out")
  echo "${r:-failed} $s"
}

have_memif=no
why_not="the machine has $(nproc) CPU(s); two are needed"
if [ "${MEMIF:-yes}" = no ]; then
  why_not="MEMIF=no"
elif [ "$(nproc)" -ge 2 ]; then
  if [ -n "$(memif "$B" 1 | awk '$1 != "failed"')" ]; then have_memif=yes
  else why_not="a memif run gave no result: $(tail -1 "$TMP/out")"; fi
fi

echo "# $(date -u +%F) $(uname -r), $(nproc) CPUs:$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "# commit $(git -C "$(dirname "$0")" rev-parse --short=12 HEAD 2>/dev/null || echo unknown), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# uroce-perf write_bw -s 64 -D $DURATION -q N; rate in M messages/s, (CPU share)"
for round in $(seq "$REPEAT"); do
  for q in $QPS; do
    for b in "$B" ${B2:+"$B2"}; do
      tag=""
      [ "$b" = "$B" ] || tag=$TAG2
      read -r r s m < <(loopback "$b" "$q")
      echo "round $round loopback$tag q=$q rate $r share $s rss_kb $m"
      if [ $have_memif = yes ]; then
        read -r r s < <(memif "$b" "$q")
        echo "round $round memif$tag q=$q rate $r share $s"
      fi
    done
  done
done | tee "$TMP/rows"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ $have_memif = yes ] || echo "# two processes over memif: skipped ($why_not)"

# Per link and QP count, medians over the rounds: the rate, its ratio to
# the same round's 1-QP rate, the CPU share, and the ratio of rates per
# CPU second (rate / share), which a busy machine disturbs less, and (one
# process) the peak RSS above the 1-QP run's per QP end (both ends of each
# QP live in the process: its queues, its share of the CQs and the
# benchmark's 4 KiB buffer).
echo
echo "| link | QPs | M messages/s (median of $REPEAT) | × 1 QP | CPU share | × 1 QP per CPU second | KiB per QP |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
awk '
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n == 0 ? 0 : (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
  }
  # round R LINK q=N rate X share S [rss_kb K]; the 1-QP line of a round comes first
  $6 != "failed" && $8 > 0 {
    link = $3; q = substr($4, 3); key = link " " q
    if (!(key in seen)) { seen[key] = 1; keys[++n] = key }
    rates[key] = rates[key] " " $6; shares[key] = shares[key] " " $8
    if (q == 1) { one[link] = $6; one_cpu[link] = $6 / $8; one_rss[link] = $10 }
    if (q > 1 && $10 != "" && one_rss[link] > 0) kib[key] = kib[key] " " ($10 - one_rss[link]) / (2 * (q - 1))
    if (one[link] > 0) ratios[key] = ratios[key] " " $6 / one[link]
    if (one_cpu[link] > 0) cpu_ratios[key] = cpu_ratios[key] " " $6 / $8 / one_cpu[link]
  }
  END {
    for (i = 1; i <= n; i++) {
      split(keys[i], k, " ")
      printf "| %s | %d | %.2f | %.2f | %.2f | %.2f | %s |\n", k[1], k[2], median(rates[keys[i]]), median(ratios[keys[i]]),
             median(shares[keys[i]]), median(cpu_ratios[keys[i]]), kib[keys[i]] == "" ? "" : sprintf("%.1f", median(kib[keys[i]]))
    }
  }' "$TMP/rows"
