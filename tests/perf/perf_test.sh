#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# uroce-perf end to end in --loopback mode (two engines over real ethdev
# ring ports, no NIC, no hugepages).
# usage: perf_test.sh CASE UROCE_PERF UROCE_DUMP ORACLE_PY WORKDIR
set -u
case_=$1 perf=$2 dump=$3 oracle=$4 work=$5
mkdir -p "$work"
out=$work/$case_.out

fail() { echo "FAIL: $*"; echo "--- output"; cat "$out" 2>/dev/null; exit 1; }

run_ok() {  # runs uroce-perf, expects exit 0 and one result row per size
  timeout 120 "$perf" "$@" >"$out" 2>&1 || fail "uroce-perf $* exited $?"
  grep -q "data verified" "$out" || fail "no 'data verified' line"
}

row_count() { grep -cE '^ [0-9]+ +[0-9]+ ' "$out"; }

case $case_ in
  bw-all-verbs)
    for t in write_bw read_bw send_bw atomic_bw; do
      run_ok $t --loopback --verify -n 500
      [ "$(row_count)" = 1 ] || fail "$t: expected one result row"
      grep -q "BW average\[MB/sec\]" "$out" || fail "$t: no perftest BW header"
    done
    run_ok atomic_bw --loopback --verify -n 500 -A CMP_AND_SWAP
    grep -q "CMP_AND_SWAP" "$out" || fail "CMP_AND_SWAP not in the banner" ;;
  lat-all-verbs)
    for t in write_lat read_lat send_lat; do
      run_ok $t --loopback --verify -n 200
      [ "$(row_count)" = 1 ] || fail "$t: expected one result row"
      grep -q "t_typical\[usec\]" "$out" || fail "$t: no perftest latency header"
      # perftest's -I default: 220 for WRITE, 236 for SEND latency, 0 else
      # (perftest shows the outstanding reads instead for read_lat)
      want=0; [ $t = write_lat ] && want=220; [ $t = send_lat ] && want=236
      [ $t = read_lat ] || grep -q "Max inline data : $want\[B\]" "$out" || fail "$t: default inline size is not $want"
      [ $t != read_lat ] || grep -q "Outstand reads  : " "$out" || fail "read_lat: no 'Outstand reads' line"
    done
    run_ok write_lat --loopback --verify -n 200 -I 0 -s 300
    grep -q "Max inline data : 0\[B\]" "$out" || fail "-I 0 not kept"
    run_ok write_bw --loopback --verify -n 200
    grep -q "Max inline data : 0\[B\]" "$out" || fail "write_bw: default inline size is not 0" ;;
  events)
    # -e in every test perftest takes it in: the loops sleep on the
    # completion channels while the engines run on threads of their own.
    for t in send_bw read_bw atomic_bw send_lat read_lat atomic_lat; do
      run_ok $t --loopback --verify -n 300 -e
      [ "$(row_count)" = 1 ] || fail "$t -e: expected one result row"
      grep -q "Test with events" "$out" || fail "$t -e: no 'Test with events' banner line"
    done
    run_ok send_bw --loopback --verify -n 300 -e -q 2 -b
    run_ok send_bw --loopback --verify -n 300 -e -c UD -s 512
    run_ok read_lat --loopback --verify -n 100 -e --idle-sleep-us 0
    # -X names a completion vector; the device has one (0).
    run_ok send_lat --loopback --verify -n 50 -e -X 0
    timeout 60 "$perf" send_lat --loopback -n 50 -e -X 1 >"$out" 2>&1 && fail "-X 1 was accepted"
    grep -q "Completion vector specified is invalid" "$out" || fail "-X 1: no message about the vector"
    # --engine-lcores 2: the server's engine on a thread of its own while
    # this thread drives the client's; every verb, many QPs, data checked.
    for t in write_bw send_bw read_bw atomic_bw; do
      run_ok $t --loopback --verify -n 300 -q 4 --engine-lcores 2
    done
    for t in write_lat send_lat read_lat; do
      run_ok $t --loopback --verify -n 300 --engine-lcores 2
    done
    run_ok write_bw --loopback --verify -q 1000 -s 64 -n 20 --engine-lcores 2
    grep -qE '^ 64 +20000 ' "$out" || fail "write_bw -q 1000 -n 20 --engine-lcores 2: expected a row of 64 B x 20000"
    timeout 60 "$perf" write_bw --loopback -n 50 -e --engine-lcores 2 >"$out" 2>&1 && fail "-e with --engine-lcores 2 was accepted"
    timeout 60 "$perf" write_bw --engine-lcores 2 --dev net_null0 --ip 10.0.0.1 >"$out" 2>&1 &&
      fail "--engine-lcores without --loopback was accepted" ;;
  many-qps)
    # Thousands of QPs at once, each with a full send queue: every QP's
    # messages complete and its buffer holds its own data (--verify checks
    # each QP's), on the same TX queue and mbuf pool as one QP uses.
    for t in write_bw send_bw read_bw; do
      run_ok $t --loopback --verify -q 2000 -s 64 -n 20
      grep -qE '^ 64 +40000 ' "$out" || fail "$t -q 2000 -n 20: expected a row of 64 B x 40000"
    done
    run_ok write_bw --loopback --verify -q 2000 -s 64 -D 2
    grep -q ", 0 retransmitted" "$out" || fail "write_bw -q 2000 -D 2: retransmissions on a lossless link" ;;
  sizes-and-mtus)
    # sizes that are not multiples of the MTU, every path MTU, several QPs
    for m in 256 1024 4096; do
      for s in 1 1000 4097 100000; do
        run_ok write_bw --loopback --verify -n 50 -m $m -s $s -q 2
        run_ok read_bw --loopback --verify -n 50 -m $m -s $s
        run_ok send_bw --loopback --verify -n 50 -m $m -s $s
      done
    done ;;
  ud)
    # -c UD: one AH per QP, the payload after the GRH slot (--verify checks it)
    for a in "-q 4 -s 1024 -n 2000" "--use-srq -q 2 -s 700 -n 500" "-b -s 1000 -n 1000" "-l 4 -s 64 -n 1000" \
             "-m 4096 -s 4096 -n 500"; do
      run_ok send_bw --loopback --verify -c UD $a
      [ "$(row_count)" = 1 ] || fail "send_bw -c UD $a: expected one result row"
      grep -q "Connection type : UD" "$out" || fail "send_bw -c UD $a: no 'Connection type : UD'"
    done
    run_ok send_bw --loopback --verify -c UD -q 2 -s 1024 -n 1000
    grep -qE '^ 1024 +2000 ' "$out" || fail "send_bw -c UD -q 2 -n 1000: expected a row of 1024 B x 2000"
    grep -qE '^ uroce: receiver: 1024 B, 2000 messages, BW average [0-9.]+ MB/sec' "$out" \
      || fail "send_bw -c UD: no receiver line with its 2000 messages"
    run_ok send_lat --loopback --verify -c UD -s 1024 -n 500
    grep -qE '^ 1024 +500 ' "$out" || fail "send_lat -c UD: expected a row of 1024 B x 500"
    grep -q "Max inline data : 188\[B\]" "$out" || fail "send_lat -c UD: perftest's UD inline default is 188"
    # perftest caps a UD message at the path MTU: -s above it runs at the
    # MTU, -a stops there with two lines on stderr
    run_ok send_bw --loopback --verify -c UD -s 4096 -n 100
    grep -qE '^ 1024 +100 ' "$out" || fail "-c UD -s 4096 at MTU 1024 should run 1024-byte messages"
    run_ok send_lat --loopback --verify -c UD -a -n 50 -m 2048
    [ "$(row_count)" = 11 ] || fail "-c UD -a -m 2048: expected 11 rows (2 .. 2048), got $(row_count)"
    grep -q "Max msg size in UD is MTU 2048" "$out" || fail "-c UD -a: no 'Max msg size in UD is MTU 2048' line"
    timeout 60 "$perf" write_bw --loopback -c UD >"$out" 2>&1; rc=$?
    [ $rc = 2 ] && grep -q "UD connection only possible in SEND verb" "$out" || fail "write_bw -c UD: want exit 2, got $rc" ;;
  uc)
    # -c UC: SEND and WRITE, single- and multi-packet, several QPs; no ACKs.
    for t in send_bw write_bw send_lat write_lat; do
      run_ok $t --loopback --verify -c UC -n 200 -s 5000
      grep -q "Connection type : UC" "$out" || fail "$t -c UC: no 'Connection type : UC'"
      grep -qE '^ 5000 +200 ' "$out" || fail "$t -c UC: expected a row of 5000 B x 200"
    done
    run_ok send_bw --loopback --verify -c UC -q 2 -a -n 20
    [ "$(row_count)" = 23 ] || fail "send_bw -c UC -a: expected 23 rows, got $(row_count)"
    # Nothing comes back to a UC sender: the bandwidth tests receive no packet.
    grep -qE "packets sent, 0 received, 0 retransmitted" "$out" || fail "send_bw -c UC: the sender received packets"
    for t in read_bw atomic_bw read_lat; do
      timeout 60 "$perf" $t --loopback -c UC >"$out" 2>&1; rc=$?
      [ $rc = 2 ] && grep -q "UC connection not possible in READ/ATOMIC verbs" "$out" \
        || fail "$t -c UC: want exit 2 with perftest's message, got $rc"
    done
    # The frames: UC opcodes, no AckReq, no ACK; the oracle (and tshark) agree.
    run_ok write_bw --loopback --verify -c UC -n 10 -s 3000 --pcap "$work/uc.pcap"
    run_ok send_lat --loopback --verify -c UC -n 10 -s 2100 --pcap "$work/uc-send.pcap"
    for p in uc uc-send; do
      "$dump" "$work/$p.pcap" >"$out" 2>&1 || fail "uroce-dump rejects $p.pcap"
      grep -qE "invalid: +0$" "$out" || fail "$p.pcap has invalid packets"
      grep -q " RC_" "$out" && fail "$p.pcap has RC packets"
      grep -q "flags=[^ ]*AckReq" "$out" && fail "$p.pcap has a packet with AckReq"
      if [ -f "$oracle" ]; then
        /usr/bin/python3 "$oracle" "$work/$p.pcap" -q >"$out" 2>&1 || fail "the oracle rejects $p.pcap"
      fi
    done
    "$dump" "$work/uc.pcap" | grep -q UC_RDMA_WRITE_MIDDLE || fail "uc.pcap: no UC_RDMA_WRITE_MIDDLE"
    "$dump" "$work/uc-send.pcap" | grep -q UC_SEND_LAST || fail "uc-send.pcap: no UC_SEND_LAST"
    [ -f "$oracle" ] || echo "note: oracle not found at $oracle; checked with uroce-dump only" ;;
  all-sizes)
    run_ok write_bw --loopback --verify -a -n 20
    [ "$(row_count)" = 23 ] || fail "-a should give 23 rows (2 .. 2^23), got $(row_count)" ;;
  json)
    run_ok send_bw --loopback --verify -n 100 --report_gbits --out_json_file "$work/r.json"
    grep -q "BW average\[Gb/sec\]" "$out" || fail "--report_gbits header missing"
    /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d['results']; assert r['MsgSize']==65536 and r['n_iterations']==100 and r['BW_average']>0 and d['test_info']['test']=='Send_BW_Test', d" "$work/r.json" \
      || fail "bad JSON results"
    /usr/bin/python3 -c "import json,sys; assert 'cc' not in json.load(open(sys.argv[1]))" "$work/r.json" \
      || fail "--cc none with no CE marks: no cc object"
    run_ok write_bw --loopback --verify -n 100 -q 2 --cc dcqcn --out_json_file "$work/cc.json"
    /usr/bin/python3 -c "
import json, sys
cc = json.load(open(sys.argv[1]))['cc']
for side in ('client', 'server'):
    s = cc[side]
    assert s['algorithm'] == 'dcqcn' and s['line_rate_mbps'] > 0 and len(s['qps']) == 2, s
    for q in s['qps']:
        assert q['rate_mbps'] > 0 and 0 <= q['alpha'] <= 1 and q['cnps_received'] >= 0, q
" "$work/cc.json" || fail "--out_json_file lacks the per-QP cc stats" ;;
  raw)
    run_ok raw_bw --loopback --verify -n 20000
    [ "$(row_count)" = 1 ] || fail "raw_bw: expected one result row"
    grep -qE '^ 1514 +20000 ' "$out" || fail "raw_bw: 65536 should clamp to the 1514-byte frame of MTU 1500"
    run_ok raw_bw --loopback --verify -n 2000 -s 9014 -m 4096
    grep -qE '^ 9014 +2000 ' "$out" || fail "raw_bw: 9014-byte frames on the jumbo link"
    run_ok raw_lat --loopback --verify -n 2000 -s 10
    grep -qE '^ 64 +2000 ' "$out" || fail "raw_lat: 10 bytes should clamp to a 64-byte frame"
    # --raw-acks: each frame behind an ACK-sized one, both ways (2 x 2000)
    run_ok raw_lat --loopback --verify -n 2000 -s 82 --raw-acks
    grep -qE '^ 82 +2000 ' "$out" || fail "raw_lat --raw-acks: expected 2000 round trips of 82 bytes"
    grep -qx " uroce: 82 B: 4000 ACK-sized frames received" "$out" || fail "raw_lat --raw-acks: not 4000 ACK-sized frames" ;;
  usage-errors)
    for args in "" "nosuch_bw --loopback" "write_bw --loopback -m 1000" "write_bw --loopback -n 1" "write_bw --bogus"; do
      timeout 30 "$perf" $args >"$out" 2>&1
      rc=$?
      [ $rc = 2 ] || fail "uroce-perf $args: exit $rc, expected 2"
    done
    timeout 30 "$perf" write_bw >"$out" 2>&1
    [ $? = 2 ] && grep -q "loopback" "$out" || fail "client/server mode should explain it needs --dev and --ip, or --loopback"
    for case in "--loopback --dev net_null0|takes no --dev" "--dev net_null0 --ip 300.1.1.1|not an IPv4" \
                "--dev net_null0 --ip 10.0.0.1 --mac zz|not a MAC" "--loopback -x 3|valid indexes 0..2" \
                "--loopback --idle-sleep-us 2000000|idle-sleep-us" "--loopback -R|no connection manager between them" \
                "--loopback --vlan 5|they go with --dev" "--daemon /nonexistent --pcp 1|they go with --dev" \
                "--dev net_null0 --ip 10.0.0.1 --vlan 4095|--vlan" "--dev net_null0 --ip 10.0.0.1 --pcp 8|--pcp"; do
      timeout 30 "$perf" send_bw ${case%%|*} >"$out" 2>&1
      rc=$?
      [ $rc = 2 ] && grep -q -- "${case##*|}" "$out" || fail "send_bw ${case%%|*}: exit $rc, expected 2 and '${case##*|}'"
    done
    # perftest's dependencies between -t, -Q, -l and -n: a clear error, or
    # adjusted as perftest adjusts them, never a sender waiting forever.
    for case in "-n 1000 -l 200 -t 128|does not fit the send queue" "-n 1024 -l 64 -Q 100|multiple of -Q" \
                "-n 1000 -l 64|multiple of -l"; do
      timeout 30 "$perf" write_bw --loopback ${case%%|*} >"$out" 2>&1
      rc=$?
      [ $rc = 2 ] && grep -q -- "${case##*|}" "$out" || fail "write_bw ${case%%|*}: exit $rc, expected 2 and '${case##*|}'"
    done
    timeout 30 "$perf" raw_bw --dev net_null0 --ip 10.0.0.1 --vlan 5 >"$out" 2>&1
    [ $? = 2 ] && grep -q "raw_bw and raw_lat send plain frames, untagged" "$out" || fail "raw_bw --vlan should be a usage error"
    timeout 30 "$perf" write_lat --loopback --raw-acks >"$out" 2>&1
    [ $? = 2 ] && grep -q "raw_lat only" "$out" || fail "--raw-acks outside raw_lat should be a usage error"
    timeout 30 "$perf" write_lat --loopback -l 4 >"$out" 2>&1
    [ $? = 2 ] && grep -q "BW tests only" "$out" || fail "write_lat -l 4 should be a usage error"
    # A server with its client (a raw connection that says nothing, so the
    # server waits in the exchange): a second client is refused, as by
    # perftest, which closes its listening socket once it has its client.
    port=$((20000 + $$ % 20000))
    timeout 30 "$perf" write_bw --dev net_null0 --ip 10.0.0.1 -p $port --timeout 5 >"$out" 2>&1 &
    srv=$!
    connected=
    for _ in $(seq 100); do
      exec 7<>/dev/tcp/127.0.0.1/$port 2>/dev/null && { connected=1; break; }
      sleep 0.1
    done
    [ -n "$connected" ] || { kill $srv 2>/dev/null; wait $srv; fail "the server never listened on TCP port $port"; }
    sleep 0.3  # the server takes its client
    if bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>"$work/second.err"; then
      kill $srv 2>/dev/null; wait $srv; fail "a second client connected to a server busy with its first"
    fi
    grep -q "Connection refused" "$work/second.err" || { kill $srv; wait $srv; fail "a second client: $(cat "$work/second.err")"; }
    exec 7>&-
    wait $srv
    run_ok write_bw --loopback --verify -n 1000 -Q 200 -t 128
    grep -q "CQ Moderation   : 128" "$out" || fail "-Q above -t should be clamped to -t (perftest)"
    run_ok write_bw --loopback --verify -n 1024 -l 64
    grep -q "CQ Moderation   : 64" "$out" || fail "-l 64 should make the CQ moderation 64 (perftest)" ;;
  pcap)
    run_ok write_bw --loopback --verify -n 20 -s 5000 --pcap "$work/perf.pcap"
    run_ok read_bw --loopback --verify -n 20 -s 3000 --pcap "$work/read.pcap"
    run_ok atomic_bw --loopback --verify -n 20 --pcap "$work/atomic.pcap"
    for p in perf read atomic; do
      "$dump" "$work/$p.pcap" >"$out" 2>&1 || fail "uroce-dump rejects $p.pcap"
      grep -qE "valid: +[1-9]" "$out" || fail "$p.pcap has no valid RoCE packets"
      if [ -f "$oracle" ]; then
        /usr/bin/python3 "$oracle" "$work/$p.pcap" -q >"$out" 2>&1 || fail "the oracle rejects $p.pcap"
      fi
    done
    [ -f "$oracle" ] || echo "note: oracle not found at $oracle; checked with uroce-dump only" ;;
  cc)
    # --cc / --cc-param / --cc-config, and the per-QP counters at the end
    cfg=$(cd "$(dirname "$0")/../../config" && pwd)
    run_ok write_bw --loopback --verify -n 200 -q 2 --cc dcqcn --cc-param rpg_ai_rate=10 --cc-param line_rate_mbps=25000
    [ "$(grep -c "^ uroce cc (client): dcqcn, line rate 25000 Mb/s" "$out")" = 1 ] || fail "no client cc line"
    grep -q "^ uroce cc (server): dcqcn" "$out" || fail "no server cc line"
    [ "$(grep -cE "^  qp 0x[0-9a-f]{6}: rate [0-9.]+ Mb/s.* alpha .* CNPs sent [0-9]+ received [0-9]+ \| CE marks [0-9]+" "$out")" = 4 ] \
      || fail "expected a counter line for each of 2 QPs on both sides"
    run_ok read_bw --loopback --verify -n 100 --cc-config "$cfg/dcqcn-paper.conf"
    grep -q "^ uroce cc (client): dcqcn, line rate 40000 Mb/s" "$out" || fail "dcqcn-paper.conf not applied"
    run_ok write_bw --loopback --verify -n 100 --cc-config "$cfg/dcqcn-paper-10g.conf"
    grep -q "^ uroce cc (client): dcqcn, line rate 10000 Mb/s" "$out" || fail "dcqcn-paper-10g.conf not applied"
    run_ok write_bw --loopback --verify -n 100 --cc-config "$cfg/dcqcn-mlx5.conf"
    grep -q "^ uroce cc (client): dcqcn" "$out" || fail "dcqcn-mlx5.conf not applied"
    run_ok write_bw --loopback --verify -n 100 --cc none
    grep -q "uroce cc" "$out" && fail "--cc none with no CE marks prints no cc lines"
    for args in "--cc dctcp" "--cc dcqcn --cc-param rpg_ai_rat=5" "--cc dcqcn --cc-param dce_tcp_g=2000" \
                "--cc dcqcn --cc-param rpg_ai_rate" "--cc-config /nonexistent.conf"; do
      timeout 30 "$perf" write_bw --loopback $args >"$out" 2>&1
      rc=$?
      [ $rc = 2 ] || fail "uroce-perf $args: exit $rc, expected 2"
    done
    grep -q "cannot read congestion-control file /nonexistent.conf" "$out" || fail "no message for a missing file" ;;
  lat-remote-address)
    # RDMA in the latency tests goes exactly to the address the peer sent
    # (perftest's write_lat spins on the last byte of that region; found
    # against rxe: uroce wrote `size` bytes past it, out of the peer's MR).
    for t in write_lat read_lat; do
      run_ok $t --loopback --verify -n 5 -s 5000 --pcap "$work/$t.pcap"
      va_of() { sed -n "s/^ $1 address: .*VAddr 0x\([0-9a-f]*\).*/\1/p" "$out"; }
      loc=$(va_of local) rem=$(va_of remote)
      [ -n "$loc" ] && [ -n "$rem" ] || fail "$t: no local/remote VAddr in the banner"
      "$dump" "$work/$t.pcap" >"$work/$t.txt" || fail "$t: uroce-dump rejects the capture"
      targets=$(grep -o 'RETH(va=0x[0-9a-f]*' "$work/$t.txt" | sed 's/.*va=0x0*//' | sort -u)
      [ -n "$targets" ] || fail "$t: no RETH in the capture"
      for v in $targets; do
        [ "$((16#$v))" = "$((16#$rem))" ] || [ "$((16#$v))" = "$((16#$loc))" ] ||
          fail "$t: RDMA to 0x$v, but the exchanged addresses are 0x$loc and 0x$rem"
      done
    done
    # perftest's write_lat: the server writes first (its client polls first),
    # and the marker in the last byte is (char)++scnt, so 0 after 255.
    run_ok write_lat --loopback --verify -n 260 -s 64 --pcap "$work/wl.pcap"
    /usr/bin/python3 - "$work/wl.pcap" <<'PY' || fail "write_lat: wrong order or markers (see above)"
import struct, sys
d = open(sys.argv[1], "rb").read()
off, writes = 24, []
while off + 16 <= len(d):
    n = struct.unpack_from("<I", d, off + 8)[0]
    f = d[off + 16:off + 16 + n]
    off += 16 + n
    if len(f) > 58 and f[23] == 17 and f[42] == 0x0A:  # BTH opcode: RC RDMA WRITE ONLY
        writes.append((f[29], f[-5]))  # last octet of the source IP, last payload byte
if not writes or writes[0][0] != 1:
    sys.exit(f"the first WRITE must come from the server (192.168.77.1): {writes[:2]}")
client = [m for src, m in writes if src == 2]
want = [(i + 1) & 0xFF for i in range(260)]
if client != want:
    sys.exit(f"client markers {client[250:260]}, expected {want[250:260]}")
PY
    ;;
  flags)
    # perftest flags that change the run (options.cpp's table; perf-options checks the rest).
    col() { awk -v c="$1" '/^ [0-9]+ +[0-9]+ /{print $c; exit}' "$out"; }
    # -b: perftest's row is the sum of both directions' rates over this
    # side's own count; --report-both adds each direction's table.
    run_ok write_bw --loopback --verify -n 300 -b --report-both
    [ "$(row_count)" = 3 ] || fail "-b --report-both: expected the sum, local and remote rows"
    grep -qx " Local results: " "$out" && grep -qx " Remote results: " "$out" || fail "--report-both: no Local/Remote titles"
    awk '/^ [0-9]+ +[0-9]+ /{ n++; it[n] = $2; avg[n] = $4 }
         END { d = avg[1] - avg[2] - avg[3]; exit !(n == 3 && it[1] == 300 && it[2] == 300 && it[3] == 300 &&
                                                    avg[2] > 0 && avg[3] > 0 && d < 0.021 && d > -0.021) }' "$out" \
      || fail "-b: every row should count -n's 300, and the sum's average be local + remote"
    run_ok write_bw --loopback --verify -n 300 -N
    [ "$(col 3)" = 0.00 ] || fail "-N: the peak should be 0.00"
    run_ok write_lat --loopback --verify -D 1
    [ "$(col 2)" -gt 1000 ] || fail "write_lat -D 1 should run for a second, not -n's 1000 iterations"
    run_ok atomic_lat --loopback --verify -n 200 -A CMP_AND_SWAP
    grep -qE '^ 8 +200 ' "$out" || fail "atomic_lat: expected a row of 200 8-byte round trips"
    grep -q "Atomic CMP_AND_SWAP Latency Test" "$out" || fail "atomic_lat -A CMP_AND_SWAP: no perftest banner ('Atomic CMP_AND_SWAP Latency Test')"
    run_ok send_bw --loopback --verify -n 300 -q 2 --use-srq
    run_ok read_lat --loopback --verify -n 100 -x 2 -d mydev0
    grep -q "Device         : mydev0" "$out" || fail "-d should name the device in the banner"
    grep -q "GID: 253:00:00:119" "$out" || fail "-x 2 should use the IPv6 GID (fd00:77::)"
    run_ok write_bw --loopback --verify -n 100 -x 0
    grep -q "GID: 254:128:" "$out" || fail "-x 0 should use the link-local GID (fe80::)"
    run_ok write_bw --loopback --verify -n 100
    grep -q "GID index       : 1" "$out" || fail "without -x the IPv4 address (GID 1) should be used"
    run_ok write_bw --loopback --verify -n 300 --reversed
    grep -qE "^ uroce: 300 packets sent, 19200 received" "$out" || fail "--reversed: the server should send"
    run_ok write_bw --loopback --verify -n 1000 -s 4096 --rate_limit 20 --rate_units M --rate_limit_type SW --burst_size 8
    awk '/^ 4096 /{exit !($4 < 22)}' "$out" || fail "--rate_limit 20 MiB/s exceeded"
    timeout 30 "$perf" write_bw --loopback -n 100 -w 1000000 >"$out" 2>&1
    [ $? = 1 ] && grep -q "Error: BW result is below bw limit" "$out" || fail "-w above the result should fail the run"
    timeout 30 "$perf" write_bw --loopback -s 4096 --run_infinitely -D 1 >"$out" 2>&1 &
    pid=$!
    sleep 3.5
    kill -INT $pid
    wait $pid || fail "--run_infinitely should end with 0 on SIGINT"
    [ "$(row_count)" -ge 2 ] || fail "--run_infinitely -D 1 should print a row a second"
    # Each row is its own second: a count that no earlier row has (a
    # reprinted row would repeat it) and a message rate that is that
    # count over one second.
    awk '/^ 4096 +[0-9]+ /{ n++; if ($2 in seen) bad = 1; seen[$2] = 1
                             r = $2 / ($5 * 1e6); if (r < 0.9 || r > 1.1) bad = 1 }
         END { exit !(n >= 2 && !bad) }' "$out" \
      || fail "--run_infinitely: each row should count its own -D interval"
    timeout 30 "$perf" write_lat --loopback --odp -n 5 >"$out" 2>&1 || fail "--odp should be ignored"
    grep -q "^uroce-perf: --odp ignored: " "$out" || fail "--odp: no line saying it is ignored" ;;
  *) echo "unknown case $case_"; exit 2 ;;
esac
echo "ok: $case_"
