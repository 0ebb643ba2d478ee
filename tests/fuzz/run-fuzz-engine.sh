#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Builds the engine fuzzer (clang, ASan + UBSan + libFuzzer) and fuzzes for
# SECONDS (120), starting from the seed corpus kept in tests/data/fuzz-engine.
# Exit status is the fuzzer's: non-zero on any crash, leak, UB or failed
# check; 77 (skip) when clang cannot build it here. The last line is
# "fuzz-engine: N runs, OK" or what failed.
#
# usage: tests/fuzz/run-fuzz-engine.sh [SECONDS [LIBFUZZER-ARGS...]]
#   BUILD_DIR overrides build-fuzz; extra arguments are libFuzzer flags
#   (e.g. -jobs=2 -workers=2). New inputs go to BUILD_DIR/tests/fuzz/engine-corpus.
#   Replay a failure: build-fuzz/tests/fuzz/fuzz_engine build-fuzz/tests/fuzz/engine-artifacts/crash-...
set -eu

secs=${1:-120}
[ $# -gt 0 ] && shift
case $secs in '' | *[!0-9]*) echo "fuzz-engine: SECONDS must be a number, got '$secs'"; exit 2 ;; esac
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
case $build in /*) ;; *) build=$PWD/$build ;; esac

# FUZZ_PREBUILT=1: run-fuzzers.sh built it already (two ninjas on one
# build directory at once would race).
[ "${FUZZ_PREBUILT:-}" = 1 ] || "$root/tests/fuzz/fuzz-build.sh" "$build" fuzz_engine || exit $?

work=$build/tests/fuzz
mkdir -p "$work/engine-corpus" "$work/engine-artifacts"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
log=$work/fuzz-engine.log
set +e
# -len_control=0: long step sequences from the start, not after hours.
# -timeout=30: an input that runs longer (e.g. an engine that never goes
# idle) is a finding too. -error_exitcode=1: libFuzzer's default for a
# finding is 77, which meson takes for a skip.
timeout $((secs + 300)) "$work/fuzz_engine" -max_total_time="$secs" -max_len=4096 -len_control=0 -timeout=30 \
  -error_exitcode=1 -timeout_exitcode=1 \
  -artifact_prefix="$work/engine-artifacts/" -print_final_stats=1 \
  "$@" "$work/engine-corpus" "$root/tests/data/fuzz-engine" 2>"$log"
rc=$?
set -e

runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
  tail -n 12 "$log"
  echo "fuzz-engine: $runs runs, OK"
  exit 0
fi
tail -n 40 "$log"
echo "fuzz-engine: FAILED (exit $rc), log $log, artifacts in $work/engine-artifacts/"
# Never 77 here: that is a skip to meson.
[ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] || rc=1
exit "$rc"
