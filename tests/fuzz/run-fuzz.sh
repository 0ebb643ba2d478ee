#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Builds the parser fuzzer (clang, ASan + UBSan + libFuzzer), turns every
# frame of tests/data/**/*.pcap into a seed, and fuzzes for SECONDS (60).
# Exit status is the fuzzer's: non-zero on any crash, leak, UB or failed
# check; 77 (skip) when clang cannot build it here. The last line is
# "fuzz: N runs, OK" or what failed.
#
# usage: tests/fuzz/run-fuzz.sh [SECONDS [LIBFUZZER-ARGS...]]
#   BUILD_DIR overrides build-fuzz; extra arguments are libFuzzer flags.
#   Replay a failure: build-fuzz/tests/fuzz/fuzz_parser build-fuzz/tests/fuzz/artifacts/crash-...
set -eu

secs=${1:-60}
[ $# -gt 0 ] && shift
case $secs in '' | *[!0-9]*) echo "fuzz: SECONDS must be a number, got '$secs'"; exit 2 ;; esac
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
case $build in /*) ;; *) build=$PWD/$build ;; esac

# FUZZ_PREBUILT=1: run-fuzzers.sh built it already (two ninjas on one
# build directory at once would race).
[ "${FUZZ_PREBUILT:-}" = 1 ] || "$root/tests/fuzz/fuzz-build.sh" "$build" fuzz_parser make_seed_corpus || exit $?

work=$build/tests/fuzz
rm -rf "$work/seed"
mkdir -p "$work/corpus" "$work/artifacts"
find "$root/tests/data" -name '*.pcap' | sort | xargs "$work/make_seed_corpus" "$work/seed"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
log=$work/fuzz.log
# New inputs go to corpus/ (kept between runs); seed/ is read only.
set +e
# -error_exitcode=1: libFuzzer's default for a finding is 77, which meson
# takes for a skip.
timeout $((secs + 300)) "$work/fuzz_parser" -max_total_time="$secs" -max_len=9000 -error_exitcode=1 \
  -dict="$root/tests/fuzz/roce.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
  "$@" "$work/corpus" "$work/seed" 2>"$log"
rc=$?
set -e

runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
  tail -n 12 "$log"
  echo "fuzz: $runs runs, OK"
  exit 0
fi
tail -n 40 "$log"
echo "fuzz: FAILED (exit $rc), log $log, artifacts in $work/artifacts/"
# Never 77 here: that is a skip to meson.
[ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] || rc=1
exit "$rc"
