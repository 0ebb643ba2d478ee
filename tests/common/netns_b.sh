# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the shell tests that run two processes in two network
# namespaces: the script's own namespace is A (it re-executed itself under
# `unshare --net`), B belongs to a `sleep` holder whose pid is HOLDER.
# Needs `work` (the directory whose *.out files a failure prints).

fail() {
  echo "FAIL: $*"
  for f in "$work"/*.out; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done
  exit 1
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Runs a command in namespace B.
inb() { nsenter --net=/proc/$HOLDER/ns/net -- "$@"; }

# Creates namespace B, with loopback up and IPv6 off in both (no router
# solicitations on the test links).
start_namespace_b() {
  # unshare execs sleep: $! is the holder itself, and killing it ends B.
  unshare --net -- sleep 280 </dev/null >/dev/null 2>&1 &
  HOLDER=$!
  # unshare() happens just after the fork: wait until B is a namespace of its own.
  local mine; mine=$(readlink /proc/self/ns/net)
  for _ in $(seq 200); do
    [ "$(readlink /proc/$HOLDER/ns/net 2>/dev/null)" != "$mine" ] && break
    sleep 0.01
  done
  [ "$(readlink /proc/$HOLDER/ns/net)" != "$mine" ] || fail "namespace B was not created"
  for ns in "" inb; do
    $ns sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6'
    $ns ip link set lo up || fail "ip link set lo up"
  done
}
