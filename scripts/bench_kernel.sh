#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# What a user without RDMA would run instead, on loopback, client on CPU 0
# and server on CPU 1:
# sockperf UDP/TCP ping-pong, iperf3, libfabric's tcp provider, UCX over
# tcp. Prints one summary line per tool. Needs: apt-get install sockperf
# iperf3 libfabric-bin ucx-utils.
set -uo pipefail
pair() {  # pair "SERVER CMD" "CLIENT CMD": the client's output
  taskset -c 1 timeout 30 bash -c "$1" > /tmp/uroce-bench-peer.txt 2>&1 &
  local s=$!
  sleep 1
  taskset -c 0 timeout 30 bash -c "$2" 2>&1
  kill $s 2>/dev/null; wait $s 2>/dev/null
}
echo "# sockperf UDP ping-pong 64 B (half RTT, usec)"
pair "sockperf sr -i 127.0.0.1 -p 11121" "sockperf pp -i 127.0.0.1 -p 11121 -t 4 -m 64" | grep -E "avg-latency|percentile 50.000|percentile 99.000 "
echo "# sockperf TCP ping-pong 64 B (half RTT, usec)"
pair "sockperf sr --tcp -i 127.0.0.1 -p 11122" "sockperf pp --tcp -i 127.0.0.1 -p 11122 -t 4 -m 64" | grep -E "avg-latency|percentile 50.000|percentile 99.000 "
echo "# iperf3 TCP, one stream"
pair "iperf3 -s -p 5298 -1" "iperf3 -c 127.0.0.1 -p 5298 -t 4 -f g" | grep -E "receiver"
echo "# fi_pingpong tcp msg: 8 B and 64 KB"
pair "fi_pingpong -p tcp -e msg -I 10000 -S 8" "fi_pingpong -p tcp -e msg -I 10000 -S 8 127.0.0.1" | tail -2
pair "fi_pingpong -p tcp -e msg -I 2000 -S 65536" "fi_pingpong -p tcp -e msg -I 2000 -S 65536 127.0.0.1" | tail -1
echo "# ucx_perftest UCX_TLS=tcp: tag_lat 8 B, ucp_put_bw 64 KB"
export UCX_TLS=tcp UCX_NET_DEVICES=lo
pair "ucx_perftest -p 13397" "ucx_perftest 127.0.0.1 -p 13397 -t tag_lat -s 8 -n 100000 -f" | tail -1
pair "ucx_perftest -p 13398" "ucx_perftest 127.0.0.1 -p 13398 -t ucp_put_bw -s 65536 -n 20000 -f" | tail -1
