#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# How uroce-perf and uroce-pingpong fail: a --dev that names nothing, a busy
# TCP port (before any banner), and a peer killed mid-run (noticed within the
# --timeout, raw tests included). Two private network namespaces joined by a
# veth pair for RoCE/raw frames (net_af_packet on each end) and a second one
# for the TCP exchange (192.168.79.1 <-> .2). Needs root; exit 77 otherwise.
#
# usage: tool_errors.sh CASE UROCE_PERF UROCE_PINGPONG WORKDIR
#   CASE: dev | busy-port | dead-peer
set -u

if [ "${1:-}" != --in-netns ]; then
  [ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespaces, af_packet, the EAL)"; exit 77; }
  for t in ip unshare nsenter timeout python3; do
    command -v $t >/dev/null || { echo "SKIP: $t not found"; exit 77; }
  done
  exec timeout 280 unshare --net -- "$0" --in-netns "$@"
fi
shift
case_=$1 perf=$2 pp=$3 work=$4
mkdir -p "$work"
rm -f "$work"/*.out

HOLDER= SRV= CLI= BUSY=
cleanup() {
  for p in $SRV $CLI $BUSY; do kill -KILL "$p" 2>/dev/null; done
  [ -n "$HOLDER" ] && kill -9 "$HOLDER" 2>/dev/null
  wait 2>/dev/null
}
trap cleanup EXIT
trap 'exit 1' TERM INT

. "$(dirname "$0")/../common/netns_b.sh"

# This script's namespace is A; B belongs to a `sleep` holder.
setup_links() {
  start_namespace_b
  # No kernel addresses on the data link: the kernel stays out of the RoCE traffic.
  ip link add tea type veth peer name teb netns "$HOLDER" || fail "ip link add tea/teb"
  ip link add tca type veth peer name tcb netns "$HOLDER" || fail "ip link add tca/tcb"
  ip addr add 192.168.79.1/24 dev tca && inb ip addr add 192.168.79.2/24 dev tcb || fail "TCP addresses"
  ip link set tea up && ip link set tca up && inb ip link set teb up && inb ip link set tcb up || fail "links up"
}

SRV_ARGS="--dev net_af_packet0,iface=tea --ip 10.0.0.1"
CLI_ARGS="--dev net_af_packet0,iface=teb --ip 10.0.0.2"

# holds TCP port $1 in namespace A until killed (BUSY is its pid).
hold_port() {
  python3 -c 'import socket,sys,time
s=socket.socket(); s.bind(("0.0.0.0",int(sys.argv[1]))); s.listen(); print("ready",flush=True); time.sleep(120)' "$1" \
    >"$work/holder.out" 2>&1 &
  BUSY=$!
  for _ in $(seq 100); do grep -q ready "$work/holder.out" && return; sleep 0.05; done
  fail "could not hold TCP port $1"
}

case $case_ in
  dev)
    # Each tool names the cause; a port failure is a run failure (exit 1).
    setup_links
    for tool in perf pp; do
      for bad in "foo|no such DPDK device or driver: foo" "net_nosuch0,x=1|no such DPDK device or driver: net_nosuch0" \
                 "net_af_packet0,iface=nosuchif|no such network interface: nosuchif" \
                 "0000:ff:1f.7|no such PCI device: 0000:ff:1f.7"; do
        dev=${bad%%|*} needle=${bad##*|}
        if [ $tool = perf ]; then cmd=("$perf" write_bw); else cmd=("$pp"); fi
        timeout 60 "${cmd[@]}" --dev "$dev" --ip 10.0.0.1 >"$work/dev.out" 2>&1
        rc=$?
        [ $rc = 1 ] || fail "$tool --dev $dev: exit $rc, expected 1"
        grep -qF -- "$needle" "$work/dev.out" || fail "$tool --dev $dev: no '$needle'"
        ! grep -q "probe failed" "$work/dev.out" || fail "$tool --dev $dev: still the bare 'probe failed'"
      done
    done
    echo "ok: unknown driver, missing interface and missing PCI device are named (exit 1)" ;;

  busy-port)
    # A second server on a port in use fails before printing anything on stdout.
    setup_links
    hold_port 18531
    for tool in perf pp; do
      if [ $tool = perf ]; then cmd=("$perf" write_bw); else cmd=("$pp"); fi
      t0=$(now_ms)
      timeout 60 "${cmd[@]}" $SRV_ARGS -p 18531 >"$work/busy.stdout.out" 2>"$work/busy.stderr.out"
      rc=$? dt=$(($(now_ms) - t0))
      [ $rc = 1 ] || fail "$tool on a busy TCP port: exit $rc, expected 1"
      grep -q "cannot listen on TCP port 18531: Address already in use" "$work/busy.stderr.out" ||
        fail "$tool on a busy TCP port: no 'cannot listen' message"
      [ ! -s "$work/busy.stdout.out" ] || fail "$tool on a busy TCP port printed a banner first"
      [ "$dt" -lt 5000 ] || fail "$tool on a busy TCP port took $dt ms to say so"
    done
    echo "ok: busy TCP port -> exit 1 before any banner (uroce-perf, uroce-pingpong)" ;;

  dead-peer)
    # The server is killed mid-run; the client notices within its --timeout
    # (3 s) plus start-up, long before the 60-s run would end.
    setup_links
    for t in raw_bw write_bw; do
      timeout 90 "$perf" $t $SRV_ARGS -D 60 --timeout 3 >"$work/$t.srv.out" 2>&1 &
      SRV=$!
      # Line-buffered, so its header shows when the run starts.
      inb timeout 90 stdbuf -oL "$perf" $t $CLI_ARGS -D 60 --timeout 3 192.168.79.1 >"$work/$t.cli.out" 2>&1 &
      CLI=$!
      for _ in $(seq 400); do grep -q "^ *#bytes" "$work/$t.cli.out" && break; sleep 0.05; done
      grep -q "^ *#bytes" "$work/$t.cli.out" || fail "$t: the client never started its run"
      sleep 1
      kill -0 $CLI 2>/dev/null || fail "$t: the client ended before the server was killed"
      # SIGKILL to uroce-perf itself (SRV is the `timeout` above it).
      victim=$(cat /proc/$SRV/task/$SRV/children 2>/dev/null)
      [ -n "$victim" ] || fail "$t: no server process under $SRV"
      kill -KILL $victim; wait $SRV 2>/dev/null; SRV=
      t0=$(now_ms)
      wait $CLI; crc=$?; CLI=
      dt=$(($(now_ms) - t0))
      [ $crc = 1 ] || fail "$t: client whose server died: exit $crc, expected 1"
      [ "$dt" -lt 10000 ] || fail "$t: the client noticed its dead server only after $dt ms"
      grep -qE "closed the connection|went silent|retry counter exceeded \(12\)|completion with error" "$work/$t.cli.out" ||
        fail "$t: the client does not say the server is gone"
      echo "ok: $t server killed -> client exit 1 after $dt ms: $(grep 'uroce-perf:' "$work/$t.cli.out" | head -1)"
    done ;;

  *) echo "unknown case $case_"; exit 2 ;;
esac
