// SPDX-License-Identifier: BSD-3-Clause
// uroce-pingpong's options: ibv_rc_pingpong's flags with its meaning and
// defaults (ibv_ud_pingpong's with --ud, ibv_srq_pingpong's with --srq),
// plus uroce's own (--dev, --ip, --mac, --vlan, --pcp, --eal, --pcap,
// --timeout).
#pragma once

#include <cstdint>
#include <string>

#include <infiniband/verbs.h>

namespace uroce::pingpong {

// Which rdma-core example we stand in for.
enum class Mode { rc, uc, ud, srq };

struct Options {
  Mode mode = Mode::rc;       // --uc, --ud, --srq
  // rc_pingpong's.
  uint16_t tcp_port = 18515;  // -p
  std::string ib_dev;         // -d: names our device (default "uroce0")
  int ib_port = 1;            // -i: must be 1 (one port per device)
  uint32_t size = 4096;       // -s (ud_pingpong: 2048)
  uint32_t mtu = 1024;        // -m (--ud: the port's active MTU, which bounds -s)
  ibv_mtu mtu_enum = IBV_MTU_1024;
  uint32_t rx_depth = 500;    // -r
  uint32_t iters = 1000;      // -n (srq: over all QPs)
  uint32_t num_qp = 16;       // -q: srq_pingpong's QPs on one SRQ
  int sl = 0;                 // -l: accepted; RoCEv2 has no SL on the wire
  bool events = false;        // -e: sleep on a completion channel
  int gid_idx = 1;            // -g (rc_pingpong: none; RoCE needs one): 1 is the --ip address
  bool chk = false;           // -c
  std::string server;         // positional: client mode when set
  // uroce's own.
  std::string dev;            // --dev
  std::string ip;             // --ip
  std::string mac;            // --mac
  int vlan = -1, pcp = -1;    // --vlan, --pcp: 802.1Q tag of the port's frames (-1: not given)
  std::string eal;            // --eal "ARGS"
  std::string pcap;           // --pcap FILE
  std::string daemon;         // --daemon SOCKET: a client of uroced instead of --dev/--ip
  bool cm = false;            // --cm: connect through the CM on the wire (RC), no TCP exchange
  uint32_t timeout_ms = 10000;  // --timeout: connect, exchange, ARP, a stalled run
  uint32_t accept_timeout_ms = 0;  // --accept-timeout: 0 = the server waits for a client forever
};

// Parses argv; on a usage error prints it and returns the exit status to
// use (2); 0 for --help/--version (already printed); -1 to go on.
int parse_options(int argc, char** argv, Options& o);

}  // namespace uroce::pingpong
