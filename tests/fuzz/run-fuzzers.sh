#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The parser fuzzer and the engine fuzzer at once, one core each, for
# SECONDS each: CI's fuzz job. Builds build-fuzz once, then runs
# run-fuzz.sh and run-fuzz-engine.sh side by side and prints each one's
# report. Exit 0 when both pass, 77 when clang cannot build them here, else
# the first failure's status.
#
# usage: tests/fuzz/run-fuzzers.sh [SECONDS]
set -u

secs=${1:-120}
dir=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$dir/../.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
case $build in /*) ;; *) build=$PWD/$build ;; esac
export BUILD_DIR=$build FUZZ_PREBUILT=1

"$dir/fuzz-build.sh" "$build" fuzz_parser make_seed_corpus fuzz_engine || exit $?
out=$build/tests/fuzz
"$dir/run-fuzz.sh" "$secs" >"$out/parser.out" 2>&1 &
parser=$!
"$dir/run-fuzz-engine.sh" "$secs" >"$out/engine.out" 2>&1 &
engine=$!
wait "$parser"; rp=$?
wait "$engine"; re=$?
cat "$out/parser.out" "$out/engine.out"
# A skip (77) only when both skipped; any other failure wins.
[ "$rp" = 77 ] && [ "$re" = 77 ] && exit 77
for rc in "$rp" "$re"; do
  [ "$rc" != 0 ] && [ "$rc" != 77 ] && exit "$rc"
done
[ "$rp" = 0 ] && [ "$re" = 0 ] && exit 0
exit 1
