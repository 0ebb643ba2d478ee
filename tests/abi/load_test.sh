#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's verbs programs load against the drop-in libibverbs.so.1 with
# every symbol bound at start (LD_BIND_NOW=1): no "symbol lookup error", no
# "version ... not found", no undefined symbol, from the programs
# themselves or from the provider libraries they link (perftest links
# libmlx5 and libefa, which import IBVERBS_PRIVATE_34). Each program runs
# with a setting the drop-in refuses, so its message shows that the drop-in,
# not the system's library, answered. A missing program is skipped; all
# missing is exit 77.
#
# usage: load_test.sh SHIM_LIBRARY (its directory goes to LD_LIBRARY_PATH)
set -u
shim=$(dirname "$1")
export LD_LIBRARY_PATH=$shim LD_BIND_NOW=1
unset UROCE_CONFIG UROCE_EAL UROCE_MAC UROCE_MTU
export UROCE_DEV=net_null0 UROCE_IP=not-an-address

ran=0 bad=0
check() {
  local prog=$1; shift
  command -v "$prog" >/dev/null || { echo "skip: $prog not installed"; return; }
  ran=$((ran + 1))
  local out
  out=$(timeout 30 "$prog" "$@" 2>&1 </dev/null)
  if grep -Eq "symbol lookup error|version .* not found|undefined symbol|cannot open shared object" <<<"$out"; then
    echo "FAIL: $prog $*:"; echo "$out" | head -5; bad=$((bad + 1)); return
  fi
  if ! grep -q "uroce libibverbs: no devices: device uroce0: address 'not-an-address'" <<<"$out"; then
    echo "FAIL: $prog $*: the drop-in did not answer:"; echo "$out" | head -5; bad=$((bad + 1)); return
  fi
  echo "ok: $prog $*"
}

check ibv_devices
check ibv_devinfo
check ibv_rc_pingpong
check ibv_uc_pingpong
check ibv_ud_pingpong
check ibv_srq_pingpong
# perftest: with no device it stops after listing devices.
for t in write read send atomic; do
  check ib_${t}_bw
  check ib_${t}_lat
done
# UCX: libuct_ib loads the drop-in when ucx_info lists its devices.
check ucx_info -d

[ $ran -gt 0 ] || { echo "SKIP: none of the verbs programs is installed"; exit 77; }
[ $bad -eq 0 ] || exit 1
echo "PASS: $ran programs loaded the drop-in"
