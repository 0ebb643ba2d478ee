#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Configures build-fuzz (clang, ASan + UBSan + libFuzzer) when it is not yet
# and builds the fuzz programs named on the command line; the fuzz scripts
# share it. Exit 77 (skip) when clang cannot build them here, with why.
#
# usage: tests/fuzz/fuzz-build.sh BUILD_DIR TARGET...
set -eu

build=$1
shift
case $build in /*) ;; *) build=$PWD/$build ;; esac
root=$(cd "$(dirname "$0")/../.." && pwd)

if [ ! -f "$build/build.ninja" ]; then
  command -v clang++ >/dev/null || { echo "SKIP: fuzz: clang++ not found (apt-get install clang)"; exit 77; }
  probe=$(mktemp -d)
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$probe/p.cpp"
  if ! clang++ -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" 2>"$probe/err"; then
    head -n 3 "$probe/err"; rm -rf "$probe"
    echo "SKIP: fuzz: clang++ cannot link libFuzzer, ASan and UBSan (apt-get install libclang-rt-14-dev)"; exit 77
  fi
  rm -rf "$probe"
  # -fno-sanitize-recover in cpp_args: UB inside the library aborts too.
  (cd "$root" && CXX=clang++ meson setup "$build" -Dfuzz=true -Dtests=false -Dbenchmarks=false \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized \
    -Dcpp_args=-fno-sanitize-recover=all)
fi
for t in "$@"; do set -- "$@" "tests/fuzz/$t"; shift; done
ninja -C "$build" -j"$(nproc)" "$@"
