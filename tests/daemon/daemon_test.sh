#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# uroced on a net_ring port (no NIC, no hugepages) and client processes
# of it (daemon_peer). Needs root for the DPDK EAL; exit 77 (skip) otherwise.
# usage: daemon_test.sh CASE UROCED DAEMON_PEER WORKDIR UROCE_PERF UROCE_RUN UROCE_PINGPONG UROCE_DUMP
set -u
case_=$1 uroced=$2 peer=$3 work=$4 perf=$5 run=$6 pingpong=$7 dump=$8
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the DPDK EAL)"; exit 77; }
if { [ "$case_" = shim ] || [ "$case_" = pingpong ] || [ "$case_" = rdmacm ] || [ "$case_" = rxirq ] ||
     [ "$case_" = netns ] || [ "$case_" = vlan ]; } &&
   [ -z "${DAEMON_TEST_NETNS:-}" ]; then
  # The programs' TCP exchange on a loopback of its own: no port clashes
  # with anything else on the machine.
  for t in unshare ip $([ "$case_" = shim ] && echo ibv_devinfo ibv_rc_pingpong ib_write_bw) \
           $([ "$case_" = rdmacm ] && echo rping ucmatose rdma_server ib_write_bw) \
           $([ "$case_" = vlan ] && echo tcpdump nsenter python3); do
    command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
  done
  DAEMON_TEST_NETNS=1 exec unshare --net -- "$0" "$@"
fi
rm -rf "$work"; mkdir -p "$work"
sock=$work/uroced.sock log=$work/uroced.log
DPID= second= held= prefix= huge= pages_before= capture=
pages=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
cleanup() {
  [ -n "$capture" ] && kill -9 "$capture" 2>/dev/null
  [ -n "$held" ] && kill -9 "$held" 2>/dev/null
  [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
  [ -n "$prefix" ] && rm -rf "/var/run/dpdk/$prefix"
  [ -n "$second" ] && kill -9 "$second" 2>/dev/null
  if [ -n "$huge" ]; then
    sleep 0.2  # the killed processes' mappings go first
    rm -f "$huge"/* 2>/dev/null; umount "$huge" 2>/dev/null
  fi
  [ -n "$pages_before" ] && echo "$pages_before" >"$pages"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- uroced log"; cat "$log"; exit 1; }

start() {  # uroced ARGS...; waits for its socket
  # Emptied here, not by the child's redirection: a previous daemon's
  # "listening" must not be read as this one's (its socket file may be left).
  : >"$log"
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
# pingpong_pair PROGRAM BYTES ARGS...: rdma-core's PROGRAM through uroce-run
# --daemon, server and client on one daemon, each message checked (-c);
# both must exit 0 and report BYTES.
pingpong_pair() {
  local prog=$1 bytes=$2 out=$work/$1; shift 2
  timeout 60 "$run" --daemon "$sock" -- "$prog" -d uroce0 -g 1 -c "$@" >"$out.srv.out" 2>&1 &
  local srv=$!
  sleep 0.5
  timeout 60 "$run" --daemon "$sock" -- "$prog" -d uroce0 -g 1 -c "$@" 127.0.0.1 >"$out.cli.out" 2>&1
  local crc=$?
  wait $srv; local src=$?
  [ $src = 0 ] && [ $crc = 0 ] || { cat "$out.srv.out" "$out.cli.out"; fail "$prog: server $src, client $crc"; }
  for f in "$out.srv.out" "$out.cli.out"; do
    grep -qE "^$bytes bytes in [0-9.]+ seconds" "$f" || { cat "$f"; fail "no bytes line in $f"; }
  done
  echo "ok: $prog -c through the daemon: $(grep usec/iter "$out.cli.out")"
}
# 256 free 2 MiB pages (more than were there), on a hugetlbfs mount of
# this test's own ($huge); cleanup gives them back.
use_hugepages() {
  [ -w "$pages" ] || { echo "SKIP: no 2 MiB hugepages to set up ($pages)"; exit 77; }
  pages_before=$(cat "$pages")
  echo $((pages_before + 256)) >"$pages"
  local free; free=$(cat "${pages%/nr_hugepages}/free_hugepages")
  [ "$free" -ge 256 ] || { echo "SKIP: the kernel gave $free free hugepages of the 256 asked"; exit 77; }
  huge=$work/huge; mkdir -p "$huge"
  mount -t hugetlbfs -o pagesize=2M nodev "$huge" || { huge=; echo "SKIP: cannot mount hugetlbfs"; exit 77; }
}
start_default() { start --dev net_ring0 --ip 10.0.0.1 --socket "$sock" --eal "--no-huge -m 512" "$@"; }
# Two daemons joined by a memif link: "$sock" (10.0.0.1) and "$sock2"
# (10.0.0.2); a client of each reaches the other over the wire. ARGS go
# to the first daemon.
sock2=
start_linked() {
  local link="role=%s,id=0,socket=$work/memif.sock,socket-abstract=no"
  start --dev "net_memif0,$(printf "$link" server)" --ip 10.0.0.1 --socket "$sock" --eal "${first_eal:---no-huge -m 512}" "$@"
  sock2=$work/uroced2.sock
  "$uroced" --dev "net_memif0,$(printf "$link" client)" --ip 10.0.0.2 --socket "$sock2" --eal "--no-huge -m 512" \
    >"$work/second.log" 2>&1 &
  second=$!
  for _ in $(seq 100); do [ -S "$sock2" ] && break; sleep 0.1; done
  [ -S "$sock2" ] || { cat "$work/second.log"; fail "the second uroced did not listen"; }
}
# A second network namespace, held by a process of its own ($held, which
# cleanup kills), and a veth pair: HERE in this namespace, THERE in the
# second; both up. inb runs a command in the second namespace.
veth_to_second_namespace() {  # HERE THERE
  unshare --net -- sleep 120 </dev/null >/dev/null 2>&1 &
  held=$!
  local mine; mine=$(readlink /proc/self/ns/net)
  for _ in $(seq 200); do [ "$(readlink /proc/$held/ns/net 2>/dev/null)" != "$mine" ] && break; sleep 0.01; done
  [ "$(readlink /proc/$held/ns/net)" != "$mine" ] || fail "the second namespace was not created"
  ip link add "$1" type veth peer name "$2" netns "$held" || fail "ip link add $1/$2"
  ip link set "$1" up && inb ip link set "$2" up && inb ip link set lo up || fail "links up"
}
inb() { nsenter --net=/proc/$held/ns/net -- "$@"; }
stop_second() {
  kill -TERM "$second"; wait "$second" || fail "the second uroced exited $? on SIGTERM"
  second=
}

case $case_ in
  rdmacm)
    # rdma_cm programs through uroce-run --daemon: the daemon's connection
    # manager, on its port's QP1, serves all its clients; their ports are
    # taken daemon-wide, and a client that dies is disconnected (DREQ).
    ip link set lo up
    start_default
    # NAME, SERVER and CLIENT commands (the server through the daemon at
    # $sock, the client through CSOCK) and the line each must print.
    cm_pair() {
      local name=$1 srv=$2 cli=$3 srv_ok=$4 cli_ok=$5 csock=${6:-$sock}
      timeout 60 "$run" --daemon "$sock" -- $srv >"$work/$name.srv.out" 2>&1 &
      local s=$!
      sleep 1
      timeout 60 "$run" --daemon "$csock" -- $cli >"$work/$name.cli.out" 2>&1
      local crc=$?
      wait $s; local src=$?
      [ $src = 0 ] && [ $crc = 0 ] ||
        { cat "$work/$name.srv.out" "$work/$name.cli.out"; fail "$name: server $src, client $crc"; }
      grep -qE "$srv_ok" "$work/$name.srv.out" || { cat "$work/$name.srv.out"; fail "$name: the server did not print '$srv_ok'"; }
      grep -qE "$cli_ok" "$work/$name.cli.out" || { cat "$work/$name.cli.out"; fail "$name: the client did not print '$cli_ok'"; }
      echo "ok: $name through the daemon"
    }
    cm_pair rping "rping -s -a 10.0.0.1 -p 7174 -v -C 20" "rping -c -a 10.0.0.1 -p 7174 -v -C 20" \
      "^server ping data: rdma-ping-19: " "^ping data: rdma-ping-19: "
    cm_pair ucmatose "ucmatose -b 10.0.0.1 -c 4 -C 10" "ucmatose -s 10.0.0.1 -c 4 -C 10" "^return status 0" "^return status 0"
    cm_pair rdma_server-client "rdma_server -s 10.0.0.1 -p 7471" "rdma_client -s 10.0.0.1 -p 7471" \
      "^rdma_server: end 0" "^rdma_client: end 0"
    # UD QPs found by service ID (SIDR), their address handles made in the daemon.
    cm_pair udaddy "udaddy -b 10.0.0.1" "udaddy -s 10.0.0.1" "^return status 0" "^return status 0"
    # qperf: its control connection over TCP to the same address (on lo
    # here), its RC tests connected by the daemon's manager; its server's
    # rc_bw QP has no send queue.
    if command -v qperf >/dev/null; then
      ip addr add 10.0.0.1/32 dev lo
      timeout 60 "$run" --daemon "$sock" -- qperf >"$work/qperf.srv.out" 2>&1 &
      qs=$!
      sleep 1
      timeout 60 "$run" --daemon "$sock" -- qperf 10.0.0.1 -cm1 -v rc_bw rc_lat rc_rdma_write_bw rc_rdma_read_bw \
        >"$work/qperf.cli.out" 2>&1
      qrc=$?
      kill $qs; wait $qs 2>/dev/null
      [ $qrc = 0 ] || { cat "$work/qperf.cli.out"; fail "qperf -cm1 through the daemon exited $qrc"; }
      [ "$(grep -cE "^ +(bw|latency) += +[0-9.]+ " "$work/qperf.cli.out")" = 4 ] ||
        { cat "$work/qperf.cli.out"; fail "qperf -cm1 through the daemon: not four results"; }
      grep -q "failed\|error" "$work/qperf.cli.out" && { cat "$work/qperf.cli.out"; fail "qperf -cm1: an error"; }
      echo "ok: qperf -cm1 rc_bw rc_lat rc_rdma_write_bw rc_rdma_read_bw through the daemon"
    fi
    # fio's rdma engine, every block checked (crc32c): its buffers are
    # fields of one structure, registered one by one across its pages.
    if command -v fio >/dev/null; then
      fio="fio --ioengine=rdma --port=7300 --bs=64k --size=2m --verify=crc32c"
      for verb in write read; do
        cm_pair "fio-$verb" "$fio --name=srv --rw=read" "$fio --name=cli --rw=write --verb=$verb --hostname=10.0.0.1" \
          "err= 0:" "err= 0:"
      done
    fi
    # A QP the program moves itself (rdma_init_qp_attr, rdma_establish).
    if [ -x "${RDMACM_MANUAL_QP:-}" ]; then
      cm_pair manual_qp "$RDMACM_MANUAL_QP -s 10.0.0.1 -p 7472" "$RDMACM_MANUAL_QP -c 10.0.0.1 -p 7472" \
        "^rdmacm_manual_qp: end 0" "^rdmacm_manual_qp: end 0"
      cm_pair manual_qp-ucmatose "ucmatose -b 10.0.0.1 -p 7473" "$RDMACM_MANUAL_QP -c 10.0.0.1 -p 7473" \
        "^return status 0" "^rdmacm_manual_qp: end 0"
    fi
    for t in write_bw send_lat; do
      cm_pair "ib_$t-R" "ib_$t -R -d uroce0 -x 1 -n 200 -s 4096" "ib_$t -R -d uroce0 -x 1 -n 200 -s 4096 10.0.0.1" \
        "^ *4096 +200 " "^ *4096 +200 "
    done
    # A port one client listens on is taken for the others (EADDRINUSE),
    # as between two processes on Linux.
    timeout 60 "$run" --daemon "$sock" -- rping -s -a 10.0.0.1 -p 7175 -C 1000000 >"$work/busy1.out" 2>&1 &
    s1=$!
    sleep 1
    timeout 20 "$run" --daemon "$sock" -- rping -s -a 10.0.0.1 -p 7175 >"$work/busy2.out" 2>&1 &&
      fail "a second listener on a port taken through the daemon succeeded"
    grep -q "rdma_listen" "$work/busy2.out" || { cat "$work/busy2.out"; fail "the second listener did not fail in rdma_listen"; }
    echo "ok: a port another client listens on: rdma_listen fails"
    # A client killed with SIGKILL: the daemon releases its connection and
    # the peer hears DISCONNECTED at once (a DREQ, as Linux sends for a
    # process that ends).
    timeout 60 "$run" --daemon "$sock" -- rping -c -a 10.0.0.1 -p 7175 -C 1000000 >"$work/kill.cli.out" 2>&1 &
    c1=$!
    sleep 2
    kill -0 $c1 2>/dev/null || { cat "$work/kill.cli.out"; fail "the long rping client ended early"; }
    pkill -KILL -f "^rping -s -a 10.0.0.1 -p 7175 -C 1000000" || fail "no rping server to kill"
    start_ms=$(($(date +%s%N) / 1000000))
    wait $c1; crc=$?
    took=$(( $(date +%s%N) / 1000000 - start_ms ))
    wait $s1 2>/dev/null
    [ $crc != 124 ] || fail "the rping client waited for its killed server until its timeout"
    grep -q "DISCONNECT EVENT" "$work/kill.cli.out" || { cat "$work/kill.cli.out"; fail "the client heard no disconnection"; }
    [ $took -lt 5000 ] || fail "the client took $took ms to hear its killed server's disconnection"
    echo "ok: a server killed with SIGKILL: its client hears DISCONNECTED in $took ms"
    stop
    # Two daemons over a memif link: the CM's MADs on the wire between
    # their managers.
    start_linked
    cm_pair rping-two-daemons "rping -s -a 10.0.0.1 -p 7176 -v -C 20" "rping -c -a 10.0.0.1 -p 7176 -v -C 20" \
      "^server ping data: rdma-ping-19: " "^ping data: rdma-ping-19: " "$sock2"
    cm_pair ib_read_bw-R-two-daemons "ib_read_bw -R -d uroce0 -x 1 -n 200 -s 4096" \
      "ib_read_bw -R -d uroce0 -x 1 -n 200 -s 4096 10.0.0.1" "^ *4096 +200 " "^ *4096 +200 " "$sock2"
    stop_second
    stop ;;
  pair)
    # The client links no DPDK.
    ! ldd "$peer" | grep -q librte_ || fail "daemon_peer links DPDK"
    start_default
    run_peer pair
    stop ;;
  many)
    # Eight clients of one daemon, in four pairs moving data at once.
    start_default
    run_peer many
    [ "$(grep -c "client [0-9]* connected" "$log")" = 8 ] || fail "not eight clients"
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
  qpn)
    start_default
    run_peer qpn
    stop ;;
  fork)
    start_default
    run_peer fork
    stop ;;
  rxirq)
    # uroced on a net_tap port, which has a receive interrupt: the idle
    # engine sleeps on it (next to no CPU) and a frame wakes it. The peer is
    # a second uroced on another tap, the two taps on a kernel bridge; a
    # client of each moves data to the other (daemon_peer remote).
    [ -c /dev/net/tun ] || { echo "SKIP: no /dev/net/tun: net_tap cannot run here"; exit 77; }
    prefix=uroced-test-$$
    start --dev net_tap0,iface=urqa --ip 10.0.0.1 --socket "$sock" --eal "--no-huge -m 512" --file-prefix "$prefix"
    grep -q "engine: sleeps on the port's receive interrupt when idle" "$log" || fail "no receive interrupt on net_tap"
    sock2=$work/uroced2.sock
    # The second is told not to use it (--rx-interrupt off): it naps.
    "$uroced" --dev net_tap1,iface=urqb --ip 10.0.0.2 --socket "$sock2" --eal "--no-huge -m 512" --rx-interrupt off \
      >"$work/second.log" 2>&1 &
    second=$!
    for _ in $(seq 100); do [ -S "$sock2" ] && break; sleep 0.1; done
    [ -S "$sock2" ] || { cat "$work/second.log"; fail "the second uroced did not listen"; }
    grep -q "engine: naps of up to" "$work/second.log" && ! grep -q "receive interrupt when idle" "$work/second.log" ||
      { cat "$work/second.log"; fail "--rx-interrupt off: the engine does not nap"; }
    # The kernel side of a tap starts with the PMD's MAC, which a bridge
    # would take for its own.
    ip link add urqbr type bridge || fail "ip link add bridge"
    n=0
    for i in urqa urqb; do
      n=$((n + 1))
      ip link set "$i" address "02:00:5e:00:00:0$n" && ip link set "$i" master urqbr && ip link set "$i" up ||
        fail "$i on the bridge"
    done
    ip link set urqbr up || fail "bridge up"
    timeout 60 "$peer" "$sock" remote "$sock2" || { rc=$?; cat "$work/second.log"; fail "daemon_peer remote over net_tap exited $rc"; }
    # Idle now: the daemon's CPU time over three seconds (clock ticks of
    # utime + stime). Napping every millisecond costs about 3 % of a CPU.
    sleep 1
    ticks() { awk '{ print $14 + $15 }' "/proc/$DPID/stat"; }
    t0=$(ticks); sleep 3; t1=$(ticks)
    hz=$(getconf CLK_TCK)
    echo "idle uroced on net_tap: $((t1 - t0)) ticks of $((3 * hz)) in 3 s"
    [ $((t1 - t0)) -le $((3 * hz / 100)) ] || fail "an idle uroced on net_tap used $((t1 - t0)) of $((3 * hz)) ticks in 3 s"
    if command -v dpdk-telemetry.py >/dev/null; then
      echo /uroce/ports | timeout 20 dpdk-telemetry.py -f "$prefix" >"$work/tel.out" 2>&1 ||
        { cat "$work/tel.out"; fail "dpdk-telemetry.py -f $prefix failed"; }
      python3 - "$work/tel.out" <<'PY' || { cat "$work/tel.out"; fail "telemetry: no wake-up by a frame"; }
import json, sys
port = [next(iter(json.loads(l).values())) for l in open(sys.argv[1]) if l.startswith("{")][0]
assert port["rx_interrupt"] == "yes" and port["rx_interrupt_wakeups"] > 0, port
print(f"ok: {port['rx_interrupt_wakeups']} sleeps ended by a frame")
PY
    fi
    echo "ok: uroced on net_tap sleeps on the receive interrupt; data between two such daemons"
    stop_second
    stop ;;
  ports)
    # One daemon, two ports, each with its engine on an lcore of its own
    # and a socket of its own: uroce0 on net_ring0 (10.0.0.1, $sock) and
    # uroce1 on a memif link (10.0.0.3) to a second daemon (10.0.0.2). A
    # pair of clients meets on uroce0, a pair across the link from uroce1.
    sock_b=$work/uroced-b.sock
    prefix=uroced-test-$$
    cat >"$work/ports.conf" <<CONF
[daemon]
socket = $sock
file_prefix = $prefix
eal = --no-huge -m 512
[port]
dev = net_ring0
ip = 10.0.0.1
[port]
dev = net_memif0,role=server,id=0,socket=$work/memif.sock,socket-abstract=no
ip = 10.0.0.3
socket = $sock_b
CONF
    start --config "$work/ports.conf"
    for _ in $(seq 50); do [ -S "$sock_b" ] && break; sleep 0.1; done
    grep -q "uroce0 on net_ring0, 10.0.0.1: listening on $sock\$" "$log" || fail "no uroce0 on net_ring0"
    grep -q "uroce1 on net_memif0,.*, 10.0.0.3: listening on $sock_b\$" "$log" || fail "no uroce1 on memif"
    # EAL made a worker lcore per port; each engine took one (and named it).
    [ "$(cat /proc/$DPID/task/*/comm | grep -cx uroce-engine)" = 2 ] || fail "not two engine threads"
    cat /proc/$DPID/task/*/comm | grep -q "^lcore-worker" && fail "a worker lcore is left without an engine"
    sock2=$work/uroced2.sock
    "$uroced" --dev "net_memif0,role=client,id=0,socket=$work/memif.sock,socket-abstract=no" --ip 10.0.0.2 \
      --socket "$sock2" --eal "--no-huge -m 512" >"$work/second.log" 2>&1 &
    second=$!
    for _ in $(seq 100); do [ -S "$sock2" ] && break; sleep 0.1; done
    [ -S "$sock2" ] || { cat "$work/second.log"; fail "the second uroced did not listen"; }
    timeout 60 "$peer" "$sock" pair || fail "daemon_peer pair on uroce0 exited $?"
    timeout 60 "$peer" "$sock_b" remote "$sock2" || { rc=$?; cat "$work/second.log"; fail "daemon_peer remote from uroce1 exited $rc"; }
    grep -q "client [0-9]* connected to uroce1" "$log" || fail "no client of uroce1 logged"
    if command -v dpdk-telemetry.py >/dev/null; then
      printf '/uroce/ports\n/uroce/ports,uroce1\n/uroce/counters,1\n/uroce/ports,uroce9\n' |
        timeout 20 dpdk-telemetry.py -f "$prefix" >"$work/tel.out" 2>&1 || { cat "$work/tel.out"; fail "dpdk-telemetry.py failed"; }
      python3 - "$work/tel.out" <<'PY' || { cat "$work/tel.out"; fail "telemetry of two ports"; }
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
first, second, counters, none = (next(iter(l.values())) for l in lines[:4])
assert first["name"] == "uroce0" and first["dev"] == "net_ring0", first
assert first["devices"] == ["uroce0", "uroce1"], first
assert second["name"] == "uroce1" and second["dev"].startswith("net_memif0") and "10.0.0.3" in second["gids"], second
assert counters["rx_frames"] > 0 and counters["tx_frames"] > 0, counters
assert none is None, none
print("ok: telemetry names both ports; uroce1's counters moved")
PY
    fi
    stop_second
    stop
    # eal naming one lcore (no worker) for two ports: both engines run on
    # threads of their own, and the log says what that costs.
    printf "[daemon]\nsocket = $sock\neal = -l 0 --no-huge -m 512\n[port]\ndev = net_ring0\nip = 10.0.0.1\n[port]\ndev = net_ring1\nip = 10.0.0.5\nsocket = $sock_b\n" >"$work/few.conf"
    start --config "$work/few.conf"
    grep -q "eal gives 0 worker lcore(s) for 2 port(s)" "$log" || { cat "$log"; fail "no warning for too few worker lcores"; }
    [ "$(cat /proc/$DPID/task/*/comm | grep -cx uroce-engine)" = 2 ] || fail "not two engine threads without workers"
    timeout 60 "$peer" "$sock" pair || fail "daemon_peer pair on uroce0 without worker lcores exited $?"
    stop
    # A port after the first without a socket of its own, two ports on one
    # socket, a socket on the first port: refused.
    badports() {
      printf "[daemon]\nsocket = $sock\n[port]\ndev = net_ring0\nip = 10.0.0.1\n$1" >"$work/bad.conf"
      timeout 10 "$uroced" --config "$work/bad.conf" >"$work/out" 2>&1
      local rc=$?
      [ $rc = 2 ] && grep -qF -- "$2" "$work/out" || { cat "$work/out"; fail "'$1': exit $rc, no message '$2'"; }
    }
    badports '[port]\ndev = net_ring1\nip = 10.0.0.5\n' "[port] 2: no socket"
    badports "[port]\ndev = net_ring1\nip = 10.0.0.5\nsocket = $sock\n" "is another port's too"
    badports "[port]\nsocket = $work/x.sock\ndev = net_ring1\n" "[port] 2: dev and ip are required"
    badports "[port]\ndev = net_ring0\nip = 10.0.0.5\nsocket = $work/x.sock\n" "dev net_ring0 is another port's too"
    # A second port that cannot open: exit 1 with the reason, after the
    # first port's engine has stopped (no hang, no crash).
    printf "[daemon]\nsocket = $sock\neal = --no-huge -m 512\n[port]\ndev = net_ring0\nip = 10.0.0.1\n[port]\ndev = net_nosuch0\nip = 10.0.0.3\nsocket = $work/x.sock\n" >"$work/bad.conf"
    timeout 30 "$uroced" --config "$work/bad.conf" >"$work/out" 2>&1
    rc=$?
    [ $rc = 1 ] && grep -q "no such DPDK device or driver: net_nosuch0" "$work/out" ||
      { cat "$work/out"; fail "a second port that cannot open: exit $rc"; }
    printf "[port]\ndev = net_ring0\nip = 10.0.0.1\nsocket = $work/x.sock\n" >"$work/bad.conf"
    timeout 10 "$uroced" --config "$work/bad.conf" >"$work/out" 2>&1
    [ $? = 2 ] && grep -q "the first port's clients use \[daemon\] socket" "$work/out" || { cat "$work/out"; fail "a socket on the first port"; }
    echo "ok: two ports in one daemon, each with its engine lcore and socket; bad port sections refused" ;;
  netns)
    # Two daemons in two network namespaces joined by a veth pair
    # (net_af_packet on each end), a client of each: ARP across, then the
    # pair moves and verifies its data.
    veth_to_second_namespace urda urdb
    start --dev net_af_packet0,iface=urda --ip 10.0.0.1 --socket "$sock" --eal "--no-huge -m 512"
    sock2=$work/uroced2.sock
    # nsenter execs uroced: $! is the daemon (a function would put a shell
    # between them).
    nsenter --net=/proc/$held/ns/net -- "$uroced" --dev net_af_packet0,iface=urdb --ip 10.0.0.2 --socket "$sock2" \
      --eal "--no-huge -m 512" >"$work/second.log" 2>&1 &
    second=$!
    for _ in $(seq 100); do [ -S "$sock2" ] && break; sleep 0.1; done
    [ -S "$sock2" ] || { cat "$work/second.log"; fail "the second uroced did not listen"; }
    timeout 60 "$peer" "$sock" remote "$sock2" || { rc=$?; cat "$work/second.log"; fail "daemon_peer remote across namespaces exited $rc"; }
    echo "ok: clients of two daemons in two network namespaces, over a veth pair"
    stop_second
    stop ;;
  vlan)
    # 802.1Q across a veth pair: uroced here on urva (VLAN 100, PCP 3); in a
    # second namespace a second uroced on urvb (the same VLAN, PCP 5) and Linux's
    # own VLAN interface urvb.100. Linux resolves the daemon's address over
    # urvb.100 (so it took the daemon's tagged ARP reply), the clients of
    # the two daemons move and verify their data (af_packet hands the
    # engines frames whose tag the kernel took out), and tcpdump on urva
    # sees the RoCE frames of each tagged with VLAN 100 and its PCP (3 and
    # 5), none untagged.
    veth_to_second_namespace urva urvb
    # Linux's VLAN interface needs the kernel's 8021q; without it the rest
    # still runs (interop-rc_pingpong and interop-verbs_pingpong have rxe
    # on a VLAN interface).
    linux_vlan=0
    if inb ip link add link urvb name urvb.100 type vlan id 100 2>/dev/null; then
      inb ip addr add 10.0.100.2/24 dev urvb.100 && inb ip link set urvb.100 up || fail "urvb.100 up"
      linux_vlan=1
    fi
    tcpdump -i urva -U -w "$work/vlan.pcap" >"$work/tcpdump.log" 2>&1 &
    capture=$!
    for _ in $(seq 100); do grep -q "listening on" "$work/tcpdump.log" && break; sleep 0.05; done
    # qdisc_bypass=0: frames af_packet sends then pass the interface's
    # taps, and tcpdump on urva sees this daemon's frames too.
    start --dev net_af_packet0,iface=urva,qdisc_bypass=0 --ip 10.0.100.1 --vlan 100 --pcp 3 --socket "$sock" \
      --eal "--no-huge -m 512"
    # A datagram to the daemon's address makes Linux ask for its MAC first.
    mac=$(ip -br link show urva | awk '{print $3}')
    for _ in $(seq 20); do
      [ $linux_vlan = 1 ] || break
      inb python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('10.0.100.1', 9))"
      inb ip neigh show 10.0.100.1 dev urvb.100 | grep -q "lladdr $mac" && break
      sleep 0.1
    done
    [ $linux_vlan = 0 ] || inb ip neigh show 10.0.100.1 dev urvb.100 | grep -q "lladdr $mac" ||
      { inb ip neigh show; fail "Linux did not resolve 10.0.100.1 to $mac over its VLAN interface"; }
    sock2=$work/uroced2.sock
    nsenter --net=/proc/$held/ns/net -- "$uroced" --dev net_af_packet0,iface=urvb --ip 10.0.100.3 --vlan 100 --pcp 5 \
      --socket "$sock2" --eal "--no-huge -m 512" >"$work/second.log" 2>&1 &
    second=$!
    for _ in $(seq 100); do [ -S "$sock2" ] && break; sleep 0.1; done
    [ -S "$sock2" ] || { cat "$work/second.log"; fail "the second uroced did not listen"; }
    timeout 60 "$peer" "$sock" remote "$sock2" || { rc=$?; cat "$work/second.log"; fail "daemon_peer remote on VLAN 100 exited $rc"; }
    stop_second
    stop
    kill -INT "$capture"; wait "$capture"; capture=
    # Each daemon's frames with its own PCP: 3 from 10.0.100.1, 5 from 10.0.100.3.
    tcpdump -r "$work/vlan.pcap" -nn -e 'vlan 100 and udp port 4791' >"$work/vlan.txt" 2>/dev/null
    all_tagged=$(wc -l <"$work/vlan.txt")
    from_a=$(grep -c "vlan 100, p 3, ethertype IPv4 (0x0800), 10.0.100.1\.[0-9]* > 10.0.100.3.4791" "$work/vlan.txt")
    from_b=$(grep -c "vlan 100, p 5, ethertype IPv4 (0x0800), 10.0.100.3\.[0-9]* > 10.0.100.1.4791" "$work/vlan.txt")
    untagged=$(tcpdump -r "$work/vlan.pcap" -nn 'udp port 4791' 2>/dev/null | wc -l)
    [ "$from_a" -gt 20 ] && [ "$from_b" -gt 20 ] && [ $((from_a + from_b)) = "$all_tagged" ] ||
      { head -5 "$work/vlan.txt"; fail "RoCE frames on urva: $from_a from 10.0.100.1 with PCP 3, $from_b from 10.0.100.3 with PCP 5, of $all_tagged on VLAN 100"; }
    [ "$untagged" = 0 ] || fail "$untagged untagged RoCE frames on urva"
    echo "ok: clients of two daemons on VLAN 100 ($from_a RoCE frames with PCP 3 one way, $from_b with PCP 5 the other, none untagged)"
    if [ $linux_vlan = 1 ]; then echo "ok: Linux resolved the daemon's address on urvb.100"
    else echo "note: this kernel has no 8021q: Linux's VLAN interface was not tried"; fi ;;
  remote)
    # Two daemons joined by a memif link, a client on each: the QPs meet
    # over the wire (ARP first), not in one engine.
    start_linked
    timeout 60 "$peer" "$sock" remote "$sock2" || { rc=$?; cat "$work/second.log"; fail "daemon_peer remote exited $rc"; }
    stop_second
    stop ;;
  pcap)
    # The first of two linked daemons captures its port (--pcap, then
    # [port] pcap): a pair across them is in the capture, which uroce-dump
    # accepts while the daemon runs (written out when it goes idle) and
    # after it stops.
    printf '[port]\npcap = %s\n' "$work/conf.pcap" >"$work/pcap.conf"
    for how in "--pcap $work/cli.pcap" "--config $work/pcap.conf"; do
      cap=$work/cli.pcap
      [ "${how%% *}" = --config ] && cap=$work/conf.pcap
      start_linked $how
      timeout 60 "$peer" "$sock" remote "$sock2" || { rc=$?; cat "$work/second.log"; fail "daemon_peer remote exited $rc"; }
      sleep 1
      for when in running stopped; do
        "$dump" "$cap" >"$work/dump.out" 2>&1 || { tail "$work/dump.out"; fail "$how: uroce-dump rejects the capture ($when)"; }
        for op in RC_RDMA_WRITE_FIRST RC_SEND_ONLY RC_RDMA_READ_REQUEST RC_ACKNOWLEDGE; do
          grep -q "$op" "$work/dump.out" || { tail "$work/dump.out"; fail "$how: no $op in the capture ($when)"; }
        done
        [ $when = running ] && { stop_second; stop; }
      done
      echo "ok: $how: $(tail -1 "$work/dump.out")"
    done ;;
  dumpcap)
    # DPDK's own dpdk-dumpcap (package dpdk-dev) captures a running
    # daemon's port: with hugepages uroced is a multi-process primary that
    # serves DPDK's capture framework, and dumpcap attaches as a secondary
    # of its file prefix. A pair across two linked daemons is in the
    # capture (both directions), which uroce-dump accepts.
    command -v dpdk-dumpcap >/dev/null || { echo "SKIP: dpdk-dumpcap not installed (package dpdk-dev)"; exit 77; }
    use_hugepages
    prefix=uroced-dumpcap-$$
    first_eal="--huge-dir $huge -m 128" start_linked --file-prefix "$prefix" --log-level info
    grep -q "dpdk-dumpcap --file-prefix=$prefix can capture the port" "$log" || fail "the daemon does not serve dpdk-dumpcap"
    timeout 60 dpdk-dumpcap --file-prefix="$prefix" -i net_memif0 -w "$work/dumpcap.pcapng" >"$work/dumpcap.out" 2>&1 &
    capture=$!
    # Its count line shows once the primary copies frames to it (its
    # "Capturing on" line comes at the end, stdout being a file).
    for _ in $(seq 100); do grep -q "Packets captured" "$work/dumpcap.out" && break; sleep 0.1; done
    grep -q "Packets captured" "$work/dumpcap.out" || { cat "$work/dumpcap.out"; fail "dpdk-dumpcap did not start capturing"; }
    timeout 60 "$peer" "$sock" remote "$sock2" || { rc=$?; cat "$work/second.log"; fail "daemon_peer remote exited $rc"; }
    kill -INT "$capture"; wait "$capture" || { cat "$work/dumpcap.out"; fail "dpdk-dumpcap exited $? on SIGINT"; }
    capture=
    grep -q "dropped on interface 'net_memif0': [1-9][0-9]*/0 " "$work/dumpcap.out" ||
      { cat "$work/dumpcap.out"; fail "dpdk-dumpcap captured nothing, or dropped frames"; }
    "$dump" "$work/dumpcap.pcapng" >"$work/dump.out" 2>&1 || { tail "$work/dump.out"; fail "uroce-dump rejects dpdk-dumpcap's capture"; }
    for op in RC_RDMA_WRITE_FIRST RC_SEND_ONLY RC_RDMA_READ_REQUEST RC_RDMA_READ_RESPONSE_FIRST RC_ACKNOWLEDGE; do
      grep -q "$op" "$work/dump.out" || { tail "$work/dump.out"; fail "no $op in dpdk-dumpcap's capture"; }
    done
    grep -q "invalid: *0$" "$work/dump.out" || { tail "$work/dump.out"; fail "invalid packets in the capture"; }
    stop_second
    stop
    echo "ok: $(grep "dropped on interface" "$work/dumpcap.out"); $(grep "valid:" "$work/dump.out" | head -1 | tr -s ' ')" ;;
  hugepages)
    # alloc_mr's regions of 2 MiB or more on the kernel's free huge pages,
    # registered with DPDK as external memory; with hugepage_regions off,
    # or without free huge pages, on 4 KiB pages.
    start_default --log-level debug
    free=$(cat "${pages%/nr_hugepages}/free_hugepages" 2>/dev/null || echo 0)
    if [ "$free" -lt 4 ]; then
      timeout 60 "$peer" "$sock" huge 4 || fail "daemon_peer huge 4 (no free huge pages) exited $?"
      grep -q "on 2 MiB pages" "$log" && fail "a region on huge pages while none were free"
    fi
    stop
    use_hugepages
    start_default --log-level debug
    timeout 60 "$peer" "$sock" huge 2048 accept || { rc=$?; cat "$log"; fail "daemon_peer huge 2048 exited $rc"; }
    grep -q "alloc_mr of 4194304 bytes on 2 MiB pages, DPDK external memory" "$log" ||
      { cat "$log"; fail "no log line for a region on huge pages registered with DPDK"; }
    stop
    start_default --log-level debug --hugepage-regions off
    timeout 60 "$peer" "$sock" huge 4 refuse || fail "daemon_peer huge 4 (hugepage_regions off) exited $?"
    stop ;;
  srq)
    # Shared receive queues through the daemon (daemon_peer srq).
    start_default
    run_peer srq
    stop ;;
  systemd)
    # READY=1 once the socket listens, STOPPING=1 on SIGTERM, to the
    # datagram socket NOTIFY_SOCKET names: a path, then an abstract name.
    for addr in "$work/notify" "@uroced-test-$$"; do
      rm -f "$work/notify" "$work/notes"
      python3 - "$addr" "$sock" >"$work/notes" 2>&1 <<'PY' &
import os, socket, sys
addr, sock = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
s.settimeout(30)
print("bound", flush=True)
for _ in range(2):
    msg = s.recv(4096).decode()
    print(repr(msg), "socket exists" if os.path.exists(sock) else "no socket yet", flush=True)
PY
      listener=$!
      for _ in $(seq 50); do grep -q bound "$work/notes" && break; sleep 0.1; done
      NOTIFY_SOCKET=$addr start_default
      for _ in $(seq 50); do grep -q READY "$work/notes" && break; sleep 0.1; done
      grep -q "'READY=1.*' socket exists" "$work/notes" || { cat "$work/notes"; fail "$addr: no READY=1 after the socket listened"; }
      run_peer pair
      stop
      wait $listener || { cat "$work/notes"; fail "$addr: the listener failed"; }
      grep -q "'STOPPING=1" "$work/notes" || { cat "$work/notes"; fail "$addr: no STOPPING=1"; }
      echo "ok: NOTIFY_SOCKET=$addr: $(tr '\n' ' ' <"$work/notes")"
    done
    # The example configuration loads (its port replaced by the ring).
    start --config "$UROCED_EXAMPLE" --dev net_ring0 --ip 10.0.0.1 --socket "$sock" --eal "--no-huge -m 512"
    stop
    # The unit as installed for this build's prefix, and systemd's verdict
    # on it (with ExecStart pointing at this build's daemon).
    grep -qx "Type=notify" "$UROCED_UNIT" && grep -qx "LimitMEMLOCK=infinity" "$UROCED_UNIT" &&
      grep -qx "RuntimeDirectory=uroce" "$UROCED_UNIT" && grep -qx "Restart=on-failure" "$UROCED_UNIT" &&
      grep -qE "^ExecStart=/.*/uroced --config /.*etc/uroce/uroced.conf$" "$UROCED_UNIT" ||
      { cat "$UROCED_UNIT"; fail "the unit lacks a setting"; }
    if command -v systemd-analyze >/dev/null; then
      sed "s|^ExecStart=[^ ]*|ExecStart=$(realpath "$uroced")|" "$UROCED_UNIT" >"$work/uroced.service"
      systemd-analyze verify "$work/uroced.service" >"$work/verify.out" 2>&1 ||
        { cat "$work/verify.out"; fail "systemd-analyze verify rejects the unit"; }
      [ ! -s "$work/verify.out" ] || { cat "$work/verify.out"; fail "systemd-analyze verify complains"; }
      echo "ok: systemd-analyze verify accepts the unit"
    else
      echo "note: systemd-analyze not installed: the unit is not verified"
    fi ;;
  events)
    start_default
    run_peer events
    stop ;;
  death)
    start_default
    run_peer death "$DPID"
    wait "$DPID" 2>/dev/null; DPID=
    # A daemon started on the same path (the dead one's socket file is
    # still there) serves new clients.
    [ -S "$sock" ] || fail "the killed daemon's socket file is gone: the restart is not tested"
    start_default
    run_peer pair
    stop ;;
  config)
    # The INI file, with the command line on top of it; the socket's mode;
    # uroced's log level, its CPUs, congestion control.
    # (A daemon that wrongly accepts a bad setting is stopped by timeout.)
    cpu=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status | cut -d, -f1 | cut -d- -f1)
    printf 'cc = dcqcn-paper\nrpg_ai_rate = 9\n' >"$work/cc.conf"
    cat >"$work/uroced.conf" <<CONF
[daemon]
socket = $work/from-config.sock
socket_mode = 0600
eal = --no-huge -m 512
log_level = debug
lcores = $cpu
idle_sleep_us = 2500
[port]
dev = net_ring0
ip = 10.0.0.1
cc = dcqcn
cc_config = $work/cc.conf
cc_param = rpg_time_reset=301
cc_param = rpg_hai_rate=77
[limits]
max_pd = 2
max_cq = 3
max_qp = 1
max_mr = 3
max_ah = 2
max_mw = 2
max_mr_bytes = $((4 * $(getconf PAGESIZE)))
arena_bytes = 65536
CONF
    start --config "$work/uroced.conf" --socket "$sock"
    [ ! -e "$work/from-config.sock" ] || fail "--socket did not win over the file"
    [ "$(stat -c %a "$sock")" = 600 ] || fail "socket_mode not applied: $(stat -c %a "$sock")"
    # The main thread and the engine thread (EAL's control threads keep the
    # other CPUs).
    for t in /proc/$DPID/task/*; do
      [ "$(cat "$t/comm")" = uroced ] || continue
      a=$(awk '/^Cpus_allowed_list/ {print $2}' "$t/status")
      [ "$a" = "$cpu" ] || fail "lcores = $cpu: thread ${t##*/} may run on CPUs $a"
    done
    grep -qE "congestion control: dcqcn .*rpg_time_reset=301 .*rpg_ai_rate=9 rpg_hai_rate=77 " "$log" ||
      fail "cc, cc_config and cc_param not applied in that order"
    grep -q "engine: naps of up to 2500 us when idle" "$log" || fail "idle_sleep_us not applied"
    run_peer quota
    grep -q "client 1: alloc_pd: done" "$log" || fail "log_level = debug: no debug line"
    for key in max_pd max_cq max_qp max_mr max_ah max_mw max_mr_bytes arena_bytes; do
      grep -q "\[limits\] $key = [0-9]* reached: refused with ENOMEM" "$log" || fail "no log line for the $key quota"
    done
    stop
    # The command line: info hides the debug lines, --cc and --cc-param;
    # DPDK's telemetry socket (on by default) answers for the port under
    # --file-prefix (docs/operations.md).
    prefix=uroced-test-$$
    start --dev net_ring0 --ip 10.0.0.1 --socket "$sock" --eal "--no-huge -m 512" --log-level info \
      --cc dcqcn-paper --cc-param rpg_min_rate=5 --file-prefix "$prefix"
    run_peer pair
    grep -q "client 1 connected" "$log" || fail "--log-level info: no 'connected' line"
    grep -q ": alloc_pd: done" "$log" && fail "--log-level info: debug lines logged"
    grep -qE "congestion control: dcqcn .*rpg_min_rate=5 " "$log" || fail "--cc and --cc-param not applied"
    python3 - "/var/run/dpdk/$prefix/dpdk_telemetry.v2" <<'PY' || fail "DPDK telemetry does not answer /ethdev/stats,0"
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(4096)
s.send(b"/ethdev/stats,0")
assert "ipackets" in json.loads(s.recv(16384))["/ethdev/stats"]
PY
    stop
    bad() {  # CONFIG-LINES MESSAGE: refused with exit 2 and the message
      printf "$1" >"$work/bad.conf"
      timeout 10 "$uroced" --config "$work/bad.conf" --dev net_ring0 --ip 10.0.0.1 --socket "$sock" >"$work/out" 2>&1
      local rc=$?
      [ $rc = 2 ] || { cat "$work/out"; fail "'$1' exited $rc, not 2"; }
      grep -qF -- "$2" "$work/out" || { cat "$work/out"; fail "'$1': no message '$2'"; }
    }
    bad '[daemon]\nlog_level = loud\n' "log level 'loud' is none of emergency"
    bad '[daemon]\nlcores = a-b\n' "lcores 'a-b' is not a CPU list"
    bad '[daemon]\nfile_prefix = a/b\n' "file_prefix 'a/b' is empty or has a '/'"
    bad '[daemon]\nlcores = 0\neal = -l 1\n' "lcores and an EAL -l, -c or --lcores in eal: give one of them"
    bad '[daemon]\nhugepage_regions = always\n' "hugepage_regions = 'always' is neither auto nor off"
    bad '[port]\nrx_interrupt = on\n' "rx_interrupt = 'on' is neither auto nor off"
    bad '[daemon]\nidle_sleep_us = 60000\n' "idle_sleep_us = 60000 is above the maximum of 50000"
    bad '[port]\nvlan = 4095\n' "[port] vlan = 4095 is not a VLAN id (0..4094)"
    bad '[port]\npcp = 8\n' "[port] pcp = 8 is not an 802.1p priority (0..7)"
    bad '[port]\nvlan = ten\n' "[port] vlan = 'ten' is not a number"
    bad '[port]\nvlan = -1\n' "[port] vlan = '-1' is not a number"
    bad '[port]\npcp = 99999999\n' "[port] pcp = 65536 is not an 802.1p priority (0..7)"
    bad '[port]\ncc = cubic\n' "cubic"
    bad '[port]\ncc = dcqcn\ncc_param = rpg_nonsense=1\n' "rpg_nonsense"
    bad "[port]\ncc_config = $work/none.conf\n" "$work/none.conf"
    # What DPDK's rte_cfgfile would skip, cut or misread: refused with the line.
    bad '[daemon]\nlog_level debug\n' "bad.conf:2: 'log_level debug' is not KEY = VALUE"
    bad '[limits]\nmax_qp =\n' "bad.conf:2: [limits] max_qp has no value"
    bad 'max_qp = 8\n[limits]\n' "bad.conf:1: max_qp is outside any [section]"
    bad '[limits]\nmax_qp = 8\nmax_qp = 9\n' "bad.conf:3: [limits] max_qp is given twice"
    bad '[limits]\nmax_qp = 8\n[daemon]\n[limits]\nmax_cq = 9\n' "bad.conf:4: a second [limits] section"
    bad "[daemon]\neal = $(printf 'x%.0s' $(seq 300))\n" "bad.conf:2: [daemon] eal: longer than 255 characters"
    bad '[port] dev = x\n' "bad.conf:1: '[port] dev = x' is not a [section] line"
    bad '[daemon]\nengine_cpu = -5\n' "engine_cpu = -5 is not a CPU (-1: not pinned)"
    bad '[limits]\narena_bytes = 107374182400\n' "arena_bytes = 107374182400 is above the maximum of 4294967296"
    timeout 10 "$uroced" --config "$work" --dev net_ring0 --ip 10.0.0.1 --socket "$sock" >"$work/out" 2>&1
    [ $? = 2 ] && grep -q "cannot read the configuration file $work: not a regular file" "$work/out" ||
      { cat "$work/out"; fail "a directory as --config was not refused"; }
    "$uroced" --config "$work/missing.conf" >"$work/out" 2>&1 && fail "a missing config file was accepted"
    grep -q "cannot read the configuration file" "$work/out" || fail "no message for a missing config file"
    printf '[limits]\nmax_qp = many\n' >"$work/bad.conf"
    "$uroced" --config "$work/bad.conf" --dev net_ring0 --ip 10.0.0.1 >"$work/out" 2>&1 && fail "a bad number was accepted"
    grep -q "max_qp = 'many' is not a number" "$work/out" || fail "no message for a bad number"
    for v in "--vlan -1" "--vlan 4095" "--pcp 8"; do
      timeout 10 "$uroced" --dev net_ring0 --ip 10.0.0.1 $v >"$work/out" 2>&1
      [ $? = 2 ] && grep -q "not in range" "$work/out" || { cat "$work/out"; fail "uroced $v: not refused with exit 2"; }
    done
    timeout 10 "$uroced" --dev net_ring0 --ip 10.0.0.1 --socket-mode 0998 >"$work/out" 2>&1 && fail "a socket mode of 0998 was accepted"
    grep -q "socket mode '0998' is not octal permission bits" "$work/out" || fail "no message for a bad socket mode"
    printf '[limits]\nmax_qps = 1\n' >"$work/bad.conf"
    timeout 10 "$uroced" --config "$work/bad.conf" --dev net_ring0 --ip 10.0.0.1 >"$work/out" 2>&1 && fail "an unknown key was accepted"
    grep -q "bad.conf: \[limits\] max_qps: unknown key" "$work/out" || fail "no message for an unknown key"
    printf '[limit]\nmax_qp = 1\n' >"$work/bad.conf"
    timeout 10 "$uroced" --config "$work/bad.conf" --dev net_ring0 --ip 10.0.0.1 >"$work/out" 2>&1 && fail "an unknown section was accepted"
    grep -q "unknown section \[limit\]" "$work/out" || fail "no message for an unknown section"
    printf '[limits]\narena_bytes = 100\n' >"$work/bad.conf"
    timeout 10 "$uroced" --config "$work/bad.conf" --dev net_ring0 --ip 10.0.0.1 >"$work/out" 2>&1 && fail "a 100-byte arena was accepted"
    grep -q "arena_bytes = 100 is below the minimum" "$work/out" || fail "no message for a small arena" ;;
  perf)
    # uroce-perf's two ends as two Devices opened on the daemon's socket
    # (the native API, no EAL in uroce-perf), data checked.
    start_default
    for t in write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat atomic_lat "send_bw -e" "write_bw -q 2 -b" \
             "send_bw --use-srq -q 2" "send_lat --use-srq" "write_bw -c UC" "send_bw -c UC" "write_lat -c UC" \
             "send_bw -c UD" "send_lat -c UD" "send_bw -c UD -q 2"; do
      s="-s 4096"; want=4096
      case $t in atomic*) s=; want=8 ;; *UD*) s="-s 1024"; want=1024 ;; esac
      timeout 60 "$perf" $t --daemon "$sock" --verify -n 200 $s >"$work/out" 2>&1 ||
        { rc=$?; cat "$work/out"; fail "uroce-perf $t --daemon exited $rc"; }
      grep -q "data verified" "$work/out" || { cat "$work/out"; fail "$t: no 'data verified'"; }
      [ "$(grep -cE "^ $want +[24]00 " "$work/out")" = 1 ] || { cat "$work/out"; fail "$t: no result row"; }
    done
    "$perf" raw_bw --daemon "$sock" >"$work/raw.out" 2>&1 && fail "raw_bw --daemon was accepted"
    grep -q "daemon runs the RC, UC and UD tests so far" "$work/raw.out" || fail "no message for raw_bw --daemon"
    stop ;;
  shim)
    # Debian's programs through uroce-run --daemon: the drop-in libibverbs
    # opens uroce0 as a client of the daemon (no EAL in the program), and
    # two programs' QPs meet in the daemon's engine (one GID, loopback).
    ip link set lo up
    "$run" --daemon "$work/none.sock" -- true >"$work/out" 2>&1
    [ $? = 2 ] || fail "uroce-run --daemon on a missing socket: exit is not 2"
    grep -q "no uroced at $work/none.sock" "$work/out" || { cat "$work/out"; fail "no message for a missing daemon"; }
    "$run" --daemon "$sock" --dev net_null0 -- true >/dev/null 2>&1 && fail "--daemon with --dev was accepted"
    start_default
    out=$work/devinfo.out
    timeout 30 "$run" --daemon "$sock" -- ibv_devinfo -v >"$out" 2>&1 || { rc=$?; cat "$out"; fail "ibv_devinfo -v exited $rc"; }
    for re in "^hca_id:\s+uroce0$" "^\s+state:\s+PORT_ACTIVE \(4\)$" "^\s+link_layer:\s+Ethernet$" \
              "^\s+active_mtu:\s+1024 \(3\)$" "^\s+GID\[  0\]:\s+fe80::[0-9a-f:]+, RoCE v2$" \
              "^\s+GID\[  1\]:\s+::ffff:10\.0\.0\.1, RoCE v2$" "^\s+max_sge:\s+4$" "^\s+max_mw:\s+1024$" \
              "^\s+MEM_WINDOW$" "^\s+MEM_WINDOW_TYPE_2B$"; do
      grep -qE "$re" "$out" || { cat "$out"; fail "ibv_devinfo -v through the daemon: no line $re"; }
    done
    grep -qE "^\s+node_guid:\s+0000:0000:0000:0000$" "$out" && fail "node_guid is 0 through the daemon"
    grep -q "EAL" "$out" && { cat "$out"; fail "the program started an EAL"; }
    # The drop-in's own cases tagged abi-daemon: regions registered at an
    # IOVA other than their address (ibv_reg_mr_iova2), UD through ibv_wr_*
    # with a datagram past the MTU refused at post, memory windows of both
    # types (binds, invalidation by the peer and locally, refused keys).
    if [ -n "${ABI_EX_TEST:-}" ]; then
      timeout 60 "$run" --daemon "$sock" -- "$ABI_EX_TEST" "[abi-daemon]" >"$work/abi.out" 2>&1 ||
        { cat "$work/abi.out"; fail "abi_ex_test [abi-daemon] through the daemon"; }
      grep -q "All tests passed" "$work/abi.out" || { cat "$work/abi.out"; fail "abi_ex_test [abi-daemon] ran no test"; }
      echo "ok: abi_ex_test [abi-daemon] through the daemon: $(grep "All tests passed" "$work/abi.out")"
    fi
    for s in "64 500" "4096 200"; do
      set -- $s
      timeout 60 "$run" --daemon "$sock" -- ibv_rc_pingpong -d uroce0 -g 1 -s "$1" -n "$2" \
        >"$work/rc.srv.out" 2>&1 &
      srv=$!
      sleep 0.5
      timeout 60 "$run" --daemon "$sock" -- ibv_rc_pingpong -d uroce0 -g 1 -s "$1" -n "$2" 127.0.0.1 \
        >"$work/rc.cli.out" 2>&1
      crc=$?
      wait $srv; src=$?
      [ $src = 0 ] && [ $crc = 0 ] ||
        { cat "$work/rc.srv.out" "$work/rc.cli.out"; fail "ibv_rc_pingpong -s $1: server $src, client $crc"; }
      for f in "$work/rc.srv.out" "$work/rc.cli.out"; do
        grep -qE "^$((2 * $1 * $2)) bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$" "$f" || { cat "$f"; fail "no bytes line in $f"; }
        grep -qE "^$2 iters in [0-9.]+ seconds = [0-9.]+ usec/iter$" "$f" || { cat "$f"; fail "no iters line in $f"; }
      done
      echo "ok: ibv_rc_pingpong -s $1 -n $2 through the daemon: $(grep usec/iter "$work/rc.cli.out")"
    done
    # A shared receive queue (ibv_srq_pingpong's 16 QPs on one SRQ) and UC,
    # each message checked (-c).
    pingpong_pair ibv_srq_pingpong 4096000 -n 500
    for f in "$work/ibv_srq_pingpong.srv.out" "$work/ibv_srq_pingpong.cli.out"; do
      [ "$(grep -c "remote address:" "$f")" = 16 ] || { cat "$f"; fail "$f: not 16 QPs"; }
    done
    pingpong_pair ibv_uc_pingpong 2457600 -n 300
    # UD: address handles made in the daemon, 1024-byte datagrams.
    pingpong_pair ibv_ud_pingpong 614400 -n 300 -s 1024
    for spec in "ib_write_bw -n 200|65536 200" "ib_write_bw -s 4096 -n 500|4096 500"; do
      cmd=${spec%%|*} want=${spec#*|}
      timeout 60 "$run" --daemon "$sock" -- $cmd -d uroce0 -x 1 -F >"$work/bw.srv.out" 2>&1 &
      srv=$!
      sleep 0.5
      timeout 60 "$run" --daemon "$sock" -- $cmd -d uroce0 -x 1 -F 127.0.0.1 >"$work/bw.cli.out" 2>&1
      crc=$?
      wait $srv; src=$?
      [ $src = 0 ] && [ $crc = 0 ] ||
        { cat "$work/bw.srv.out" "$work/bw.cli.out"; fail "$cmd: server $src, client $crc"; }
      set -- $want
      row="^ $1[[:space:]]+$2[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+"
      # The passive side of a WRITE test measures nothing: the row is the client's.
      grep -qE "$row" "$work/bw.cli.out" || { cat "$work/bw.cli.out"; fail "$cmd: no result row '$want ...'"; }
      grep -q "Link type       : Ethernet" "$work/bw.cli.out" || fail "$cmd: link type is not Ethernet"
      echo "ok: $cmd through the daemon: $(grep -E "$row" "$work/bw.cli.out" | tr -s ' \t' ' ')"
    done
    stop
    # A remote peer: the server a client of one daemon, the client of
    # another, their QPs joined over the memif link (the drop-in's modify
    # to RTR waits while the daemon resolves the peer's MAC).
    start_linked
    timeout 60 "$run" --daemon "$sock" -- ibv_rc_pingpong -d uroce0 -g 1 -s 4096 -n 200 >"$work/rc.srv.out" 2>&1 &
    srv=$!
    sleep 0.5
    timeout 60 "$run" --daemon "$sock2" -- ibv_rc_pingpong -d uroce0 -g 1 -s 4096 -n 200 127.0.0.1 >"$work/rc.cli.out" 2>&1
    crc=$?
    wait $srv; src=$?
    [ $src = 0 ] && [ $crc = 0 ] ||
      { cat "$work/rc.srv.out" "$work/rc.cli.out" "$work/second.log"; fail "ibv_rc_pingpong across two daemons: server $src, client $crc"; }
    grep -qE "^1638400 bytes in [0-9.]+ seconds" "$work/rc.cli.out" || { cat "$work/rc.cli.out"; fail "no bytes line (two daemons)"; }
    grep -q "remote address: .*GID ::ffff:10.0.0.1" "$work/rc.cli.out" || { cat "$work/rc.cli.out"; fail "the client's peer is not the first daemon's GID"; }
    echo "ok: ibv_rc_pingpong across two daemons: $(grep usec/iter "$work/rc.cli.out")"
    stop_second
    stop ;;
  pingpong)
    # uroce-pingpong --daemon: both ends clients of one daemon (the QPs meet
    # in its engine), the messages checked (--chk), with polling and -e.
    ip link set lo up
    for args in "--dev net_null0" "--mac 02:00:00:00:00:01"; do
      "$pingpong" --daemon "$sock" $args >"$work/out" 2>&1
      [ $? = 2 ] || { cat "$work/out"; fail "uroce-pingpong --daemon $args: exit is not 2"; }
    done
    timeout 10 "$pingpong" --daemon "$work/none.sock" -p 18999 >"$work/out" 2>&1
    [ $? = 1 ] && grep -q "cannot connect to uroced" "$work/out" || { cat "$work/out"; fail "a missing daemon: no message"; }
    start_default
    for s in "-s 64 -n 500" "-s 4096 -n 200 -e" "-s 65536 -n 50" "-s 4096 -n 400 --srq -q 4" "-s 1024 -n 300 --uc" \
             "-s 1024 -n 300 --ud"; do
      timeout 60 "$pingpong" --daemon "$sock" -g 1 --chk $s >"$work/pp.srv.out" 2>&1 &
      srv=$!
      sleep 0.3
      timeout 60 "$pingpong" --daemon "$sock" -g 1 --chk $s 127.0.0.1 >"$work/pp.cli.out" 2>&1
      crc=$?
      wait $srv; src=$?
      [ $src = 0 ] && [ $crc = 0 ] ||
        { cat "$work/pp.srv.out" "$work/pp.cli.out"; fail "uroce-pingpong --daemon $s: server $src, client $crc"; }
      set -- $s
      for f in "$work/pp.srv.out" "$work/pp.cli.out"; do
        grep -qE "^$((2 * $2 * $4)) bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$" "$f" || { cat "$f"; fail "no bytes line in $f"; }
        grep -q "GID ::ffff:10.0.0.1" "$f" || { cat "$f"; fail "$f: the local GID is not the daemon's"; }
      done
      echo "ok: uroce-pingpong --daemon $s: $(grep usec/iter "$work/pp.cli.out")"
    done
    stop
    # Across two daemons, RC, UC and UD: the modify to RTR (UD: the address
    # handle) is retried while the client's daemon resolves the server's MAC.
    start_linked
    for mode in "" --uc --ud; do
      timeout 60 "$pingpong" --daemon "$sock" -g 1 --chk -s 1024 -n 200 $mode >"$work/pp.srv.out" 2>&1 &
      srv=$!
      sleep 0.3
      timeout 60 "$pingpong" --daemon "$sock2" -g 1 --chk -s 1024 -n 200 $mode 127.0.0.1 >"$work/pp.cli.out" 2>&1
      crc=$?
      wait $srv; src=$?
      [ $src = 0 ] && [ $crc = 0 ] || { cat "$work/pp.srv.out" "$work/pp.cli.out" "$work/second.log";
        fail "uroce-pingpong $mode across two daemons: server $src, client $crc"; }
      grep -q "GID ::ffff:10.0.0.2" "$work/pp.cli.out" || { cat "$work/pp.cli.out"; fail "the client's GID is not the second daemon's"; }
      grep -qE "^409600 bytes in " "$work/pp.cli.out" || { cat "$work/pp.cli.out"; fail "no bytes line (two daemons $mode)"; }
      echo "ok: uroce-pingpong ${mode:-(RC)} across two daemons: $(grep usec/iter "$work/pp.cli.out")"
    done
    stop_second
    stop ;;
  telemetry)
    # uroced's commands in DPDK's telemetry, through Debian's script
    # (package dpdk-dev), which reads commands from stdin when it is not a
    # terminal and prints one JSON line per command.
    command -v dpdk-telemetry.py >/dev/null || { echo "SKIP: dpdk-telemetry.py not installed (package dpdk-dev)"; exit 77; }
    prefix=uroced-test-$$
    start --dev net_ring0 --ip 10.0.0.1 --mac 02:00:00:00:00:31 --mtu 4200 --vlan 7 --pcp 2 --socket "$sock" \
      --eal "--no-huge -m 512" --file-prefix "$prefix"
    # Not under timeout: $held is the client itself, killed at the end
    # (its second client dies with it).
    "$peer" "$sock" hold >"$work/hold.out" 2>&1 &
    held=$!
    for _ in $(seq 300); do grep -q "^hold:" "$work/hold.out" && break; kill -0 $held 2>/dev/null || break; sleep 0.1; done
    read -r _ pid_a pid_b < <(grep "^hold:" "$work/hold.out") || { cat "$work/hold.out"; fail "the pair did not connect"; }
    query() {  # COMMAND...: their answers, one JSON line each, into $work/tel.out
      printf '%s\n' "$@" | timeout 20 dpdk-telemetry.py -f "$prefix" >"$work/tel.out" 2>&1 ||
        { cat "$work/tel.out"; fail "dpdk-telemetry.py -f $prefix failed"; }
    }
    query /uroce/ports /uroce/clients /uroce/qps /uroce/counters /uroce/cc "/uroce/clients,1" "/uroce/qps,2"
    python3 - "$work/tel.out" "$pid_a" "$pid_b" <<'PY' || { cat "$work/tel.out"; fail "telemetry's answers with two clients"; }
import json, sys
# In the order asked; an answer's key is the command without its parameter.
port, c, q, counters, cc, one, q2 = [next(iter(json.loads(l).values())) for l in open(sys.argv[1]) if l.startswith("{")]
pids = {int(sys.argv[2]), int(sys.argv[3])}
assert port["mac"] == "02:00:00:00:00:31" and port["mtu"] == 4200, port
assert port["vlan"] == 7 and port["pcp"] == 2, port
assert "10.0.0.1" in port["gids"] and port["link_state"] == "up", port
assert set(c["pid"]) == pids and len(c["id"]) == 2, c
assert all(n == 1 for k in ("pds", "cqs", "qps", "mrs") for n in c[k]), c
assert all(b > 0 for b in c["mr_bytes"]), c
assert sorted(q["client"]) == sorted(c["id"]), q
assert all(t == "RC" for t in q["type"]) and all(s == "RTS" for s in q["state"]), q
assert counters["sent_pkts"] > 0 and counters["rcvd_pkts"] > 0, counters
assert cc["algorithm"].startswith("none") and sorted(cc["qpn"]) == sorted(q["qpn"]), cc
assert one["id"] == 1 and one["pid"] in pids and one["qps"] == 1, one
assert q2["client"] == [2] and q2["qpn"][0] in q["qpn"], q2
PY
    # The second client killed: gone from the tables once the daemon has
    # seen its socket close.
    kill -9 "$pid_b"
    for _ in $(seq 50); do grep -q "(pid $pid_b) disconnected" "$log" && break; sleep 0.1; done
    query /uroce/clients /uroce/qps
    python3 - "$work/tel.out" "$pid_a" <<'PY' || { cat "$work/tel.out"; fail "telemetry after a client was killed"; }
import json, sys
c, q = [next(iter(json.loads(l).values())) for l in open(sys.argv[1]) if l.startswith("{")]
assert c["pid"] == [int(sys.argv[2])], c
assert q["client"] == c["id"] and len(q["qpn"]) == 1, q
PY
    kill -9 "$held"; wait "$held" 2>/dev/null; held=
    stop ;;
  *) echo "unknown case $case_"; exit 2 ;;
esac
echo "OK: $case_"
