#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# What `meson install` delivers, used the way an application outside the
# tree uses it: install into a staging directory, then
#   1. every installed file the docs promise is there (library, uroce.pc,
#      headers, tools, example and its source, docs, config presets);
#   2. uroce.pc names libibverbs and -std=c++20, and no installed header
#      includes a header of a private requirement;
#   3. every installed header compiles on its own with nothing but
#      `pkg-config --cflags uroce` (g++, and clang++ when present);
#   4. tests/install/consumer (only dependency('uroce')) and the installed
#      example source build against the staged tree; the consumer runs two
#      endpoints on a ring-PMD port pair (a WRITE, checked) and the
#      installed uroce-example-write --loopback runs too.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR. Exit 77 when a tool it needs
# is missing.
set -u
build=$(realpath "$1")
src=$(realpath "$2")
work=$(mktemp -d /tmp/uroce-install-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
stage=$work/stage

fail() { echo "FAILED: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
for tool in meson ninja pkg-config g++; do
  command -v $tool >/dev/null || skip "$tool is not installed"
done

# --- install into the staging directory ----------------------------------
meson install -C "$build" --no-rebuild --destdir "$stage" >"$work/install.log" 2>&1 ||
  { tail -20 "$work/install.log"; fail "meson install --destdir"; }
pc=$(find "$stage" -name uroce.pc -path '*/pkgconfig/*' | head -1)
[ -n "$pc" ] || fail "no uroce.pc installed"
prefix=$(sed -n 's/^prefix=//p' "$pc")
root=$stage$prefix
libdir=$(dirname "$(dirname "$pc")")
echo "staged under $root"

# The staged uroce.pc says prefix=<the real prefix>: a copy that points
# into the staging tree stands for the installed one.
mkdir -p "$work/pkgconfig"
sed "s|^prefix=.*|prefix=$root|" "$pc" >"$work/pkgconfig/uroce.pc"
export PKG_CONFIG_PATH=$work/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# --- 1. what is installed -------------------------------------------------
for f in include/uroce/api.h include/uroce/port/endpoint.h include/uroce/verbs/verbs.h \
         bin/uroce-perf bin/uroce-pingpong bin/uroce-dump bin/uroce-run bin/uroced bin/uroce-example-write \
         share/doc/uroce/install.md share/doc/uroce/README.md share/doc/uroce/examples/example_write.cpp \
         share/uroce/config/dcqcn-mlx5.conf; do
  [ -e "$root/$f" ] || fail "$f is not installed"
done
ls "$libdir"/liburoce.so.* >/dev/null 2>&1 || fail "liburoce.so.* is not installed in $libdir"
# The drop-in libibverbs goes to a directory of its own, never over the
# system's; uroce-run (given that directory, as the staged tree is not
# where it was built to look) puts it first in LD_LIBRARY_PATH.
[ -e "$libdir/uroce/libibverbs.so.1" ] || fail "libibverbs.so.1 is not installed in $libdir/uroce"
[ -e "$libdir/libibverbs.so.1" ] && fail "a libibverbs.so.1 is installed in $libdir itself"
python3 "$src/tests/abi/check_symbols.py" "$src/tests/data/abi/libibverbs1-44.0-2.symbols" \
  "$libdir/uroce/libibverbs.so.1" >"$work/abi.log" 2>&1 || { cat "$work/abi.log"; fail "installed libibverbs.so.1 exports"; }
# The drop-in librdmacm beside it, never over the system's either.
[ -e "$libdir/uroce/librdmacm.so.1" ] || fail "librdmacm.so.1 is not installed in $libdir/uroce"
[ -e "$libdir/librdmacm.so.1" ] && fail "a librdmacm.so.1 is installed in $libdir itself"
python3 "$src/tests/abi/check_symbols.py" "$src/tests/data/abi/librdmacm1-44.0-2.symbols" \
  "$libdir/uroce/librdmacm.so.1" >"$work/abi.log" 2>&1 || { cat "$work/abi.log"; fail "installed librdmacm.so.1 exports"; }
path=$(UROCE_RUN_LIBDIR=$libdir/uroce "$root/bin/uroce-run" --dev x --ip 10.0.0.1 --no-port-check -- sh -c 'echo "$LD_LIBRARY_PATH"')
[ "${path%%:*}" = "$libdir/uroce" ] || fail "installed uroce-run: LD_LIBRARY_PATH is $path"
echo "ok: library, pkg-config file, headers, tools, example, docs, config presets and the drop-in libibverbs and librdmacm installed"

# --- 2. uroce.pc ----------------------------------------------------------
cflags=$(pkg-config --cflags uroce) || fail "pkg-config --cflags uroce"
libs=$(pkg-config --libs uroce) || fail "pkg-config --libs uroce"
echo "pkg-config --cflags uroce: $cflags"
echo "pkg-config --libs uroce: $libs"
grep -q -- '-std=c++20' <<<"$cflags" || fail "Cflags lack -std=c++20"
grep -q -- '-libverbs' <<<"$libs" || fail "Libs lack -libverbs (Requires: libibverbs)"
grep -q -- "-I$root/include" <<<"$cflags" || fail "Cflags do not point into the staged include directory"

# DPDK, libpcap, zlib and ISA-L are Requires.private: a public header that
# included one of theirs would need them public. (pkg-config --cflags still
# lists private requirements' flags, so the compile check below would not
# notice.)
if grep -rnE '#include <(rte_|pcap|zlib|isa-l|boost/)' "$root/include/uroce"; then
  fail "installed headers include a private dependency's headers (above)"
fi
echo "ok: no installed header includes a DPDK, libpcap, zlib, ISA-L or Boost header"

# --- 3. every installed header on its own ---------------------------------
compilers=(g++)
command -v clang++ >/dev/null && compilers+=(clang++)
(cd "$root/include" && find uroce -name '*.h' | sort) >"$work/headers"
[ "$(wc -l <"$work/headers")" -gt 10 ] || fail "too few headers installed"
for cxx in "${compilers[@]}"; do
  # shellcheck disable=SC2016
  xargs -P "$(nproc)" -I{} sh -c 'echo "#include <{}>" | '"$cxx"' -x c++ -fsyntax-only '"$cflags"' - 2>/dev/null ||
    echo {}' <"$work/headers" >"$work/bad.$cxx"
  if [ -s "$work/bad.$cxx" ]; then
    h=$(head -1 "$work/bad.$cxx")
    echo "#include <$h>" | $cxx -x c++ -fsyntax-only $cflags - 2>&1 | head -20
    fail "$cxx: $(wc -l <"$work/bad.$cxx") installed header(s) do not compile alone: $(tr '\n' ' ' <"$work/bad.$cxx")"
  fi
  echo "ok: $cxx: all $(wc -l <"$work/headers") installed headers compile alone with pkg-config --cflags uroce"
done

# --- 4. an application outside the tree -----------------------------------
meson setup "$work/consumer" "$src/tests/install/consumer" \
  -Dexample="$root/share/doc/uroce/examples/example_write.cpp" >"$work/setup.log" 2>&1 ||
  { cat "$work/setup.log"; fail "meson setup of the consumer"; }
ninja -C "$work/consumer" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "building the consumer"; }
echo "ok: the consumer and the installed example source build with dependency('uroce') alone"
ldd "$work/consumer/consumer" | grep -q "$libdir/liburoce.so" || fail "the consumer does not load the staged liburoce"

timeout 60 "$work/consumer/consumer" >"$work/consumer.out" 2>&1
rc=$?
cat "$work/consumer.out"
[ $rc -eq 0 ] || fail "consumer exited $rc"
grep -q "^consumer: all checks passed" "$work/consumer.out" || fail "consumer did not report all checks passed"
grep -q "ibv_wc_status_str: success" "$work/consumer.out" || fail "consumer did not print ibv_wc_status_str"

for exe in "$work/consumer/example-write" "$root/bin/uroce-example-write"; do
  out=$(timeout 60 "$exe" --loopback 2>&1) || { echo "$out"; fail "$exe --loopback"; }
  grep -q "RDMA WRITE of 4096 bytes verified" <<<"$out" || { echo "$out"; fail "$exe: no verified WRITE"; }
  echo "ok: $exe --loopback: $(grep verified <<<"$out")"
done
echo "install test passed"
