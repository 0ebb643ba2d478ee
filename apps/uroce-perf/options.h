// SPDX-License-Identifier: BSD-3-Clause
// uroce-perf's options: perftest's flags with perftest's meaning and
// defaults, plus uroce's own (--dev, --ip, --mac, --eal, --pcap, --verify,
// --loopback, --timeout, --cc*, --raw-acks).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "uroce/cc/dcqcn.h"

namespace uroce::perf {

enum class Verb { send, write, read, atomic, raw };
enum class Kind { bw, lat };

struct Options {
  std::string test;  // write_bw, read_lat, ..., raw_bw, raw_lat
  Verb verb = Verb::write;
  Kind kind = Kind::bw;
  bool all_sizes = false;           // -a: 2 .. 2^23
  uint64_t size = 65536;            // -s (perftest: 65536 for BW, 2 for LAT)
  uint64_t iters = 5000;            // -n (5000 BW, 1000 LAT)
  uint32_t duration = 0;            // -D seconds (0: iterations)
  uint32_t mtu = 0;                 // -m (0: the port's largest)
  uint32_t tx_depth = 128;          // -t
  uint32_t cq_mod = 100;            // -Q
  uint32_t num_qps = 1;             // -q
  uint32_t post_list = 1;           // -l
  uint32_t inline_size = 0;         // -I
  uint8_t qp_timeout = 14;          // -u
  int gid_index = 0;                // -x
  uint16_t tcp_port = 18515;        // -p
  bool cmp_and_swap = false;        // -A CMP_AND_SWAP (default FETCH_AND_ADD)
  bool report_gbits = false;        // --report_gbits
  bool out_json = false;            // --out_json
  std::string out_json_file;        // --out_json_file
  std::string server;               // positional: client mode when set
  // uroce's own.
  std::string dev;                  // --dev PCI address or vdev string
  std::string ip;                   // --ip
  std::string mac;                  // --mac
  std::string eal;                  // --eal "ARGS"
  std::string pcap;                 // --pcap FILE
  bool verify = false;              // --verify
  bool loopback = false;            // --loopback
  bool raw_acks = false;            // --raw-acks: raw_lat with an ACK-sized frame ahead of each frame
  uint32_t timeout_s = 10;          // --timeout: connect, each exchange step, ARP, a silent peer
  // Congestion control: --cc, then --cc-config FILE, then each --cc-param.
  cc::CcConfig cc;
};

// Parses argv; on a usage error prints it and returns the exit status to
// use (2); 0 for --help/--version (already printed); -1 to go on.
int parse_options(int argc, char** argv, Options& o);

// The message sizes to run: -a gives 2..2^23 (perftest), else -s.
std::vector<uint64_t> sizes(const Options& o);

}  // namespace uroce::perf
