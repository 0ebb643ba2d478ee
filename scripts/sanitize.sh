#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the test programs a sanitizer job needs in a build directory of its
# own and runs their suites there; any sanitizer report fails the run.
#
# usage: scripts/sanitize.sh asan|tsan [MESON-TEST-ARGS...]
#   asan: AddressSanitizer + UndefinedBehaviorSanitizer (build-asan) over the
#         transport, dpdk and pingpong suites and a selection of netns and daemon.
#   tsan: ThreadSanitizer (build-tsan) over the threaded-mode tests.
#   BUILD_DIR overrides the build directory. Extra arguments go to
#   `meson test` in place of the default selection (one test by name, -v).
#
# Every report is written to a file of its own (log_path) besides whatever
# exit status the process ends with: a harness that ignores a child's status
# (a server killed on purpose) cannot hide a report. Suppressions are for
# DPDK's own code only; tests/sanitize/*.supp says why each one is there.
# The last line is "sanitize MODE: OK" or what failed; exit 77 (skip) when
# the compiler cannot build or start a program with the sanitizer.
set -uo pipefail

mode=${1:-}
[ $# -gt 0 ] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
supp=$root/tests/sanitize

case $mode in
  asan)
    build=${BUILD_DIR:-$root/build-asan}
    # -fno-sanitize-recover: UB aborts instead of printing and going on.
    # b_lundef=false: the sanitizer runtimes resolve symbols at load time.
    # -O1 -g1 (line tables): stack traces with lines, compiled faster than
    # -O2 -g; plain keeps assertions on.
    setup=(-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=plain
           "-Dcpp_args=-O1 -g1 -fno-sanitize-recover=all")
    targets=(apps/uroce-perf/uroce-perf apps/uroce-pingpong/uroce-pingpong apps/uroce-dump/uroce-dump
             tests/transport/transport_test tests/transport/transport_property
             tests/dpdk/dpdk_test tests/dpdk/dpdk_eal_test tests/dpdk/dpdk_af_packet_test
             tests/pingpong/pingpong_exchange_test tests/pingpong/wc_status_test
             apps/uroced/uroced tests/daemon/daemon_peer)
    # Not the flags matrix: option parsing, a minute under ASan, the same
    # transfers as the other pingpong cases.
    select=(--suite transport --suite dpdk --suite pingpong --no-suite pingpong-flags)
    # The tests' own is_parallel says which of these may share the cores.
    jobs=$(nproc)
    # netns: one case per verb and per link fault, memif, UD and UC, and a
    # run ended by signals; the whole suite would add about as much again
    # for paths these already take.
    select2=()
    for c in afpacket-write_bw afpacket-read_bw afpacket-send_bw afpacket-atomic_bw afpacket-write_lat \
             afpacket-raw_bw loss-write_bw loss-read_bw reorder-read_bw duplicate-write_bw corrupt-read_bw \
             memif-write_bw teardown-afpacket-signals modes-bidir-write_bw modes-ud-send_bw modes-uc-send_bw \
             modes-qp-mismatch; do
      select2+=("netns-$c")
    done
    # uroced with its clients: data between two, eight at once, a client
    # killed, hostile control messages and posts, fork, the daemon killed,
    # a shared receive queue (a foreign key in it included), regions on
    # huge pages registered with DPDK, two ports in one daemon.
    for c in pair many kill isolation fork death srq hugepages ports; do
      select2+=("daemon-$c")
    done
    ;;
  tsan)
    build=${BUILD_DIR:-$root/build-tsan}
    # DPDK's rings come in two memory models with one layout: on x86 the
    # headers pick plain loads and compiler barriers, which TSan cannot see
    # as synchronisation; the C11 model (acquire/release atomics) is what
    # DPDK builds for Arm and is the same ring for TSan's purposes.
    setup=(-Db_sanitize=thread -Db_lundef=false -Dbuildtype=plain
           "-Dcpp_args=-O1 -g1 -DRTE_USE_C11_MEM_MODEL")
    targets=(tests/dpdk/dpdk_test apps/uroced/uroced tests/daemon/daemon_peer)
    # One at a time: engine threads that poll, slowed several times by TSan.
    jobs=1
    select=()
    select2=()
    for t in basic bulk limits control restart mixed error loopback events callers mw; do
      select+=("dpdk-threaded-$t")
    done
    # uroced's threads (the service thread driving the engine, the engine
    # thread on its lcore, telemetry) with clients coming, going and killed,
    # and the engine sleeping on a receive interrupt (wakers write its
    # eventfd). Not the cases on memif: its control channel runs on EAL's
    # interrupt thread, and DPDK's heap, whose lock TSan cannot see in the
    # uninstrumented librte_eal, hands the memory it frees to the main
    # thread's next allocation, which TSan reports as a race.
    for c in pair many kill events srq telemetry rxirq; do
      select2+=("daemon-$c")
    done
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan [MESON-TEST-ARGS...]"
    exit 2
    ;;
esac
case $build in /*) ;; *) build=$PWD/$build ;; esac
[ $# -gt 0 ] && select=("$@") && select2=()

# A compiler without this sanitizer's runtime (or a kernel the runtime
# cannot map its shadow memory on) cannot run the job here: skip (77) and
# say why rather than fail the build.
flags=$(printf '%s\n' "${setup[@]}" | sed -n 's/^-Db_sanitize=//p')
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int main() { return 0; }' >"$probe/p.cpp"
if ! "${CXX:-c++}" -fsanitize="$flags" "$probe/p.cpp" -o "$probe/p" 2>"$probe/err"; then
  head -n 3 "$probe/err"
  echo "SKIP: sanitize $mode: ${CXX:-c++} cannot link -fsanitize=$flags (its runtime library is missing)"
  exit 77
fi
if ! "$probe/p" 2>"$probe/err"; then
  head -n 3 "$probe/err"
  echo "SKIP: sanitize $mode: a program built with -fsanitize=$flags does not start on this machine"
  exit 77
fi

if [ ! -f "$build/build.ninja" ]; then
  (cd "$root" && meson setup "$build" "${setup[@]}" -Dbenchmarks=false) || {
    echo "sanitize $mode: meson setup failed"; exit 1; }
fi
t0=$(date +%s)
ninja -C "$build" -j"$(nproc)" "${targets[@]}" || { echo "sanitize $mode: build failed"; exit 1; }
t1=$(date +%s)

reports=$build/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:log_path=$reports/asan:log_exe_name=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$reports/ubsan:log_exe_name=1"
export TSAN_OPTIONS="halt_on_error=1:abort_on_error=0:second_deadlock_stack=1:suppressions=$supp/tsan.supp:log_path=$reports/tsan:log_exe_name=1"

meson test -C "$build" --no-rebuild --print-errorlogs --num-processes "$jobs" "${select[@]}"
status=$?
if [ ${#select2[@]} -gt 0 ]; then
  meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 1 --logbase testlog-2 "${select2[@]}" ||
    status=1
fi
t2=$(date +%s)
echo "sanitize $mode: build $((t1 - t0)) s, tests $((t2 - t1)) s"

found=0
for f in "$reports"/*; do
  [ -f "$f" ] || continue
  found=$((found + 1))
  echo "=== sanitizer report $f"
  head -n 80 "$f"
done
if [ "$found" -gt 0 ]; then
  echo "sanitize $mode: FAILED, $found sanitizer report(s) in $reports"
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "sanitize $mode: FAILED, meson test exit $status (log $build/meson-logs/testlog.txt)"
  exit 1
fi
echo "sanitize $mode: OK"
