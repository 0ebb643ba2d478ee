#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# uroce-example-write in its two-process mode: server and client on the two
# ends of a veth pair (net_af_packet on each), the server in a network
# namespace of this script's own, the client in a second one (two af_packet
# processes in one namespace can collide on the PMD's PACKET_FANOUT group,
# docs/ports.md), with the TCP exchange on a second veth pair. The client
# finds the server's MAC by ARP, writes, and both must report the WRITE
# verified. Usage: example_write_test.sh EXAMPLE. Root only (exit 77
# otherwise).
set -u
exe=$1
if [ "${2:-}" != --in-netns ]; then
  [ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespace, af_packet)"; exit 77; }
  for t in ip unshare nsenter timeout; do
    command -v $t >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
  done
  exec timeout 100 unshare --net -- "$0" "$exe" --in-netns
fi

work=$(mktemp -d /tmp/uroce-example-write.XXXXXX)
holder=
cleanup() {
  [ -n "$holder" ] && kill "$holder" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAILED: $*"; for f in "$work"/*.out; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }

# Namespace B: a sleeping holder (unshare execs sleep, so $! is it).
unshare --net -- sleep 100 </dev/null >/dev/null 2>&1 &
holder=$!
mine=$(readlink /proc/self/ns/net)
for _ in $(seq 200); do
  [ "$(readlink /proc/$holder/ns/net 2>/dev/null)" != "$mine" ] && break
  sleep 0.01
done
[ "$(readlink /proc/$holder/ns/net)" != "$mine" ] || fail "namespace B was not created"
inb() { nsenter --net=/proc/$holder/ns/net -- "$@"; }

# The RoCE link has no IP addresses: the kernel neither answers ARP nor
# replies to RoCE packets there. The TCP link is a second pair.
ip link set lo up
ip link add uxw0 type veth peer name uxw1 netns "$holder" || { echo "SKIP: no veth support"; exit 77; }
ip link add uxt0 type veth peer name uxt1 netns "$holder" || fail "ip link add uxt0/uxt1"
ip addr add 192.168.79.1/24 dev uxt0
inb ip addr add 192.168.79.2/24 dev uxt1
for l in uxw0 uxt0; do ip link set $l up || fail "ip link set $l up"; done
for l in lo uxw1 uxt1; do inb ip link set $l up || fail "ip link set $l up in B"; done

port=18520
timeout 60 "$exe" --dev net_af_packet0,iface=uxw0 --ip 10.79.0.1 --tcp-port $port >"$work/server.out" 2>&1 &
server=$!
inb timeout 60 "$exe" --dev net_af_packet0,iface=uxw1 --ip 10.79.0.2 --tcp-port $port --connect 192.168.79.1 \
  >"$work/client.out" 2>&1
client_rc=$?
wait $server
server_rc=$?
[ $server_rc -eq 0 ] || fail "server exited $server_rc"
[ $client_rc -eq 0 ] || fail "client exited $client_rc"
grep -q "server 10.79.0.1, peer 10.79.0.2: RDMA WRITE of 4096 bytes verified" "$work/server.out" ||
  fail "the server did not verify the WRITE"
grep -q "client 10.79.0.2, peer 10.79.0.1: RDMA WRITE of 4096 bytes verified" "$work/client.out" ||
  fail "the client did not report the verified WRITE"
cat "$work/server.out" "$work/client.out"
echo "ok: two processes over af_packet on a veth pair, ARP and a verified WRITE"
