// SPDX-License-Identifier: BSD-3-Clause
// uroce-perf's options: perftest's flags with perftest's meaning and
// defaults, plus uroce's own (--dev, --ip, --mac, --eal, --pcap, --verify,
// --loopback, --timeout, --cc*, --raw-acks).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "uroce/cc/dcqcn.h"
#include "uroce/verbs/device_config.h"

namespace uroce::perf {

enum class Verb { send, write, read, atomic, raw };
enum class Kind { bw, lat };
// What a perftest flag does in uroce-perf (the table in options.cpp).
enum class FlagUse { implemented, ignored, not_yet };
// -c: perftest's connection types. uroce runs RC, UC and UD; XRC, DC and
// SRD are refused with the reason.
enum class Conn { rc, uc, ud, xrc, dc, srd };
// --output: perftest prints only this one figure per size when set.
enum class OutputMode { table, bandwidth, message_rate, latency };

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
  int gid_index = -1;               // -x (-1: perftest's best GID, the address)
  uint16_t tcp_port = 18515;        // -p
  bool cmp_and_swap = false;        // -A CMP_AND_SWAP (default FETCH_AND_ADD)
  bool report_gbits = false;        // --report_gbits
  bool out_json = false;            // --out_json
  std::string out_json_file;        // --out_json_file
  std::string server;               // positional: client mode when set
  // perftest flags beyond the basic shape (perftest_parameters.c meanings).
  bool bidirectional = false;       // -b
  Conn conn = Conn::rc;             // -c RC|UC|UD|XRC|DC|SRD
  bool use_event = false;           // -e (completion channels)
  int comp_vector = 0;              // -X
  // uroce's own: DeviceConfig::idle_sleep_max_us of the engine thread (-e).
  uint32_t idle_sleep_us = DeviceConfig{}.idle_sleep_max_us;
  // --loopback: 2 runs the server device's engine on a thread of its own
  // (its own lcore) while this thread drives the client's.
  uint32_t engine_lcores = 1;
  std::string ib_dev;               // -d: the device name printed in the banner
  uint32_t ib_port = 1;             // -i
  uint32_t rx_depth = 512;          // -r
  uint32_t out_reads = 0;           // -o (0: the device's maximum)
  uint32_t margin_s = 2;            // -f: seconds excluded at each end of a -D run
  bool no_peak = false;             // -N
  bool report_cycles = false;       // -C
  bool report_histogram = false;    // -H
  bool report_unsorted = false;     // -U
  bool report_both = false;         // --report-both
  OutputMode output = OutputMode::table;  // --output
  bool run_infinitely = false;      // --run_infinitely
  bool reversed = false;            // --reversed
  uint8_t sl = 0;                   // -S
  int tos = -1;                     // -T (-1: not set)
  int tclass = -1;                  // --tclass (-1: not set)
  uint8_t hop_limit = 64;           // -L
  double limit_bw = 0;              // -w: fail the run below this BW (report unit)
  double limit_msgrate = 0;         // -y: fail the run below this rate (Mpps)
  double rate_limit = 0;            // --rate_limit (in rate_units), paced in software
  char rate_units = 'g';            // --rate_units M|g|p
  bool use_srq = false;             // --use-srq
  bool ipv6 = false;                // --ipv6
  bool cpu_util = false;            // --cpu_util
  bool use_hugepages = false;       // --use_hugepages
  bool perform_warm_up = false;     // --perform_warm_up
  bool mr_per_qp = false;           // --mr_per_qp
  std::string source_ip;            // --source_ip
  uint32_t latency_gap_us = 0;      // --latency_gap
  bool json_default_file = false;   // --out_json without --out_json_file: perftest_out.json
  // Set by the parser beyond perftest's own fields.
  bool iters_given = false;         // -n on the command line
  bool cpu_freq_f = false;          // -F (uroce never checks cpufreq: nothing to silence)
  uint32_t burst_size = 0;          // --burst_size: WRs per paced burst (0: -t)
  bool rate_limited = false;        // --rate_limit given (paced in software)
  // uroce's own.
  std::string dev;                  // --dev PCI address or vdev string
  std::string ip;                   // --ip
  std::string mac;                  // --mac
  int vlan = -1, pcp = -1;          // --vlan, --pcp: 802.1Q tag of the port's frames (-1: not given)
  std::string eal;                  // --eal "ARGS"
  std::string pcap;                 // --pcap FILE
  bool verify = false;              // --verify
  bool loopback = false;            // --loopback
  bool rdma_cm = false;             // -R: the conversation and the test's QPs over the connection manager
  std::string daemon;               // --daemon SOCKET: both ends as clients of uroced
  bool raw_acks = false;            // --raw-acks: raw_lat with an ACK-sized frame ahead of each frame
  bool resources = false;           // --resources: a "resources:" line after each --run_infinitely row
  uint32_t timeout_s = 10;          // --timeout: connect, each exchange step, ARP, a silent peer
  // -c UD with -a: the largest size, the path MTU once known (cap_ud_sizes).
  uint64_t ud_max_size = 0;
  // Congestion control: --cc, then --cc-config FILE, then each --cc-param.
  cc::CcConfig cc;
};

// One perftest 4.5 flag: its spellings, the tests whose usage lists it
// (bits of test_bit), and what uroce-perf does with it.
struct PerftestFlag {
  char short_name;          // 0: long only
  const char* long_name;
  const char* alias;        // a second long spelling perftest's getopt takes, or nullptr
  bool takes_value;
  uint32_t tests;           // bitmask over test_bit()
  FlagUse use;
  const char* why;          // ignored / not_yet: the reason printed
};
const std::vector<PerftestFlag>& perftest_flags();
// The bit of a test name (write_bw, atomic_lat, raw_bw, ...) in PerftestFlag::tests; 0 if unknown.
uint32_t test_bit(const std::string& test);
// The perftest binary whose usage a test follows (ib_write_bw, raw_ethernet_lat, ...).
std::string perftest_binary(const std::string& test);

// Parses argv; on a usage error prints it and returns the exit status to
// use (2); 0 for --help/--version (already printed); -1 to go on.
int parse_options(int argc, char** argv, Options& o);

// The message sizes to run: -a gives 2..2^23 (perftest), else -s; with
// -c UD no size above the path MTU (cap_ud_sizes).
std::vector<uint64_t> sizes(const Options& o);

// -c UD: a datagram is one packet, so perftest caps the message size at
// the path MTU once it is known: -s above it becomes the MTU, and -a stops
// there (with perftest's two lines on stderr). Nothing for RC.
void cap_ud_sizes(Options& o, uint32_t path_mtu);

}  // namespace uroce::perf
