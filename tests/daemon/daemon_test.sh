#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# uroced on a net_ring port (no NIC, no hugepages) and client processes
# of it (daemon_peer). Needs root for the DPDK EAL; exit 77 (skip) otherwise.
# usage: daemon_test.sh CASE UROCED DAEMON_PEER WORKDIR UROCE_PERF
set -u
case_=$1 uroced=$2 peer=$3 work=$4 perf=$5
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the DPDK EAL)"; exit 77; }
rm -rf "$work"; mkdir -p "$work"
sock=$work/uroced.sock log=$work/uroced.log
DPID= second=
cleanup() {
  [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
  [ -n "$second" ] && kill -9 "$second" 2>/dev/null
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- uroced log"; cat "$log"; exit 1; }

start() {  # uroced ARGS...; waits for its socket
  "$uroced" "$@" >"$log" 2>&1 &
  DPID=$!
  for _ in $(seq 100); do
    [ -S "$sock" ] && grep -q listening "$log" && return 0
    kill -0 "$DPID" 2>/dev/null || fail "uroced exited"
    sleep 0.1
  done
  fail "uroced did not listen"
}
stop() {  # SIGTERM: the daemon tears down and removes its socket
  kill -TERM "$DPID"; wait "$DPID"; local rc=$?; DPID=
  [ $rc = 0 ] || fail "uroced exited $rc on SIGTERM"
  [ ! -e "$sock" ] || fail "the socket is left behind"
}
run_peer() { timeout 60 "$peer" "$sock" "$@" || fail "daemon_peer $* exited $?"; }
start_default() { start --dev net_ring0 --ip 10.0.0.1 --socket "$sock" --eal "--no-huge -m 512"; }

case $case_ in
  pair)
    # The client links no DPDK.
    ! ldd "$peer" | grep -q librte_ || fail "daemon_peer links DPDK"
    start_default
    run_peer pair
    stop ;;
  kill)
    start_default
    run_peer kill
    grep -q "disconnected: its objects are gone" "$log" || fail "no teardown logged for the killed client"
    stop ;;
  isolation)
    start_default
    run_peer isolation
    stop ;;
  fork)
    start_default
    run_peer fork
    stop ;;
  remote)
    # Two daemons joined by a memif link, a client on each: the QPs meet
    # over the wire (ARP first), not in one engine.
    link="role=%s,id=0,socket=$work/memif.sock,socket-abstract=no"
    start --dev "net_memif0,$(printf "$link" server)" --ip 10.0.0.1 --socket "$sock" --eal "--no-huge -m 512"
    sock2=$work/uroced2.sock
    "$uroced" --dev "net_memif0,$(printf "$link" client)" --ip 10.0.0.2 --socket "$sock2" --eal "--no-huge -m 512" \
      >"$work/second.log" 2>&1 &
    second=$!
    for _ in $(seq 100); do [ -S "$sock2" ] && break; sleep 0.1; done
    [ -S "$sock2" ] || { cat "$work/second.log"; fail "the second uroced did not listen"; }
    timeout 60 "$peer" "$sock" remote "$sock2" || { cat "$work/second.log"; fail "daemon_peer remote exited $?"; }
    kill -TERM "$second"; wait "$second" || fail "the second uroced exited $? on SIGTERM"
    second=
    stop ;;
  events)
    start_default
    run_peer events
    stop ;;
  death)
    start_default
    run_peer death "$DPID"
    wait "$DPID" 2>/dev/null; DPID= ;;
  config)
    # The INI file, with the command line on top of it; the socket's mode.
    cat >"$work/uroced.conf" <<CONF
[daemon]
socket = $work/from-config.sock
socket_mode = 0600
eal = --no-huge -m 512
[port]
dev = net_ring0
ip = 10.0.0.1
[limits]
max_qp = 1
CONF
    start --config "$work/uroced.conf" --socket "$sock"
    [ ! -e "$work/from-config.sock" ] || fail "--socket did not win over the file"
    [ "$(stat -c %a "$sock")" = 600 ] || fail "socket_mode not applied: $(stat -c %a "$sock")"
    run_peer quota
    stop
    "$uroced" --config "$work/missing.conf" >"$work/out" 2>&1 && fail "a missing config file was accepted"
    grep -q "cannot read the configuration file" "$work/out" || fail "no message for a missing config file"
    printf '[limits]\nmax_qp = many\n' >"$work/bad.conf"
    "$uroced" --config "$work/bad.conf" --dev net_ring0 --ip 10.0.0.1 >"$work/out" 2>&1 && fail "a bad number was accepted"
    grep -q "max_qp = 'many' is not a number" "$work/out" || fail "no message for a bad number" ;;
  perf)
    # uroce-perf's two ends as two Devices opened on the daemon's socket
    # (the native API, no EAL in uroce-perf), data checked.
    start_default
    for t in write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat atomic_lat "send_bw -e" "write_bw -q 2 -b"; do
      s="-s 4096"; want=4096
      case $t in atomic*) s=; want=8 ;; esac
      timeout 60 "$perf" $t --daemon "$sock" --verify -n 200 $s >"$work/out" 2>&1 ||
        { cat "$work/out"; fail "uroce-perf $t --daemon exited $?"; }
      grep -q "data verified" "$work/out" || { cat "$work/out"; fail "$t: no 'data verified'"; }
      [ "$(grep -cE "^ $want +[24]00 " "$work/out")" = 1 ] || { cat "$work/out"; fail "$t: no result row"; }
    done
    "$perf" send_bw -c UD --daemon "$sock" >"$work/ud.out" 2>&1 && fail "-c UD --daemon was accepted"
    grep -q "daemon runs the RC tests so far" "$work/ud.out" || fail "no message for -c UD --daemon"
    stop ;;
  *) echo "unknown case $case_"; exit 2 ;;
esac
echo "OK: $case_"
