#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# uroce-pingpong end to end: a server and a client process over a real
# kernel link, a veth pair whose two ends sit in two private network
# namespaces (net_af_packet on each end), with the TCP exchange on a second
# veth pair (192.168.77.1 <-> .2). RoCE addresses 10.0.0.1/.2, and
# fd00::1/::2 for the IPv6 run. Needs root; exit 77 (skip) otherwise.
#
# usage: pingpong_test.sh CASE UROCE_PINGPONG UROCE_DUMP ORACLE_PY WORKDIR
#   CASE: sizes | pcap | errors | usage | ud | uc | srq | events
#
# Namespace A is this script's own (unshare --net re-runs it there);
# namespace B belongs to a `sleep` holder process. Both vanish when their
# last process exits, so nothing is left on the host even after a crash;
# the EXIT trap kills the holder and any uroce-pingpong still running.
set -u

if [ "${1:-}" != --in-netns ]; then
  case_=${1:-}
  if [ "$case_" != usage ]; then
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespaces, af_packet)"; exit 77; }
    for t in ip unshare nsenter timeout; do
      command -v $t >/dev/null || { echo "SKIP: $t not found"; exit 77; }
    done
    exec timeout 280 unshare --net -- "$0" --in-netns "$@"
  fi
else
  shift
fi
case_=$1 pp=$2 dump=$3 oracle=$4 work=$5
mkdir -p "$work"
rm -f "$work"/*.out "$work"/*.pcap

HOLDER= SRV= CLI=
cleanup() {
  # SRV is a `timeout` process: TERM reaches uroce-pingpong through it.
  [ -n "$SRV" ] && kill -TERM "$SRV" 2>/dev/null
  [ -n "$CLI" ] && kill -TERM "$CLI" 2>/dev/null
  [ -n "$HOLDER" ] && kill -9 "$HOLDER" 2>/dev/null
  wait 2>/dev/null
}
trap cleanup EXIT
trap 'exit 1' TERM INT

. "$(dirname "$0")/../common/netns_b.sh"

# --- the two namespaces and the links -------------------------------------

setup_links() {
  start_namespace_b
  # RoCE link, jumbo-capable: no IP addresses, so the kernel neither
  # answers ARP nor replies to the RoCE packets.
  ip link add ppa mtu 9000 type veth peer name ppb mtu 9000 netns "$HOLDER" || fail "ip link add ppa/ppb"
  # The out-of-band TCP link.
  ip link add mga type veth peer name mgb netns "$HOLDER" || fail "ip link add mga/mgb"
  # A link with nobody at the other end (the ARP failure case).
  inb ip link add ppc type veth peer name ppd || fail "ip link add ppc/ppd"
  ip addr add 192.168.77.1/24 dev mga
  inb ip addr add 192.168.77.2/24 dev mgb
  ip link set ppa up && ip link set mga up || fail "links up in A"
  inb ip link set ppb up && inb ip link set mgb up && inb ip link set ppc up && inb ip link set ppd up ||
    fail "links up in B"
}

SRV_IP=10.0.0.1 CLI_IP=10.0.0.2 TCP_HOST=192.168.77.1
JUMBO=",framesz=8192,blocksz=8192,framecnt=512"

# start_server NAME SLOTS ARGS...: uroce-pingpong server in A, in the background.
start_server() {
  local name=$1 slots=$2; shift 2
  timeout 60 "$pp" --dev "net_af_packet0,iface=ppa$slots" --ip $SRV_IP "$@" >"$work/$name.srv.out" 2>&1 &
  SRV=$!
}
# run_client NAME SLOTS ARGS...: uroce-pingpong client in B; its exit code in CRC.
run_client() {
  local name=$1 slots=$2; shift 2
  inb timeout 60 "$pp" --dev "net_af_packet0,iface=ppb$slots" --ip $CLI_IP "$@" $TCP_HOST >"$work/$name.cli.out" 2>&1
  CRC=$?
}
wait_server() { wait "$SRV"; SRC=$?; SRV=; }

# The part of an address line after its label.
addr_of() { grep "^  $2 address:" "$1" | sed 's/^.*address: *//'; }

# check_run NAME SIZE ITERS [SEP]: both exited 0, printed rc_pingpong's
# lines, and each side's remote address is the other's local one. SEP is
# what comes before "GID" on the local line (ud_pingpong's is ":").
check_run() {
  local name=$1 size=$2 iters=$3 sep=${4:-,} s=$work/$1.srv.out c=$work/$1.cli.out
  [ "$SRC" = 0 ] || fail "$name: server exited $SRC"
  [ "$CRC" = 0 ] || fail "$name: client exited $CRC"
  for f in "$s" "$c"; do
    grep -qE "^  local address:  LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}$sep GID [0-9a-f:.]+\$" "$f" ||
      fail "$name: no local address line in $f"
    grep -qE "^$((2 * size * iters)) bytes in [0-9]+\.[0-9]{2} seconds = [0-9]+\.[0-9]{2} Mbit/sec\$" "$f" ||
      fail "$name: no '$((2 * size * iters)) bytes in ...' line in $f"
    grep -qE "^$iters iters in [0-9]+\.[0-9]{2} seconds = [0-9]+\.[0-9]{2} usec/iter\$" "$f" ||
      fail "$name: no '$iters iters in ...' line in $f"
  done
  # rc_pingpong prints the GID with inet_ntop(AF_INET6): ::ffff:a.b.c.d for IPv4.
  local sgid=$SRV_IP cgid=$CLI_IP
  case $SRV_IP in *:*) ;; *) sgid=::ffff:$SRV_IP cgid=::ffff:$CLI_IP ;; esac
  for g in $(addr_of "$s" local | sed 's/.*GID //'); do [ "$g" = "$sgid" ] || fail "$name: server's GID $g is not $sgid"; done
  for g in $(addr_of "$c" local | sed 's/.*GID //'); do [ "$g" = "$cgid" ] || fail "$name: client's GID $g is not $cgid"; done
  [ -n "$(addr_of "$s" remote)" ] && [ -n "$(addr_of "$c" remote)" ] || fail "$name: no remote address line"
  # In order, line for line (srq: one per QP); ud_pingpong's local ":" is a "," on the remote line.
  [ "$(addr_of "$s" remote)" = "$(addr_of "$c" local | sed 's/: GID/, GID/')" ] ||
    fail "$name: server's remote addresses != client's local ones"
  [ "$(addr_of "$c" remote)" = "$(addr_of "$s" local | sed 's/: GID/, GID/')" ] ||
    fail "$name: client's remote addresses != server's local ones"
}

# dump_pcap SIDE [oracle]: uroce-dump (and with "oracle" the oracle, where
# present: it is slow, and both sides' captures hold the same packets)
# accept it.
dump_pcap() {
  local out=$work/dump-$1.out
  "$dump" "$work/$1.pcap" >"$out" 2>&1 || fail "uroce-dump rejects $1.pcap"
  grep -qE "invalid: +0\$" "$out" || fail "$1.pcap has invalid RoCE packets"
  if [ "${2:-}" = oracle ] && [ -f "$oracle" ]; then
    /usr/bin/python3 "$oracle" "$work/$1.pcap" -q >"$work/oracle-$1.out" 2>&1 || fail "the oracle rejects $1.pcap"
  fi
}

# field FILE local|remote QPN|PSN -> the hex digits
field() { addr_of "$1" "$2" | sed -E "s/.*$3 0x([0-9a-f]{6}).*/\\1/"; }

# addresses_for PMTU IPVER: the endpoints' addresses for IPv4 or IPv6, and
# for a path MTU above 1024 jumbo veths and af_packet slots ($slots).
addresses_for() {
  if [ "$2" = 6 ]; then SRV_IP=fd00::1 CLI_IP=fd00::2; else SRV_IP=10.0.0.1 CLI_IP=10.0.0.2; fi
  slots=
  if [ "$1" -gt 1024 ]; then
    ip link set dev ppa mtu 9000 && inb ip link set dev ppb mtu 9000 || fail "veth MTU 9000"
    slots=$JUMBO
  fi
}

case $case_ in
  sizes)
    setup_links
    # size, path MTU, iterations, IP version; -c checks every message's contents.
    for run in "64 1024 1000 4" "4096 1024 1000 4" "65536 1024 300 4" "8192 4096 1000 4" "4096 1024 300 6"; do
      set -- $run
      addresses_for "$2" "$4"
      name=s$1-m$2-ipv$4
      start_server "$name" "$slots" -s "$1" -m "$2" -n "$3" -c --timeout 20
      run_client "$name" "$slots" -s "$1" -m "$2" -n "$3" -c --timeout 20
      wait_server
      check_run "$name" "$1" "$3"
      echo "ok: IPv$4 -s $1 -m $2 -n $3 -c: $(grep usec/iter "$work/$name.cli.out")"
    done ;;

  pcap)
    setup_links
    start_server cap "" -s 4096 -n 20 --pcap "$work/srv.pcap" --timeout 20
    run_client cap "" -s 4096 -n 20 --pcap "$work/cli.pcap" --timeout 20
    wait_server
    check_run cap 4096 20
    s=$work/cap.srv.out c=$work/cap.cli.out
    for side in srv cli; do
      out=$work/dump-$side.out
      "$dump" "$work/$side.pcap" >"$out" 2>&1 || fail "uroce-dump rejects $side.pcap"
      grep -qE "invalid: +0\$" "$out" || fail "$side.pcap has invalid RoCE packets"
      # 4096 bytes at path MTU 1024: FIRST, MIDDLE, MIDDLE, LAST; 20 messages each way.
      for op in "RC_SEND_FIRST 40" "RC_SEND_MIDDLE 80" "RC_SEND_LAST 40"; do
        set -- $op
        n=$(grep -c " $1 " "$out")
        [ "$n" -ge "$2" ] || fail "$side.pcap: $n $1 packets, expected at least $2"
      done
      grep -q " RC_ACKNOWLEDGE " "$out" || fail "$side.pcap: no ACKs"
      # The first SEND goes to the QPN and starts at the PSN that were exchanged.
      grep -qE "^#[0-9]+ $CLI_IP:[0-9]+ -> $SRV_IP RC_SEND_FIRST qpn=0x$(field "$s" local QPN) psn=0x$(field "$c" local PSN) " "$out" ||
        fail "$side.pcap: the client's first SEND does not match the exchanged QPN/PSN"
      grep -qE "^#[0-9]+ $SRV_IP:[0-9]+ -> $CLI_IP RC_SEND_FIRST qpn=0x$(field "$c" local QPN) psn=0x$(field "$s" local PSN) " "$out" ||
        fail "$side.pcap: the server's first SEND does not match the exchanged QPN/PSN"
      if [ -f "$oracle" ]; then
        /usr/bin/python3 "$oracle" "$work/$side.pcap" -q >"$work/oracle-$side.out" 2>&1 || fail "the oracle rejects $side.pcap"
      fi
    done
    [ -f "$oracle" ] || echo "note: oracle not found at $oracle; checked with uroce-dump only"
    echo "ok: captures of both sides decode, SENDs match the exchange" ;;

  errors)
    setup_links
    # 1. No server: the client gives up within its --timeout, and says why.
    t0=$(now_ms)
    run_client noserver "" --timeout 2
    dt=$(($(now_ms) - t0))
    [ "$CRC" = 1 ] || fail "client without a server: exit $CRC, expected 1"
    grep -q "cannot connect to $TCP_HOST:18515" "$work/noserver.cli.out" || fail "client without a server: no 'cannot connect' message"
    [ "$dt" -lt 8000 ] || fail "client without a server took $dt ms with --timeout 2"
    echo "ok: no server -> exit 1 after $dt ms"

    # 2. The server cannot resolve the client: the client is on a link
    # the server is not on (ppc). Both fail with a message.
    timeout 60 "$pp" --dev net_af_packet0,iface=ppa --ip $SRV_IP --timeout 2 >"$work/noarp.srv.out" 2>&1 &
    SRV=$!
    inb timeout 60 "$pp" --dev net_af_packet0,iface=ppc --ip $CLI_IP --timeout 10 $TCP_HOST >"$work/noarp.cli.out" 2>&1
    CRC=$?
    wait_server
    [ "$SRC" = 1 ] && [ "$CRC" = 1 ] || fail "unreachable RoCE peer: server exit $SRC, client exit $CRC, expected 1 and 1"
    grep -q "no ARP reply from $CLI_IP" "$work/noarp.srv.out" || fail "server: no 'no ARP reply' message"
    grep -q "closed the connection" "$work/noarp.cli.out" || fail "client: no message about the server hanging up"
    echo "ok: ARP timeout -> both exit 1"

    # 3. Bad --dev, bad --ip.
    for bad in "net_nosuch0:net_nosuch0" "net_af_packet0,iface=nosuchif:nosuchif"; do
      dev=${bad%%:*} needle=${bad##*:}
      timeout 60 "$pp" --dev "$dev" --ip $SRV_IP >"$work/baddev.out" 2>&1
      rc=$?
      [ $rc = 1 ] || fail "--dev $dev: exit $rc, expected 1"
      grep -q "uroce-pingpong: .*$needle" "$work/baddev.out" || fail "--dev $dev: the message does not name $needle"
    done
    timeout 60 "$pp" --dev net_af_packet0,iface=ppa --ip 10.0.0.300 >"$work/badip.out" 2>&1
    rc=$?
    [ $rc = 2 ] && grep -q "10.0.0.300" "$work/badip.out" || fail "--ip 10.0.0.300: exit $rc (a usage error is 2) or no message naming it"
    echo "ok: bad --dev / --ip -> exit 1 with the culprit named"

    # 4. The client dies mid-run (once it has run over 3 s and printed
    # progress): the server reports the lost peer within its --timeout.
    start_server dies "" -s 64 -n 1000000000 --timeout 2
    # nsenter execs timeout, so $! is the `timeout` process itself.
    nsenter --net=/proc/$HOLDER/ns/net -- timeout 60 "$pp" --dev net_af_packet0,iface=ppb --ip $CLI_IP -s 64 \
      -n 1000000000 $TCP_HOST >"$work/dies.cli.out" 2>&1 &
    CLI=$!
    for _ in $(seq 300); do
      grep -q " iterations, " "$work/dies.cli.out" && break
      sleep 0.1
    done
    # A second client while the first runs is refused, as by rc_pingpong's
    # server, which closes its listening socket once it has its client.
    if nsenter --net=/proc/$HOLDER/ns/net -- timeout 5 bash -c "exec 3<>/dev/tcp/$TCP_HOST/18515" \
        2>"$work/second.err"; then
      fail "a second client connected to a server busy with its first"
    fi
    grep -q "Connection refused" "$work/second.err" || fail "a second client was not refused: $(cat "$work/second.err")"
    echo "ok: a second client is refused while the first runs"
    sleep 0.5
    kill -TERM $CLI 2>/dev/null  # `timeout` passes it on: uroce-pingpong dies at once
    wait $CLI; CLI=
    t0=$(now_ms)
    wait_server
    dt=$(($(now_ms) - t0))
    [ "$SRC" = 1 ] || fail "server whose client died: exit $SRC, expected 1"
    grep -qE "no completion for|Failed status" "$work/dies.srv.out" || fail "server: no message about the lost peer"
    grep -qE "^uroce-pingpong: [0-9]+/1000000000 iterations, [0-9.]+ s\$" "$work/dies.srv.out" ||
      fail "server: no progress line during a run of over 3 s"
    [ "$dt" -lt 8000 ] || fail "server noticed the dead client only after $dt ms"
    echo "ok: client killed -> server exit 1 after $dt ms"

    # 5. A server nobody connects to gives up after --accept-timeout.
    t0=$(now_ms)
    timeout 60 "$pp" --dev net_af_packet0,iface=ppa --ip $SRV_IP --accept-timeout 1 >"$work/noclient.out" 2>&1
    rc=$? dt=$(($(now_ms) - t0))
    [ $rc = 1 ] || fail "server without a client: exit $rc, expected 1"
    grep -q "no client connected to TCP port 18515" "$work/noclient.out" || fail "server without a client: no message"
    [ "$dt" -lt 8000 ] || fail "server without a client took $dt ms with --accept-timeout 1"
    echo "ok: no client -> exit 1 after $dt ms"

    # 6. --chk catches wrong data: a client without -c sends rc_pingpong's
    # constant buffer, which is not the pattern the server expects.
    start_server chk "" -s 64 -n 50 -c --timeout 20
    run_client chk "" -s 64 -n 50 --timeout 20
    wait_server
    [ "$CRC" = 0 ] || fail "--chk mismatch: client exit $CRC, expected 0 (it does not check)"
    [ "$SRC" = 1 ] || fail "--chk mismatch: server exit $SRC, expected 1"
    grep -q "chk: 50 of 50 received messages were wrong; first: message 0: byte 0 of 64 is 0x7b, expected 0x01" \
      "$work/chk.srv.out" || fail "--chk mismatch: no message naming the first wrong byte"
    echo "ok: --chk mismatch -> exit 1" ;;

  ud)
    setup_links
    # ud_pingpong: -s up to the port's active MTU; sizes down to 1 byte,
    # and IPv6 (the GRH slot then holds the whole IPv6 header). -c checks
    # every message, its GRH source and its source QP.
    for run in "1 1024 200 4" "512 1024 300 4" "1024 1024 300 4" "4096 4096 300 4" "1000 1024 200 6"; do
      set -- $run
      addresses_for "$2" "$4"
      name=ud-s$1-m$2-ipv$4
      start_server "$name" "$slots" --ud -s "$1" -m "$2" -n "$3" -c --timeout 20
      run_client "$name" "$slots" --ud -s "$1" -m "$2" -n "$3" -c --timeout 20
      wait_server
      check_run "$name" "$1" "$3" :
      echo "ok: --ud IPv$4 -s $1 -m $2 -n $3 -c: $(grep usec/iter "$work/$name.cli.out")"
    done
    SRV_IP=10.0.0.1 CLI_IP=10.0.0.2
    # The wire: UD SEND ONLY with ud_pingpong's qkey and our QP as the
    # source, to the QPN and from the PSN that were exchanged; no ACKs.
    start_server udcap "" --ud -s 512 -n 10 --pcap "$work/udsrv.pcap" --timeout 20
    run_client udcap "" --ud -s 512 -n 10 --pcap "$work/udcli.pcap" --timeout 20
    wait_server
    check_run udcap 512 10 :
    s=$work/udcap.srv.out c=$work/udcap.cli.out
    for side in udsrv udcli; do
      dump_pcap $side $([ $side = udsrv ] && echo oracle)
      out=$work/dump-$side.out
      n=$(grep -c " UD_SEND_ONLY " "$out")
      [ "$n" = 20 ] || fail "$side.pcap: $n UD_SEND_ONLY packets, expected 20 (10 each way)"
      ! grep -q " RC_" "$out" || fail "$side.pcap: RC packets in a UD run"
      n=$(grep " UD_SEND_ONLY " "$out" | grep "payload=512" | grep -c "DETH(qkey=0x11111111 ")
      [ "$n" = 20 ] || fail "$side.pcap: $n of 20 UD SENDs have a 512-byte payload and qkey 0x11111111"
      grep -qE "^#[0-9]+ $CLI_IP:[0-9]+ -> $SRV_IP UD_SEND_ONLY qpn=0x$(field "$s" local QPN) psn=0x$(field "$c" local PSN) .*DETH\(qkey=0x11111111 srcqp=0x$(field "$c" local QPN)\)" "$out" ||
        fail "$side.pcap: the client's first UD SEND does not match the exchange"
      grep -qE "^#[0-9]+ $SRV_IP:[0-9]+ -> $CLI_IP UD_SEND_ONLY qpn=0x$(field "$c" local QPN) psn=0x$(field "$s" local PSN) .*DETH\(qkey=0x11111111 srcqp=0x$(field "$s" local QPN)\)" "$out" ||
        fail "$side.pcap: the server's first UD SEND does not match the exchange"
    done
    echo "ok: UD captures decode; qkey, source QP, QPN and PSN match the exchange" ;;

  uc)
    setup_links
    # uc_pingpong: rc_pingpong's run on a UC QP, 1 byte to several MTUs,
    # IPv4 and IPv6; -c checks every message.
    for run in "1 1024 200 4" "4096 1024 300 4" "10000 2048 100 4" "3000 1024 200 6"; do
      set -- $run
      addresses_for "$2" "$4"
      name=uc-s$1-m$2-ipv$4
      start_server "$name" "$slots" --uc -s "$1" -m "$2" -n "$3" -c --timeout 20
      run_client "$name" "$slots" --uc -s "$1" -m "$2" -n "$3" -c --timeout 20
      wait_server
      check_run "$name" "$1" "$3"
      echo "ok: --uc IPv$4 -s $1 -m $2 -n $3 -c: $(grep usec/iter "$work/$name.cli.out")"
    done
    SRV_IP=10.0.0.1 CLI_IP=10.0.0.2
    # The wire: UC SEND FIRST/MIDDLE/LAST to the exchanged QPN from the
    # exchanged PSN, no AckReq, and nothing else (no ACK).
    start_server uccap "" --uc -s 2500 -n 10 --pcap "$work/ucsrv.pcap" --timeout 20
    run_client uccap "" --uc -s 2500 -n 10 --pcap "$work/uccli.pcap" --timeout 20
    wait_server
    check_run uccap 2500 10
    s=$work/uccap.srv.out c=$work/uccap.cli.out
    for side in ucsrv uccli; do
      dump_pcap $side $([ $side = ucsrv ] && echo oracle)
      out=$work/dump-$side.out
      for op in UC_SEND_FIRST UC_SEND_MIDDLE UC_SEND_LAST; do
        n=$(grep -c " $op " "$out")
        [ "$n" = 20 ] || fail "$side.pcap: $n $op packets, expected 20 (10 each way)"
      done
      ! grep -q " RC_\| UD_" "$out" || fail "$side.pcap: RC or UD packets in a UC run"
      ! grep -q "AckReq" "$out" || fail "$side.pcap: a UC packet asks for an ACK"
      grep -qE "^#[0-9]+ $CLI_IP:[0-9]+ -> $SRV_IP UC_SEND_FIRST qpn=0x$(field "$s" local QPN) psn=0x$(field "$c" local PSN) " "$out" ||
        fail "$side.pcap: the client's first UC SEND does not match the exchange"
    done
    echo "ok: UC captures decode; opcodes, QPN and PSN match the exchange, no ACK" ;;

  srq)
    setup_links
    # srq_pingpong: -q QPs on one SRQ of -r receives; -n counts over all
    # QPs. -c checks each QP's messages in order.
    for run in "256 2 10 500 1024" "4096 16 500 500 1024" "64 4 1000 8 1024" "8192 3 300 100 4096" "1 1 100 2 1024"; do
      set -- $run
      slots=
      if [ "$5" -gt 1024 ]; then
        ip link set dev ppa mtu 9000 && inb ip link set dev ppb mtu 9000 || fail "veth MTU 9000"
        slots=$JUMBO
      fi
      name=srq-s$1-q$2-r$4-m$5
      start_server "$name" "$slots" --srq -s "$1" -q "$2" -n "$3" -r "$4" -m "$5" -c --timeout 20
      run_client "$name" "$slots" --srq -s "$1" -q "$2" -n "$3" -r "$4" -m "$5" -c --timeout 20
      wait_server
      check_run "$name" "$1" "$3"
      for f in "$work/$name.srv.out" "$work/$name.cli.out"; do
        [ "$(grep -c '^  local address:' "$f")" = "$2" ] || fail "$name: not $2 local address lines in $f"
        [ "$(grep -c '^  remote address:' "$f")" = "$2" ] || fail "$name: not $2 remote address lines in $f"
        [ "$(addr_of "$f" local | sed -E 's/.*QPN 0x([0-9a-f]+).*/\1/' | sort -u | wc -l)" = "$2" ] ||
          fail "$name: the $2 QPs in $f do not have distinct QPNs"
      done
      echo "ok: --srq -s $1 -q $2 -n $3 -r $4 -m $5 -c: $(grep usec/iter "$work/$name.cli.out")"
    done
    # The wire: every QP carries SENDs to its peer QP (completions were
    # told apart by QPN, so each QP must have had traffic).
    start_server srqcap "" --srq -s 256 -q 3 -n 30 --pcap "$work/srqsrv.pcap" --timeout 20
    run_client srqcap "" --srq -s 256 -q 3 -n 30 --timeout 20
    wait_server
    check_run srqcap 256 30
    dump_pcap srqsrv oracle
    out=$work/dump-srqsrv.out s=$work/srqcap.srv.out c=$work/srqcap.cli.out
    paste <(addr_of "$c" local) <(addr_of "$s" local) | while read -r line; do
      cq=$(echo "$line" | sed -E 's/^.*QPN 0x([0-9a-f]{6}), PSN 0x([0-9a-f]{6}).*QPN 0x([0-9a-f]{6}), PSN 0x([0-9a-f]{6}).*$/\1 \2 \3 \4/')
      set -- $cq  # client QPN, client PSN, server QPN, server PSN
      grep -qE "^#[0-9]+ $CLI_IP:[0-9]+ -> $SRV_IP RC_SEND_ONLY qpn=0x$3 psn=0x$2 " "$out" ||
        fail "srqsrv.pcap: no SEND from client QP 0x$1 to server QP 0x$3 at PSN 0x$2"
      grep -qE "^#[0-9]+ $SRV_IP:[0-9]+ -> $CLI_IP RC_SEND_ONLY qpn=0x$1 psn=0x$4 " "$out" ||
        fail "srqsrv.pcap: no SEND from server QP 0x$3 to client QP 0x$1 at PSN 0x$4"
    done || exit 1
    echo "ok: SRQ capture decodes; each QP pair carries its own SENDs from the exchanged PSNs"
    # Different -q on the two sides: srq_pingpong's zero records tell the
    # server that the client has fewer QPs; it says so and hangs up.
    start_server fewer "" --srq -q 4 -n 10 --timeout 5
    run_client fewer "" --srq -q 2 -n 10 --timeout 5
    wait_server
    [ "$SRC" = 1 ] && [ "$CRC" = 1 ] || fail "-q 4 vs -q 2: server exit $SRC, client exit $CRC, expected 1 and 1"
    grep -q "the peer has fewer QPs than our 4 (no QPN for QP\[2\]): give both sides the same -q" "$work/fewer.srv.out" ||
      fail "-q 4 vs -q 2: the server does not say the peer has fewer QPs"
    grep -q "couldn't read remote address 0 of 256" "$work/fewer.cli.out" || fail "-q 4 vs -q 2: the client does not say the server hung up"
    echo "ok: -q 4 server, -q 2 client -> both exit 1, the server names the cause" ;;

  events)
    setup_links
    # -e: each side sleeps on its completion channel between completions
    # (its engine on a thread of its own); -c checks every message. The
    # last run pairs an -e server with a polling client.
    for run in "rc:-e:-e" "ud:-e:-e" "srq:-e:-e" "rc:-e:"; do
      IFS=: read -r mode se ce <<<"$run"
      extra= sep=,
      [ "$mode" = ud ] && extra=--ud sep=:
      [ "$mode" = srq ] && extra="--srq -q 3"
      name=events-$mode${ce:+-both}
      start_server "$name" "" $extra $se -s 512 -n 500 -c --timeout 20
      run_client "$name" "" $extra $ce -s 512 -n 500 -c --timeout 20
      wait_server
      check_run "$name" 512 500 $sep
      echo "ok: $mode server $se, client ${ce:-polling}: $(grep usec/iter "$work/$name.cli.out")"
    done ;;

  cm)
    setup_links
    # --cm: the connection is set up by the CM on the wire (REQ, REP, RTU;
    # DREQ, DREP at the end), no TCP exchange; the client names the
    # server's RoCE address. Polling and -e, each message checked.
    for ev in "" -e; do
      name=cm${ev}
      start_server "$name" "" --cm $ev -s 1024 -n 500 -c --timeout 20 --pcap "$work/$name.pcap"
      sleep 1
      inb timeout 60 "$pp" --dev net_af_packet0,iface=ppb --ip $CLI_IP --cm $ev -s 1024 -n 500 -c --timeout 20 \
        $SRV_IP >"$work/$name.cli.out" 2>&1
      CRC=$?
      wait_server
      check_run "$name" 1024 500
      dump_pcap "$name"
      if command -v tshark >/dev/null; then
        cms=$(tshark -r "$work/$name.pcap" -d udp.port==4791,infiniband -Y infiniband.mad -T fields \
          -e infiniband.mad.attributeid 2>/dev/null | tr '\n' ' ')
        [ "$cms" = "0x0010 0x0013 0x0014 0x0015 0x0016 " ] ||
          fail "$name: the CM messages on the wire are not REQ REP RTU DREQ DREP: $cms"
      fi
      echo "ok: --cm ${ev:-polling}: $(grep usec/iter "$work/$name.cli.out")"
    done
    # A port nobody listens on: the server's manager answers REJ 8.
    start_server cm-rej "" --cm -p 18600 --accept-timeout 4
    sleep 1
    inb timeout 60 "$pp" --dev net_af_packet0,iface=ppb --ip $CLI_IP --cm -p 18601 --timeout 20 $SRV_IP \
      >"$work/cm-rej.cli.out" 2>&1 && fail "--cm to a port nobody listens on succeeded"
    grep -q "nobody listens on that port (REJ reason 8)" "$work/cm-rej.cli.out" ||
      fail "--cm to a port nobody listens on: $(cat "$work/cm-rej.cli.out")"
    wait_server
    [ "$SRC" = 1 ] && grep -q "no connection request within --accept-timeout" "$work/cm-rej.srv.out" ||
      fail "--cm server without a client: exit $SRC, $(cat "$work/cm-rej.srv.out")"
    echo "ok: --cm to a port nobody listens on: REJ 8; a server without a client stops at --accept-timeout" ;;

  usage)
    expect() {  # expect RC NEEDLE ARGS...
      local want=$1 needle=$2; shift 2
      timeout 30 "$pp" "$@" >"$work/usage.out" 2>&1
      local rc=$?
      [ $rc = "$want" ] || fail "uroce-pingpong $*: exit $rc, expected $want"
      grep -q -- "$needle" "$work/usage.out" || fail "uroce-pingpong $*: output lacks '$needle'"
    }
    d="--dev net_null0 --ip 10.0.0.1"
    expect 2 "prefetch is valid only with on-demand memory region" $d -P
    expect 2 "--ip 10.0.0.300: not an IPv4 or IPv6 address" --dev net_null0 --ip 10.0.0.300
    expect 2 "--mac 02:00: not a MAC address" $d --mac 02:00
    expect 2 "is not an option of ibv_ud_pingpong" $d --ud -j
    expect 2 "ts is not supported" $d --ts
    expect 2 "dev is required" --ip 10.0.0.1
    expect 2 "ip is required" --dev net_null0
    expect 2 "--cm connects RC QPs" $d --cm --ud
    expect 2 "the CM settles the path MTU" $d --cm -m 2048
    expect 2 "mtu" $d -m 1000
    expect 2 "ib-port" $d -i 2
    expect 2 "size" $d -s 0
    expect 2 "--vlan" $d --vlan 4095
    expect 2 "--pcp" $d --pcp 8
    expect 2 "excludes" --daemon /run/x.sock --vlan 5
    expect 0 "timestamps: not supported" --help
    expect 0 "sleep on CQ events" --help
    expect 0 "chk" --help
    expect 0 "uroce-pingpong" --version
    expect 0 "ibv_ud_pingpong" --help
    expect 0 "ibv_srq_pingpong" --help
    expect 2 "needs --srq" $d -q 4
    expect 2 "excludes" $d --ud --srq
    expect 2 "rx_depth 8 is too small for 16 QPs -- must have at least one receive per QP" $d --srq -r 8
    expect 2 "num-qp" $d --srq -q 257
    # UD: a message is one packet; the default -s (2048) exceeds the default -m (1024).
    expect 1 "Requested size larger than port MTU (1024)" $d --ud
    expect 1 "Requested size larger than port MTU (2048): -s 4096" $d --ud -s 4096 -m 2048
    echo "ok: usage errors exit 2 with a message" ;;

  *) echo "unknown case $case_"; exit 2 ;;
esac
