#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Unmodified Debian verbs programs on uroce through uroce-run, over a veth
# pair between two private network namespaces (net_af_packet on each end;
# RoCE addresses 10.0.0.1/.2), with their TCP exchange on a second veth
# pair (192.168.78.1 <-> .2). Needs root; exit 77 (skip) otherwise, or when
# the program a case runs is not installed. `user-view` runs the programs as
# an unprivileged user instead (nobody when started as root, else the
# caller) on net_null, and needs no network namespace.
#
# usage: uroce_run_test.sh CASE UROCE_RUN WORKDIR
#   CASE: usage | devinfo | pingpong | perftest | perftest-more | perftest-flags | ucx-view | ucx | user-view | rdmacm
#         | rdmacm-apps | perf-rdmacm
set -u

if [ "${1:-}" != --in-netns ]; then
  if [ "${1:-}" != usage ] && [ "${1:-}" != user-view ]; then
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespaces, af_packet)"; exit 77; }
    for t in ip unshare nsenter timeout; do
      command -v $t >/dev/null || { echo "SKIP: $t not found"; exit 77; }
    done
    exec timeout 280 unshare --net -- "$0" --in-netns "$@"
  fi
else
  shift
fi
case_=$1 run=$2 work=$3
mkdir -p "$work"
rm -f "$work"/*.out

HOLDER= SRV=
cleanup() {
  [ -n "$SRV" ] && kill -TERM "$SRV" 2>/dev/null
  [ -n "$HOLDER" ] && kill -9 "$HOLDER" 2>/dev/null
  wait 2>/dev/null
}
trap cleanup EXIT
trap 'exit 1' TERM INT

. "$(dirname "$0")/../common/netns_b.sh"

need() { command -v "$1" >/dev/null || { echo "SKIP: $1 not installed"; exit 77; }; }

setup_links() {
  start_namespace_b
  ip link add ra type veth peer name rb netns "$HOLDER" || fail "ip link add ra/rb"
  ip link add mga type veth peer name mgb netns "$HOLDER" || fail "ip link add mga/mgb"
  ip addr add 192.168.78.1/24 dev mga
  inb ip addr add 192.168.78.2/24 dev mgb
  ip link set ra up && ip link set mga up || fail "links up in A"
  inb ip link set rb up && inb ip link set mgb up || fail "links up in B"
}

case $case_ in
  usage)
    # Mistakes stop uroce-run with exit 2 and a message, before the program runs.
    for args in "-- true" "--dev x --ip 1.2.3 -- true" "--dev x -- true" "--ip 10.0.0.1 -- true" \
                "--dev 'a b' --ip 10.0.0.1 -- true" "--dev x --ip 10.0.0.1 --mac 1:2 -- true" \
                "--dev x --ip 10.0.0.1 --mtu 20 -- true" "--dev x --ip 10.0.0.1 --bogus -- true" \
                "--dev x --ip 10.0.0.1 --" "--config /nonexistent -- true" "--dev" \
                "--dev x --ip 10.0.0.1 --vlan 4095 -- true" "--dev x --ip 10.0.0.1 --vlan -1 -- true" \
                "--dev x --ip 10.0.0.1 --pcp 8 -- true" "--daemon /nonexistent --vlan 5 -- true"; do
      out=$(env -u UROCE_DEV -u UROCE_IP -u UROCE_CONFIG sh -c "\"$run\" $args" 2>&1 </dev/null)
      rc=$?
      [ $rc = 2 ] || fail "uroce-run $args: exit $rc, expected 2 ($out)"
      grep -q "^uroce-run: " <<<"$out" || fail "uroce-run $args: no message"
      grep -q "^usage: uroce-run" <<<"$out" || fail "uroce-run $args: no usage line"
    done
    # A good command line reaches the program, with the settings and the library path.
    out=$("$run" --dev net_af_packet0,iface=x --ip 10.0.0.1 --mac 02:00:00:00:00:01 --eal "--log-level=8" --no-port-check -- \
      sh -c 'echo "$UROCE_DEV|$UROCE_IP|$UROCE_MAC|$UROCE_EAL|$LD_LIBRARY_PATH"')
    IFS='|' read -r d i m e l <<<"$out"
    [ "$d|$i|$m|$e" = "net_af_packet0,iface=x|10.0.0.1|02:00:00:00:00:01|--log-level=8" ] || fail "settings: $out"
    [ -e "${l%%:*}/libibverbs.so.1" ] || fail "LD_LIBRARY_PATH does not start with the drop-in's directory: $l"
    out=$("$run" --dev x --ip 10.0.0.1 --no-kernel-view --no-port-check -- echo reached) || fail "--no-kernel-view: exit $?"
    [ "$out" = reached ] || fail "--no-kernel-view: the program did not run ($out)"
    "$run" --dev x --ip 10.0.0.1 --no-port-check -- /nonexistent/program 2>/dev/null
    [ $? = 127 ] || fail "a program that cannot start: exit is not 127"
    out=$("$run" --dev x --ip 10.0.0.1 --vlan 100 --pcp 3 --no-port-check -- sh -c 'echo "$UROCE_VLAN|$UROCE_PCP"') ||
      fail "--vlan --pcp: exit $?"
    [ "$out" = "100|3" ] || fail "--vlan 100 --pcp 3: the program got '$out'"
    # Several addresses: each one checked, and all reach the program.
    out=$("$run" --dev x --ip 10.0.0.1,fd00::1 --no-port-check -- sh -c 'echo "$UROCE_IP"') || fail "--ip A,B: exit $?"
    [ "$out" = "10.0.0.1,fd00::1" ] || fail "--ip A,B: the program got '$out'"
    for bad in "10.0.0.1,fd00::1::" "10.0.0.1,10.0.0.1" "10.0.0.1,"; do
      out=$("$run" --dev x --ip "$bad" -- true 2>&1)
      rc=$?
      [ $rc = 2 ] || fail "--ip $bad: exit $rc, expected 2 ($out)"
      grep -q "^uroce-run: --ip: address '" <<<"$out" || fail "--ip $bad: no message naming the address ($out)"
    done
    # A port that cannot open stops uroce-run with the reason (exit 1), and
    # the program never runs.
    out=$("$run" --dev net_af_packet0,iface=uroce-no-such-if --ip 10.0.0.1 -- sh -c 'echo reached' 2>&1)
    rc=$?
    [ $rc = 1 ] || fail "a port that cannot open: exit $rc, expected 1 ($out)"
    grep -q "^uroce-run: cannot open uroce0 (net_af_packet0,iface=uroce-no-such-if): " <<<"$out" ||
      fail "a port that cannot open: no message naming the device ($out)"
    grep -q "^reached$" <<<"$out" && fail "a port that cannot open: the program ran"
    out=$("$run" --dev net_null0 --ip 10.0.0.1 --eal "--log-level=1" -- sh -c 'echo reached' 2>&1) ||
      fail "a port that opens (net_null0): exit $? ($out)"
    [ "$out" = reached ] || fail "a port that opens: output '$out'"
    echo "ok: usage errors exit 2; a port that cannot open exits 1 first; settings and LD_LIBRARY_PATH reach the program" ;;

  devinfo)
    need ibv_devinfo
    need ibv_devices
    setup_links
    "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 -- ibv_devices >"$work/devices.out" 2>&1 || fail "ibv_devices failed"
    grep -qE "^[[:space:]]+uroce0[[:space:]]+[0-9a-f]{16}$" "$work/devices.out" || fail "ibv_devices does not list uroce0 with a GUID"
    grep -qE "uroce0[[:space:]]+0{16}$" "$work/devices.out" && fail "ibv_devices: uroce0's GUID is 0"
    timeout 60 "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 -- ibv_devinfo -v >"$work/devinfo.out" 2>&1 ||
      fail "ibv_devinfo -v failed"
    o=$work/devinfo.out
    grep -qE "^hca_id:\s+uroce0$" "$o" || fail "no hca_id uroce0"
    grep -qE "^\s+state:\s+PORT_ACTIVE \(4\)$" "$o" || fail "port not PORT_ACTIVE"
    grep -qE "^\s+link_layer:\s+Ethernet$" "$o" || fail "link layer not Ethernet"
    grep -qE "^\s+active_mtu:\s+1024 \(3\)$" "$o" || fail "active_mtu of a 1500-byte link is not 1024"
    grep -qE "^\s+board_id:\s+uroce$" "$o" || fail "board_id not answered"
    grep -qE "^\s+GID\[  0\]:\s+fe80::[0-9a-f:]+, RoCE v2$" "$o" || fail "GID 0 is not the link-local RoCE v2 GID"
    grep -qE "^\s+GID\[  1\]:\s+::ffff:10\.0\.0\.1, RoCE v2$" "$o" || fail "GID 1 is not ::ffff:10.0.0.1 (RoCE v2)"
    # The node GUID is the EUI-64 of the port's MAC.
    mac=$(ip -o link show ra | sed -E 's/.*link\/ether ([0-9a-f:]+).*/\1/')
    IFS=: read -r a b c d e f <<<"$mac"
    guid=$(printf "%02x%s:%sff:fe%s:%s%s" $((0x$a ^ 2)) "$b" "$c" "$d" "$e" "$f")
    grep -qE "^\s+node_guid:\s+$guid$" "$o" || fail "node_guid is not $guid (EUI-64 of $mac)"
    # Two addresses: an IPv6 GID 2 after the IPv4 one.
    timeout 60 "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1,fd00::1 -- ibv_devinfo -v >"$work/devinfo2.out" 2>&1 ||
      fail "ibv_devinfo -v with two addresses failed"
    grep -qE "^\s+GID\[  1\]:\s+::ffff:10\.0\.0\.1, RoCE v2$" "$work/devinfo2.out" || fail "two addresses: GID 1 is not ::ffff:10.0.0.1"
    grep -qE "^\s+GID\[  2\]:\s+fd00::1, RoCE v2$" "$work/devinfo2.out" || fail "two addresses: GID 2 is not fd00::1 (RoCE v2)"
    # Two devices from a configuration file, each on its own port.
    ip link add ra2 type veth peer name rb2 netns "$HOLDER" && ip link set ra2 up || fail "ip link add ra2/rb2"
    printf '[device uroce0]\ndev = net_af_packet0,iface=ra\nip = 10.0.0.1\n[device uroce1]\ndev = net_af_packet1,iface=ra2\nip = 10.0.1.1\n' \
      >"$work/two.ini"
    timeout 60 "$run" --config "$work/two.ini" -- sh -c 'ibv_devices; ibv_devinfo -v -d uroce1' >"$work/two.out" 2>&1 ||
      fail "two devices: ibv_devices/ibv_devinfo failed ($(tail -3 "$work/two.out"))"
    for d in uroce0 uroce1; do
      grep -qE "^[[:space:]]+$d[[:space:]]+[0-9a-f]{16}$" "$work/two.out" || fail "two devices: ibv_devices does not list $d"
    done
    grep -qE "^hca_id:\s+uroce1$" "$work/two.out" || fail "two devices: ibv_devinfo -d uroce1 shows no uroce1"
    grep -qE "^\s+GID\[  1\]:\s+::ffff:10\.0\.1\.1, RoCE v2$" "$work/two.out" || fail "two devices: uroce1's GID 1 is not 10.0.1.1"
    grep -qE "^\s+state:\s+PORT_ACTIVE \(4\)$" "$work/two.out" || fail "two devices: uroce1's port is not active"
    echo "ok: ibv_devices lists uroce0; ibv_devinfo -v shows PORT_ACTIVE, Ethernet, RoCE v2 GIDs, GUID $guid; an IPv6 GID 2; uroce1 from a file" ;;

  pingpong)
    need ibv_rc_pingpong
    setup_links
    for run_ in "64 1000" "4096 500" "65536 100"; do
      set -- $run_
      timeout 60 "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 -- \
        ibv_rc_pingpong -d uroce0 -g 1 -c -s "$1" -n "$2" >"$work/rc$1.srv.out" 2>&1 &
      SRV=$!
      sleep 0.5
      inb timeout 60 "$run" --dev net_af_packet0,iface=rb --ip 10.0.0.2 -- \
        ibv_rc_pingpong -d uroce0 -g 1 -c -s "$1" -n "$2" 192.168.78.1 >"$work/rc$1.cli.out" 2>&1
      CRC=$?
      wait "$SRV"; SRC=$?; SRV=
      [ $SRC = 0 ] || fail "ibv_rc_pingpong -s $1 server exited $SRC"
      [ $CRC = 0 ] || fail "ibv_rc_pingpong -s $1 client exited $CRC"
      for f in "$work/rc$1.srv.out" "$work/rc$1.cli.out"; do
        grep -qE "^$((2 * $1 * $2)) bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$" "$f" || fail "no bytes line in $f"
        grep -qE "^$2 iters in [0-9.]+ seconds = [0-9.]+ usec/iter$" "$f" || fail "no iters line in $f"
      done
      grep -q "GID ::ffff:10.0.0.1" "$work/rc$1.srv.out" || fail "server's GID is not ::ffff:10.0.0.1"
      echo "ok: ibv_rc_pingpong -s $1 -n $2: $(grep usec/iter "$work/rc$1.cli.out")"
    done
    # Over IPv6: each side has an IPv4 and an IPv6 address, -g 2 picks the
    # IPv6 one (neighbour discovery instead of ARP).
    timeout 60 "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1,fd00::1 -- \
      ibv_rc_pingpong -d uroce0 -g 2 -c -s 4096 -n 200 >"$work/rc6.srv.out" 2>&1 &
    SRV=$!
    sleep 0.5
    inb timeout 60 "$run" --dev net_af_packet0,iface=rb --ip 10.0.0.2,fd00::2 -- \
      ibv_rc_pingpong -d uroce0 -g 2 -c -s 4096 -n 200 192.168.78.1 >"$work/rc6.cli.out" 2>&1
    CRC=$?
    wait "$SRV"; SRC=$?; SRV=
    [ $SRC = 0 ] || fail "ibv_rc_pingpong -g 2 (IPv6) server exited $SRC"
    [ $CRC = 0 ] || fail "ibv_rc_pingpong -g 2 (IPv6) client exited $CRC"
    grep -q "GID fd00::1$" "$work/rc6.srv.out" || fail "IPv6 run: the server's GID is not fd00::1"
    grep -q "remote address: .*GID fd00::1$" "$work/rc6.cli.out" || fail "IPv6 run: the client's peer GID is not fd00::1"
    grep -qE "^200 iters in [0-9.]+ seconds" "$work/rc6.cli.out" || fail "IPv6 run: no iters line"
    echo "ok: ibv_rc_pingpong -g 2 over IPv6 (--ip A,B): $(grep usec/iter "$work/rc6.cli.out")" 
    # UC (no ACKs), UD (address handles, the 40-byte GRH area) and SRQ (16
    # RC QPs on one shared receive queue), where installed; with -e they
    # sleep on a completion channel (ibv_req_notify_cq, ibv_get_cq_event).
    # ibv_rc_pingpong -N posts its SENDs through ibv_create_qp_ex and the
    # ibv_wr_* API (perftest never does on uroce: docs/verbs-abi.md). -c:
    # each side checks the bytes it received (the tool exits 1 otherwise).
    for cmd in ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong \
               "ibv_rc_pingpong -e" "ibv_uc_pingpong -e" "ibv_ud_pingpong -e" "ibv_srq_pingpong -e" \
               "ibv_rc_pingpong -N" "ibv_rc_pingpong -N -e"; do
      t=${cmd%% *}
      command -v $t >/dev/null || { echo "skip: $t not installed"; continue; }
      name=$(echo "$cmd" | tr -c 'a-zA-Z0-9\n' '_')
      timeout 60 "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 -- $cmd -d uroce0 -g 1 -c -n 200 \
        >"$work/$name.srv.out" 2>&1 &
      SRV=$!
      sleep 0.5
      inb timeout 60 "$run" --dev net_af_packet0,iface=rb --ip 10.0.0.2 -- $cmd -d uroce0 -g 1 -c -n 200 192.168.78.1 \
        >"$work/$name.cli.out" 2>&1
      CRC=$?
      wait "$SRV"; SRC=$?; SRV=
      [ $SRC = 0 ] || fail "$cmd server exited $SRC"
      [ $CRC = 0 ] || fail "$cmd client exited $CRC"
      for f in "$work/$name.srv.out" "$work/$name.cli.out"; do
        grep -qE "^200 iters in [0-9.]+ seconds = [0-9.]+ usec/iter$" "$f" || fail "no iters line in $f"
      done
      echo "ok: $cmd -n 200: $(grep usec/iter "$work/$name.cli.out")"
    done ;;

  perftest)
    need ib_write_bw
    need ib_send_lat
    setup_links
    # perftest's own TCP exchange; -F: no CPU-frequency check. Each run:
    # the tool and its flags, then the message size and iteration count its
    # result row starts with (UD messages are one packet: the MTU, 1024).
    # -e: completions by event (a completion channel) instead of polling.
    for spec in "ib_write_bw -n 200|65536 200" "ib_send_lat -n 200|2 200" "ib_read_bw -n 200|65536 200" \
                "ib_atomic_bw -n 200|8 200" "ib_send_bw --use-srq -n 200|65536 200" \
                "ib_write_bw -q 4 -n 200|65536 800" "ib_send_bw -c UD -n 200|1024 200" \
                "ib_send_bw -e -n 200|65536 200" "ib_send_lat -e -n 200|2 200"; do
      cmd=${spec%%|*} want=${spec#*|}
      t=${cmd%% *}
      command -v $t >/dev/null || { echo "skip: $t not installed"; continue; }
      name=$(echo "$cmd" | tr -c 'a-zA-Z0-9\n' '_')
      timeout 90 "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 -- \
        $cmd -d uroce0 -x 1 -F >"$work/$name.srv.out" 2>&1 &
      SRV=$!
      sleep 0.5
      inb timeout 90 "$run" --dev net_af_packet0,iface=rb --ip 10.0.0.2 -- \
        $cmd -d uroce0 -x 1 -F 192.168.78.1 >"$work/$name.cli.out" 2>&1
      CRC=$?
      wait "$SRV"; SRC=$?; SRV=
      [ $SRC = 0 ] || fail "$cmd: server exited $SRC"
      [ $CRC = 0 ] || fail "$cmd: client exited $CRC"
      set -- $want
      row="^ $1[[:space:]]+$2[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+"
      grep -qE "$row" "$work/$name.cli.out" || fail "$cmd: no result row '$want ...' on the client"
      grep -q "Link type       : Ethernet" "$work/$name.cli.out" || fail "$cmd: link type is not Ethernet"
      echo "ok: $cmd: $(grep -E "$row" "$work/$name.cli.out" | tr -s ' \t' ' ')"
    done ;;

  perftest-more | perftest-flags)
    # perftest-more: the rest of perftest's tests: the latency tests not
    # run above, both atomics, sizes that are not a multiple of the path
    # MTU, -a (every size 2 B .. 8 MiB: the last row is checked), and -m 4096
    # on a jumbo link (veth MTU 9000, uroce-run --mtu 9000).
    # perftest-flags: the same flags across the other tests: -e on READ and
    # atomics (perftest refuses it on WRITE), -q 4 (the row counts every
    # QP's iterations), -a, -m 4096 and odd sizes on READ and SEND, both
    # atomics in the latency test.
    # Each spec: the tool and flags | the size and iterations its last
    # result row starts with | the Ethernet MTU of both ends.
    need ib_write_lat
    setup_links
    if [ "$case_" = perftest-more ]; then
      specs=("ib_write_lat -n 200|2 200|1500" "ib_read_lat -n 200|2 200|1500"
             "ib_atomic_lat -n 200|8 200|1500" "ib_atomic_bw -A CMP_AND_SWAP -n 200|8 200|1500"
             "ib_atomic_bw -A FETCH_AND_ADD -n 200|8 200|1500"
             "ib_write_bw -s 3000 -n 200|3000 200|1500" "ib_read_bw -s 1500 -n 200|1500 200|1500"
             "ib_send_bw -s 5000 -n 200|5000 200|1500" "ib_write_lat -s 1100 -n 200|1100 200|1500"
             "ib_write_bw -a -n 20|8388608 20|1500"
             "ib_write_bw -m 4096 -s 10000 -n 200|10000 200|9000" "ib_send_lat -m 4096 -s 6000 -n 200|6000 200|9000")
    else
      specs=("ib_read_bw -e -n 200|65536 200|1500" "ib_read_lat -e -n 200|2 200|1500"
             "ib_atomic_bw -e -n 200|8 200|1500" "ib_atomic_lat -e -n 200|8 200|1500"
             "ib_atomic_lat -A CMP_AND_SWAP -n 200|8 200|1500"
             "ib_read_bw -q 4 -n 200|65536 800|1500" "ib_send_bw -q 4 -n 200|65536 800|1500"
             "ib_atomic_bw -q 4 -n 200|8 800|1500"
             "ib_read_lat -s 1500 -n 200|1500 200|1500" "ib_send_lat -s 3000 -n 200|3000 200|1500"
             "ib_read_bw -a -n 20|8388608 20|1500" "ib_send_bw -a -n 20|8388608 20|1500"
             "ib_read_bw -m 4096 -s 10000 -n 200|10000 200|9000" "ib_send_bw -m 4096 -s 10000 -n 200|10000 200|9000"
             "ib_write_lat -m 4096 -s 10000 -n 200|10000 200|9000")
    fi
    for spec in "${specs[@]}"; do
      cmd=${spec%%|*} rest=${spec#*|}
      want=${rest%|*} mtu=${rest##*|}
      t=${cmd%% *}
      command -v $t >/dev/null || { echo "skip: $t not installed"; continue; }
      ip link set ra mtu "$mtu" && inb ip link set rb mtu "$mtu" || fail "veth mtu $mtu"
      name=$(echo "$cmd" | tr -c 'a-zA-Z0-9\n' '_')
      timeout 90 "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 --mtu "$mtu" -- \
        $cmd -d uroce0 -x 1 -F >"$work/$name.srv.out" 2>&1 &
      SRV=$!
      sleep 0.5
      inb timeout 90 "$run" --dev net_af_packet0,iface=rb --ip 10.0.0.2 --mtu "$mtu" -- \
        $cmd -d uroce0 -x 1 -F 192.168.78.1 >"$work/$name.cli.out" 2>&1
      CRC=$?
      wait "$SRV"; SRC=$?; SRV=
      [ $SRC = 0 ] || fail "$cmd: server exited $SRC ($(tail -3 "$work/$name.srv.out"))"
      [ $CRC = 0 ] || fail "$cmd: client exited $CRC ($(tail -3 "$work/$name.cli.out"))"
      set -- $want
      row="^ $1[[:space:]]+$2[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+"
      grep -qE "$row" "$work/$name.cli.out" || fail "$cmd: no result row '$want ...' on the client"
      case $cmd in
        *"-m 4096"*) grep -q "Mtu             : 4096\[B\]" "$work/$name.cli.out" || fail "$cmd: the path MTU is not 4096" ;;
      esac
      echo "ok: $cmd: $(grep -E "$row" "$work/$name.cli.out" | tr -s ' \t' ' ')"
    done ;;

  ucx-view)
    # uroce-run's private mount namespace: the files UCX looks for, seen by
    # the program only, and UCX opening uroce0 because of them.
    need ucx_info
    setup_links
    rb_view='test -c /dev/infiniband/uroce0 -a -r /dev/infiniband/uroce0 -a -w /dev/infiniband/uroce0 && echo node;
      cd /sys/class/infiniband/uroce0/ports/1/gid_attrs && cat types/0 types/1 ndevs/0 ndevs/1'
    out=$("$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 -- sh -c "$rb_view" 2>&1)
    [ "$(echo $out)" = "node RoCE v2 RoCE v2 ra ra" ] || fail "the program's view is not node + 2 x RoCE v2 + ndevs ra: $out"
    [ -e /dev/infiniband/uroce0 ] && fail "/dev/infiniband/uroce0 leaked out of the program's mount namespace"
    [ -e /sys/class/infiniband/uroce0 ] && fail "/sys/class/infiniband/uroce0 leaked out of the program's mount namespace"
    "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 --no-kernel-view -- test -e /dev/infiniband/uroce0 &&
      fail "--no-kernel-view: /dev/infiniband/uroce0 exists"
    for view in "" --no-kernel-view; do
      UCX_LOG_LEVEL=debug timeout 60 "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 $view -- ucx_info -d \
        >"$work/ucx_info$view.out" 2>&1 || fail "ucx_info -d $view failed"
    done
    o=$work/ucx_info.out
    grep -q "uroce0: md open by 'uct_ib_verbs_md_ops' is successful" "$o" || fail "UCX did not open uroce0"
    grep -q "^# Memory domain: uroce0$" "$o" || fail "ucx_info -d lists no memory domain uroce0"
    # GID 1 (the IPv4 address) is RoCE v2: UCX's choice among the GIDs it read as v2.
    grep -q "uroce0:1 using gid_index 1$" "$o" || fail "UCX did not pick GID 1"
    grep -q "RoCE LAG level on uroce0:1 (ra) is 1" "$o" || fail "UCX did not find uroce0's netdev ra"
    grep -q "^# Memory domain: uroce0$" "$work/ucx_info--no-kernel-view.out" &&
      fail "--no-kernel-view: UCX still lists uroce0 (the view is not what it needs)"
    for tl in rc_verbs ud_verbs; do
      grep -A1 "Transport: $tl$" "$o" | grep -q "Device: uroce0:1$" || fail "ucx_info -d lists no $tl on uroce0:1"
    done
    echo "ok: /dev/infiniband/uroce0 and RoCE v2 gid_attrs in the program's namespace only; UCX opens uroce0, GID 1" ;;

  ucx)
    # ucx_perftest between two uroce-run processes: UCT tests on one
    # transport (-x), UCP tests with UCX_TLS; the client's Final row counts
    # the iterations. uroce's UD completions do not say IPv4 or IPv6 in
    # their SL, as mlx5's do, so ud_verbs' GID check stays off.
    need ucx_perftest
    need ss
    setup_links
    UCX_LOG_LEVEL=debug timeout 60 "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 -- ucx_info -d \
      >"$work/ucx_info.out" 2>&1 || fail "ucx_info -d failed"
    grep -A1 "Transport: rc_verbs$" "$work/ucx_info.out" | grep -q "Device: uroce0:1$" ||
      fail "ucx_info -d lists no rc_verbs on uroce0:1 (UCX creates a completion channel for every interface)"
    export UCX_UD_VERBS_ETH_DGID_CHECK=n UCX_NET_DEVICES=uroce0:1
    for spec in "-t put_bw -x rc_verbs -n 1000|1000" "-t put_bw -x rc_verbs -D zcopy -s 65536 -n 500|500" \
                "-t get -x rc_verbs -D zcopy -s 65536 -n 500|500" "-t am_lat -x rc_verbs -n 1000|1000" \
                "-t fadd -x rc_verbs -n 1000|1000" "-t am_lat -x ud_verbs -n 1000|1000" \
                "-t am_bw -x ud_verbs -n 1000|1000" \
                "UCX_TLS=rc_verbs,ud_verbs -t tag_lat -n 1000|1000" \
                "UCX_TLS=rc_verbs,ud_verbs -t tag_bw -s 65536 -n 500|500" \
                "UCX_TLS=rc_verbs,ud_verbs -t ucp_put_bw -s 65536 -n 500|500" \
                "UCX_TLS=rc_verbs,ud_verbs -t ucp_get -s 65536 -n 500|500" \
                "UCX_TLS=ud_verbs -t tag_lat -n 1000|1000" "UCX_TLS=ud_verbs -t tag_bw -s 65536 -n 200|200" \
                "UCX_TLS=ud_verbs -t ucp_put_bw -s 65536 -n 200|200" "UCX_TLS=ud_verbs -t ucp_get -s 65536 -n 200|200"; do
      args=${spec%%|*} iters=${spec#*|}
      tls=
      case $args in UCX_TLS=*) tls=${args%% *}; args=${args#* } ;; esac
      name=$(echo "$tls $args" | tr -c 'a-zA-Z0-9\n' '_')
      env $tls timeout 90 "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 -- \
        ucx_perftest $args -d uroce0:1 >"$work/$name.srv.out" 2>&1 &
      SRV=$!
      # The server's "Waiting for connection" sits in its stdio buffer until
      # it exits: its listening socket (ucx_perftest's port 13337) says it.
      for _ in $(seq 200); do
        [ -n "$(ss -Hltn 'sport = :13337')" ] && break
        kill -0 "$SRV" 2>/dev/null || break
        sleep 0.05
      done
      inb env $tls timeout 90 "$run" --dev net_af_packet0,iface=rb --ip 10.0.0.2 -- \
        ucx_perftest $args -d uroce0:1 192.168.78.1 >"$work/$name.cli.out" 2>&1
      CRC=$?
      wait "$SRV"; SRC=$?; SRV=
      [ $SRC = 0 ] || fail "ucx_perftest $tls $args: server exited $SRC"
      [ $CRC = 0 ] || fail "ucx_perftest $tls $args: client exited $CRC"
      row="^Final:[[:space:]]+$iters[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+"
      grep -qE "$row" "$work/$name.cli.out" || fail "ucx_perftest $tls $args: no Final row of $iters iterations"
      echo "ok: ucx_perftest $tls $args: $(grep -E "$row" "$work/$name.cli.out" | tr -s ' ' ' ')"
    done ;;

  user-view)
    # Not root: uroce-run builds the same view inside a user namespace that
    # maps the user's own ids, where the kernel allows one. The program
    # keeps its uid; /dev/infiniband/uroce0 links to /dev/null.
    as_user=
    if [ "$(id -u)" = 0 ]; then
      command -v setpriv >/dev/null || { echo "SKIP: setpriv not found (util-linux)"; exit 77; }
      as_user="setpriv --reuid=65534 --regid=65534 --clear-groups"
    fi
    uid=$($as_user id -u)
    view='id -u; test -c /dev/infiniband/uroce0 -a -r /dev/infiniband/uroce0 -a -w /dev/infiniband/uroce0 && echo node;
      cat /sys/class/infiniband/uroce0/ports/1/gid_attrs/types/0 /sys/class/infiniband/uroce0/ports/1/gid_attrs/types/1;
      echo x >/dev/null && echo null-writable; test -d /dev/shm -a -w /dev/shm && echo shm'
    out=$(timeout 30 $as_user "$run" --dev net_null0 --ip 10.0.0.1 -- sh -c "$view" 2>"$work/user-view.err")
    if grep -q "^uroce-run: no /dev/infiniband view for UCX: " "$work/user-view.err"; then
      echo "SKIP: the kernel gives no unprivileged user namespace: $(grep '^uroce-run: no /dev' "$work/user-view.err")"
      exit 77
    fi
    [ "$(echo $out)" = "$uid node RoCE v2 RoCE v2 null-writable shm" ] ||
      fail "as uid $uid, the program's view is not its uid + node + 2 x RoCE v2 + a usable /dev: '$out' ($(cat "$work/user-view.err"))"
    [ -e /dev/infiniband/uroce0 ] && fail "/dev/infiniband/uroce0 leaked out of the program's namespaces"
    timeout 60 $as_user "$run" --dev net_null0 --ip 10.0.0.1 -- ibv_devinfo -v >"$work/user-devinfo.out" 2>&1 ||
      fail "ibv_devinfo -v as uid $uid failed"
    grep -qE "^\s+GID\[  1\]:\s+::ffff:10\.0\.0\.1, RoCE v2$" "$work/user-devinfo.out" || fail "ibv_devinfo -v as uid $uid: no GID 1"
    if command -v ucx_info >/dev/null; then
      UCX_LOG_LEVEL=debug timeout 60 $as_user "$run" --dev net_null0 --ip 10.0.0.1 -- ucx_info -d \
        >"$work/user-ucx_info.out" 2>&1 || fail "ucx_info -d as uid $uid failed"
      grep -q "uroce0:1 using gid_index 1$" "$work/user-ucx_info.out" || fail "as uid $uid, UCX did not open uroce0 (GID 1)"
      grep -A1 "Transport: rc_verbs$" "$work/user-ucx_info.out" | grep -q "Device: uroce0:1$" ||
        fail "as uid $uid, ucx_info -d lists no rc_verbs on uroce0:1"
    fi
    # Where the kernel refuses the user namespace (here: a namespace whose
    # limit its one child already uses), one line says so and the program
    # still runs, without the view.
    if unshare -Ur true 2>/dev/null; then
      out=$(timeout 30 unshare -Ur sh -c "echo 1 > /proc/sys/user/max_user_namespaces && exec unshare --user \"\$0\" \"\$@\"" \
        "$run" --dev net_null0 --ip 10.0.0.1 -- sh -c 'test -e /dev/infiniband/uroce0 && echo view || echo ran' \
        2>"$work/user-refused.err")
      [ "$out" = ran ] || fail "with user namespaces refused, the program did not run without the view: '$out'"
      [ "$(grep -c . "$work/user-refused.err")" = 1 ] &&
        grep -q "^uroce-run: no /dev/infiniband view for UCX: the kernel gives this user no user namespace (.*); running as with --no-kernel-view$" \
          "$work/user-refused.err" || fail "with user namespaces refused, stderr is not the one line: $(cat "$work/user-refused.err")"
      echo "ok: user namespaces refused: $(cat "$work/user-refused.err")"
    fi
    echo "ok: as uid $uid, the program sees /dev/infiniband/uroce0 and RoCE v2 gid_attrs; UCX opens uroce0" ;;

  rdmacm)
    # Waits until PROGRAM (started through uroce-run in this namespace)
    # has its port open, then a moment for it to reach rdma_listen: an
    # rdma_cm server opens no TCP socket to wait for.
    wait_port_open() {
      for _ in $(seq 200); do
        ss -0 -p 2>/dev/null | grep -q "((\"$1\"" && { sleep 0.3; return; }
        sleep 0.05
      done
    }
    # rdma_cm programs (rdmacm-utils) on the drop-in librdmacm: the
    # connection is set up by CM MADs on QP1 between the two processes, at
    # the RoCE addresses; no TCP exchange.
    need rping
    setup_links
    timeout 60 "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 -- \
      rping -s -a 10.0.0.1 -p 7174 -v -C 100 >"$work/rping.srv.out" 2>&1 &
    SRV=$!
    sleep 1
    inb timeout 60 "$run" --dev net_af_packet0,iface=rb --ip 10.0.0.2 -- \
      rping -c -a 10.0.0.1 -p 7174 -v -C 100 >"$work/rping.cli.out" 2>&1
    CRC=$?
    wait "$SRV"; SRC=$?; SRV=
    [ $CRC = 0 ] || fail "rping client exited $CRC"
    [ $SRC = 0 ] || fail "rping server exited $SRC"
    n=$(grep -cE "^ping data: rdma-ping-[0-9]+: " "$work/rping.cli.out")
    [ "$n" = 100 ] || fail "rping client: $n verified pings of 100"
    n=$(grep -cE "^server ping data: rdma-ping-[0-9]+: " "$work/rping.srv.out")
    [ "$n" = 100 ] || fail "rping server: $n pings of 100"
    echo "ok: rping -v -C 100 between two uroce-run processes (connected by the CM)"
    # A server and a client program, each in both roles of a pair: ARGS
    # of the server, of the client, and a line each must print.
    cm_pair() {
      local name=$1 srv=$2 cli=$3 srv_ok=$4 cli_ok=$5 try
      for try in 1 2; do
        timeout -k 5 60 "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 -- $srv >"$work/$name.srv.out" 2>&1 &
        SRV=$!
        wait_port_open "${srv%% *}"
        inb timeout -k 5 60 "$run" --dev net_af_packet0,iface=rb --ip 10.0.0.2 -- $cli >"$work/$name.cli.out" 2>&1
        CRC=$?
        # perftest -R: after the two sides' sync on the control connection
        # the server starts listening for the test connections while the
        # client already connects, and a REQ that arrives first is
        # rejected (reason 8, as Linux does): perftest's own race, tried
        # once more.
        if [ $CRC != 0 ] && [ $try = 1 ] && grep -q "RDMA_CM_EVENT_REJECTED; error: 8" "$work/$name.cli.out"; then
          echo "note: $name: perftest's connect race (REJ 8 before its server listened); again"
          kill "$SRV" 2>/dev/null; wait "$SRV"; SRV=
          continue
        fi
        break
      done
      wait "$SRV"; SRC=$?; SRV=
      [ $CRC = 0 ] || fail "$name: client exited $CRC"
      [ $SRC = 0 ] || fail "$name: server exited $SRC"
      grep -qE "$srv_ok" "$work/$name.srv.out" || fail "$name: the server did not print '$srv_ok'"
      grep -qE "$cli_ok" "$work/$name.cli.out" || fail "$name: the client did not print '$cli_ok'"
      echo "ok: $name"
    }
    cm_pair ucmatose "ucmatose -b 10.0.0.1 -C 20 -S 4000" "ucmatose -s 10.0.0.1 -C 20 -S 4000" \
      "^return status 0" "^return status 0"
    cm_pair ucmatose-c4 "ucmatose -b 10.0.0.1 -c 4" "ucmatose -s 10.0.0.1 -c 4" "^return status 0" "^return status 0"
    cm_pair rdma_server-client "rdma_server -s 10.0.0.1 -p 7471" "rdma_client -s 10.0.0.1 -p 7471" \
      "^rdma_server: end 0" "^rdma_client: end 0"
    # udaddy: UD QPs in rdma_cm's UDP port space, found by service ID
    # resolution (SIDR REQ and REP): ten messages each way, the replies
    # addressed from the received work completions. (Its port is 7174.)
    cm_pair udaddy "udaddy -b 10.0.0.1" "udaddy -s 10.0.0.1" "^return status 0" "^return status 0"
    # A QP the program moves itself (rdma_init_qp_attr; rdma_establish
    # after CONNECT_RESPONSE), against itself and against ucmatose in both
    # roles: ucmatose's ten messages each way.
    mkdir -p "$work/bin"
    cp "$RDMACM_MANUAL_QP" "$work/bin/manual_qp"
    PATH=$work/bin:$PATH
    cm_pair manual-qp "manual_qp -s 10.0.0.1 -p 7472" "manual_qp -c 10.0.0.1 -p 7472" \
      "^rdmacm_manual_qp: end 0" "^rdmacm_manual_qp: end 0"
    cm_pair manual-qp-ucmatose-server "ucmatose -b 10.0.0.1 -p 7473" "manual_qp -c 10.0.0.1 -p 7473" \
      "^return status 0" "^rdmacm_manual_qp: end 0"
    cm_pair manual-qp-ucmatose-client "manual_qp -s 10.0.0.1 -p 7474" "ucmatose -s 10.0.0.1 -p 7474" \
      "^rdmacm_manual_qp: end 0" "^return status 0"
    # Failure paths. A port nobody listens on: REJ reason 8, reported to
    # the client as RDMA_CM_EVENT_REJECTED with that status.
    timeout -k 5 60 "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 -- rping -s -a 10.0.0.1 -p 7175 \
      >"$work/rej.srv.out" 2>&1 &
    SRV=$!
    wait_port_open rping
    inb timeout -k 5 60 "$run" --dev net_af_packet0,iface=rb --ip 10.0.0.2 -- rping -c -a 10.0.0.1 -p 7176 -C 1 \
      >"$work/rej.cli.out" 2>&1 && fail "rping to a port nobody listens on succeeded"
    grep -q "RDMA_CM_EVENT_REJECTED, error 8" "$work/rej.cli.out" || fail "no REJECTED event with reason 8"
    echo "ok: a port nobody listens on: RDMA_CM_EVENT_REJECTED, error 8"
    # An address nobody answers ARP for: ADDR_ERROR (-ETIMEDOUT) once
    # rping's 2000 ms resolution timeout has passed, as on Linux.
    start=$(now_ms)
    inb timeout -k 5 60 "$run" --dev net_af_packet0,iface=rb --ip 10.0.0.2 -- rping -c -a 10.0.0.99 -p 7177 -C 1 \
      >"$work/addr-error.cli.out" 2>&1 && fail "rping to an address nobody answers for succeeded"
    took=$(( $(now_ms) - start ))
    grep -q "RDMA_CM_EVENT_ADDR_ERROR, error -110" "$work/addr-error.cli.out" ||
      fail "no ADDR_ERROR -110 for an address nobody answers: $(cat "$work/addr-error.cli.out")"
    [ $took -lt 8000 ] || fail "ADDR_ERROR took $took ms"
    echo "ok: an address nobody answers for: RDMA_CM_EVENT_ADDR_ERROR, error -110, in $took ms"
    # The server stopped by SIGTERM in the middle of a long run: its
    # connection is released on the way out (a DREQ, as Linux's rdma_cm
    # sends for a process that ends), and the client ends at once instead
    # of waiting for a peer that is gone.
    inb timeout -k 5 60 "$run" --dev net_af_packet0,iface=rb --ip 10.0.0.2 -- rping -c -a 10.0.0.1 -p 7175 -C 1000000 \
      >"$work/kill.cli.out" 2>&1 &
    CLI=$!
    sleep 2
    pkill -TERM -f "^rping -s -a 10.0.0.1 -p 7175" || fail "no rping server to stop"
    start=$(now_ms)
    wait $CLI; CRC=$?
    wait $SRV 2>/dev/null; SRV=
    took=$(( $(now_ms) - start ))
    [ $CRC != 124 ] && [ $CRC != 137 ] || fail "rping's client was killed by its timeout"
    [ $took -lt 5000 ] || fail "rping's client took $took ms to end after its server was stopped"
    grep -q "DISCONNECT EVENT" "$work/kill.cli.out" || fail "the client heard no disconnection"
    # As on Linux, the signal ends the server where it stands: the library's
    # handler keeps it from returning into rping, whose sem_wait would fail
    # with EINTR and send it down its own error path first.
    grep -q "failed" "$work/rej.srv.out" && fail "the server saw the signal as a failure of its own"
    echo "ok: the server stopped mid-run (SIGTERM): the client hears DISCONNECTED and ends (exit $CRC) in $took ms"
    for t in write_bw read_bw send_bw send_lat; do
      cm_pair "ib_$t-R" "ib_$t -R -d uroce0 -x 1 -n 200 -s 4096" "ib_$t -R -d uroce0 -x 1 -n 200 -s 4096 10.0.0.1" \
        "^ *4096 +200 " "^ *4096 +200 "
    done ;;

  perf-rdmacm)
    # uroce-perf -R: perftest's conversation over an rdma_cm QP (binary
    # records in SENDs) and the test's QPs connected by the CM, against
    # itself and against Debian's perftest -R on uroce-run, in both roles.
    need ib_write_bw
    [ -x "${UROCE_PERF:-}" ] || { echo "SKIP: UROCE_PERF is not set to uroce-perf"; exit 77; }
    setup_links
    perf_srv() { timeout -k 5 60 "$UROCE_PERF" "$@" -R --dev net_af_packet0,iface=ra --ip 10.0.0.1; }
    perf_cli() { inb timeout -k 5 60 "$UROCE_PERF" "$@" -R --dev net_af_packet0,iface=rb --ip 10.0.0.2 10.0.0.1; }
    # NAME, server command, client command: both must print the row of 4096 B x 200.
    pair() {
      local name=$1 srv=$2 cli=$3
      $srv >"$work/$name.srv.out" 2>&1 &
      SRV=$!
      # uroce-perf's server flushes its banner once it listens; perftest's
      # output waits in its stdio buffer, so that one gets the whole 1.5 s.
      for _ in $(seq 30); do
        grep -q "Waiting for client to connect" "$work/$name.srv.out" && break
        sleep 0.05
      done
      $cli >"$work/$name.cli.out" 2>&1
      CRC=$?
      wait "$SRV"; SRC=$?; SRV=
      [ $CRC = 0 ] || fail "$name: client exited $CRC"
      [ $SRC = 0 ] || fail "$name: server exited $SRC"
      for side in srv cli; do
        grep -qE "^ *4096 +200 " "$work/$name.$side.out" || fail "$name: the $side printed no row of 200 x 4096 B"
      done
      echo "ok: $name"
    }
    args="-n 200 -s 4096"
    for t in write_bw read_bw send_bw send_lat; do
      pair "uroce-perf-$t" "perf_srv $t $args" "perf_cli $t $args"
      grep -q "Data ex. method : rdma_cm" "$work/uroce-perf-$t.cli.out" || fail "uroce-perf -R: no 'Data ex. method : rdma_cm'"
      pair "uroce-perf-$t-server-perftest-client" "perf_srv $t $args" \
        "inb timeout -k 5 60 $run --dev net_af_packet0,iface=rb --ip 10.0.0.2 -- ib_$t -R -d uroce0 -x 1 $args 10.0.0.1"
      # perftest's server listens for the test's connections only after a
      # sync: uroce-perf's client tries a refused REQ again.
      pair "perftest-$t-server-uroce-perf-client" \
        "timeout -k 5 60 $run --dev net_af_packet0,iface=ra --ip 10.0.0.1 -- ib_$t -R -d uroce0 -x 1 $args" \
        "perf_cli $t $args"
    done
    # Nobody listens on the port: the client's REQs are refused (REJ 8)
    # until --timeout, and it says so.
    perf_srv write_bw -p 7998 >"$work/rej.srv.out" 2>&1 &
    SRV=$!
    sleep 1.5
    out=$(perf_cli write_bw -p 7999 --timeout 2 2>&1) && fail "uroce-perf -R to a port nobody listens on succeeded"
    kill "$SRV"; wait "$SRV"; SRV=
    grep -q "REJ reason 8" <<<"$out" || fail "uroce-perf -R to a port nobody listens on: no REJ reason 8 ($out)"
    echo "ok: uroce-perf -R to a port nobody listens on: refused (REJ 8) after --timeout" ;;

  rdmacm-apps)
    # Programs that reach the peer's rdma_cm at the address they also use
    # for TCP (qperf's control connection, fio's and libfabric's setup):
    # the kernel's veth ends carry the RoCE addresses too, and drop RoCE's
    # UDP port (uroce takes those frames from the same interface through
    # af_packet; the kernel would answer each with an ICMP error).
    setup_links
    ip addr add 10.0.0.1/24 dev ra && inb ip addr add 10.0.0.2/24 dev rb || fail "RoCE addresses on the veth"
    for ns in "" inb; do
      $ns iptables -A INPUT -p udp --dport 4791 -j DROP || fail "iptables: drop RoCE in the kernel"
    done
    srv() { timeout -k 5 60 "$run" --dev net_af_packet0,iface=ra --ip 10.0.0.1 -- "$@"; }
    cli() { inb timeout -k 5 60 "$run" --dev net_af_packet0,iface=rb --ip 10.0.0.2 -- "$@"; }
    if command -v qperf >/dev/null; then
      srv qperf >"$work/qperf.srv.out" 2>&1 &
      SRV=$!
      sleep 1.5
      cli qperf 10.0.0.1 -cm1 -v rc_bw rc_lat rc_rdma_write_bw rc_rdma_read_bw >"$work/qperf.cli.out" 2>&1
      CRC=$?
      kill $SRV; wait $SRV; SRV=
      [ $CRC = 0 ] || fail "qperf -cm1: client exited $CRC"
      for t in rc_bw rc_lat rc_rdma_write_bw rc_rdma_read_bw; do
        grep -qE "^$t:" "$work/qperf.cli.out" || fail "qperf -cm1: no $t result"
      done
      grep -qE "^ +(bw|latency) += +[0-9.]+ " "$work/qperf.cli.out" || fail "qperf -cm1: no figures"
      grep -q "failed\|error" "$work/qperf.cli.out" && fail "qperf -cm1: an error"
      echo "ok: qperf -cm1 rc_bw rc_lat rc_rdma_write_bw rc_rdma_read_bw"
    else
      echo "qperf not installed: not run"
    fi
    if command -v fio >/dev/null; then
      # Not verb=send: fio connects with an RNR retry count of 0, and its
      # server re-posts each receive only after handling the last, so a
      # quick client meets "RNR retry counter exceeded" now and then (the
      # engine's own race, on any device).
      for verb in write read; do
        srv fio --name=srv --ioengine=rdma --port=7200 --rw=read --bs=64k --size=4m --verify=crc32c \
          >"$work/fio-$verb.srv.out" 2>&1 &
        SRV=$!
        sleep 1.5
        cli fio --name=cli --ioengine=rdma --hostname=10.0.0.1 --port=7200 --verb=$verb --rw=write --bs=64k \
          --size=4m --verify=crc32c >"$work/fio-$verb.cli.out" 2>&1
        CRC=$?
        wait $SRV; SRC=$?; SRV=
        [ $CRC = 0 ] || fail "fio rdma $verb: client exited $CRC"
        [ $SRC = 0 ] || fail "fio rdma $verb: server exited $SRC"
        grep -q "err= 0" "$work/fio-$verb.cli.out" || fail "fio rdma $verb: the client reports an error"
        echo "ok: fio ioengine=rdma verb=$verb"
      done
    else
      echo "fio not installed: not run"
    fi
    if command -v fi_pingpong >/dev/null; then
      # libfabric's verbs provider, its three endpoints: datagram (UD QPs,
      # address handles), connected (RC QPs connected through rdma_cm) and
      # reliable datagram (ofi_rxm, connecting RC QPs through rdma_cm as
      # messages need them). Every size, each message checked (-c). Its
      # server finds uroce0 at the veth's kernel address.
      for ep in dgram msg rdm; do
        srv fi_pingpong -p verbs -e $ep -c -I 50 >"$work/fi-$ep.srv.out" 2>&1 &
        SRV=$!
        sleep 1
        cli fi_pingpong -p verbs -e $ep -c -I 50 10.0.0.1 >"$work/fi-$ep.cli.out" 2>&1
        CRC=$?
        wait $SRV; SRC=$?; SRV=
        [ $CRC = 0 ] || fail "fi_pingpong -e $ep: client exited $CRC"
        [ $SRC = 0 ] || fail "fi_pingpong -e $ep: server exited $SRC"
        for f in "$work/fi-$ep.srv.out" "$work/fi-$ep.cli.out"; do
          grep -qE "^64 +50 +=50 " "$f" || fail "fi_pingpong -e $ep: no 64-byte result in $(basename "$f")"
          grep -qE "^1k +50 +=50 " "$f" || fail "fi_pingpong -e $ep: no 1k result in $(basename "$f")"
          [ $ep = dgram ] || grep -qE "^1m +50 +=50 " "$f" || fail "fi_pingpong -e $ep: no 1m result in $(basename "$f")"
        done
        echo "ok: fi_pingpong -p verbs -e $ep -c ($(grep -cE '^[0-9]+[km]? +50 +=50 ' "$work/fi-$ep.cli.out") sizes)"
      done
    else
      echo "fi_pingpong not installed: not run"
    fi ;;

  *) echo "unknown case $case_"; exit 2 ;;
esac
