// SPDX-License-Identifier: BSD-3-Clause
// perftest's flags as a table: every flag of perftest 4.5's usage texts
// (tests/data/perftest/usage/), the tests that list it, and what uroce-perf
// does with it. perftest's getopt takes every flag in every test; some are
// then refused for a test (-b in a latency test), the rest are silently
// unused. uroce-perf does the same, except that it says so on stderr.
#include "options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "uroce/wire/eth.h"
#include "uroce/wire/ip_addr.h"

namespace uroce::perf {
namespace {

struct TestSpec {
  Verb verb;
  Kind kind;
  uint32_t bit;
  const char* binary;
};

enum : uint32_t {
  kSB = 1, kWB = 2, kRB = 4, kAB = 8, kSL = 16, kWL = 32, kRL = 64, kAL = 128, kXB = 256, kXL = 512,
  kIbBw = kSB | kWB | kRB | kAB,
  kIb = kIbBw | kSL | kWL | kRL | kAL,
  kRaw = kXB | kXL,
  kAll = kIb | kRaw,
  kBwUsage = kIbBw | kXB,           // -l, -Q, -t, -w, -y, rate limiter, ...
  kLatUsage = kSL | kWL | kRL | kAL | kXL,  // -C, -H, -U, --latency_gap
  kSendUsage = kSB | kSL | kRaw,     // -r, --use-srq, -g, -M
};

const std::map<std::string, TestSpec> kTests = {
    {"send_bw", {Verb::send, Kind::bw, kSB, "ib_send_bw"}},
    {"write_bw", {Verb::write, Kind::bw, kWB, "ib_write_bw"}},
    {"read_bw", {Verb::read, Kind::bw, kRB, "ib_read_bw"}},
    {"atomic_bw", {Verb::atomic, Kind::bw, kAB, "ib_atomic_bw"}},
    {"send_lat", {Verb::send, Kind::lat, kSL, "ib_send_lat"}},
    {"write_lat", {Verb::write, Kind::lat, kWL, "ib_write_lat"}},
    {"read_lat", {Verb::read, Kind::lat, kRL, "ib_read_lat"}},
    {"atomic_lat", {Verb::atomic, Kind::lat, kAL, "ib_atomic_lat"}},
    {"raw_bw", {Verb::raw, Kind::bw, kXB, "raw_ethernet_bw"}},
    {"raw_lat", {Verb::raw, Kind::lat, kXL, "raw_ethernet_lat"}},
};

constexpr FlagUse I = FlagUse::implemented, G = FlagUse::ignored, Y = FlagUse::not_yet;
constexpr const char* kCx = "a ConnectX (mlx5) offload uroce does not have";
constexpr const char* kCm = "-z alone (the conversation over rdma_cm, the QPs connected from records) is not in "
                            "uroce-perf; -R does both over the connection manager, as perftest's -R does";
constexpr const char* kPlainFrames = "uroce-perf's raw frames are plain Ethernet frames (no IP, UDP or TCP header, "
                                     "no VLAN tag)";

// Short, long, second long spelling, value, tests listing it, use, why.
const std::vector<PerftestFlag> kFlags = {
    {'a', "all", nullptr, false, kSB | kWB | kRB | kSL | kWL | kRL, I, nullptr},
    {'b', "bidirectional", nullptr, false, kBwUsage, I, nullptr},
    {'c', "connection", nullptr, true, kIb, I, nullptr},
    {0, "log_dci_streams", nullptr, true, kIb, G, "DC streams are a ConnectX DC feature; uroce has no DC"},
    {0, "log_active_dci_streams", nullptr, true, kIb, G, "DC streams are a ConnectX DC feature; uroce has no DC"},
    {0, "aes_xts", nullptr, false, kIb, G, "AES-XTS encryption is a ConnectX crypto offload; data goes in clear"},
    {0, "encrypt_on_tx", nullptr, false, kIb, G, "AES-XTS encryption is a ConnectX crypto offload"},
    {0, "sig_before", nullptr, false, kIb, G, "AES-XTS signatures are a ConnectX crypto offload"},
    {0, "aes_block_size", nullptr, true, kIb, G, "AES-XTS encryption is a ConnectX crypto offload"},
    {0, "data_enc_keys_number", nullptr, true, kIb, G, "AES-XTS encryption is a ConnectX crypto offload"},
    {0, "kek_path", nullptr, true, kIb, G, "AES-XTS encryption is a ConnectX crypto offload"},
    {0, "credentials_path", nullptr, true, kIb, G, "AES-XTS encryption is a ConnectX crypto offload"},
    {0, "data_enc_key_app_path", nullptr, true, kIb, G, "AES-XTS encryption is a ConnectX crypto offload"},
    {'d', "ib-dev", nullptr, true, kAll, I, nullptr},
    {'D', "duration", nullptr, true, kAll, I, nullptr},
    {'e', "events", nullptr, false, kSB | kRB | kAB | kSL | kRL | kAL, I, nullptr},
    {'X', "vector", nullptr, true, kSB | kRB | kAB | kSL | kRL | kAL, I, nullptr},
    {'f', "margin", nullptr, true, kAll, I, nullptr},
    {'F', "CPU-freq", nullptr, false, kAll, I, nullptr},
    {'g', "mcg", nullptr, false, kSendUsage, Y, "multicast groups are not in uroce yet"},
    {'h', "help", nullptr, false, kAll, I, nullptr},
    {'i', "ib-port", nullptr, true, kAll, I, nullptr},
    {'I', "inline_size", nullptr, true, kSB | kWB | kSL | kWL | kRaw, I, nullptr},
    {'l', "post_list", nullptr, true, kBwUsage, I, nullptr},
    {0, "recv_post_list", nullptr, true, kBwUsage, G,
     "uroce-perf posts receives one at a time (a receive post is a function call, not a doorbell)"},
    {'L', "hop_limit", nullptr, true, kAll, I, nullptr},
    {'m', "mtu", nullptr, true, kAll, I, nullptr},
    {'M', "MGID", nullptr, true, kSendUsage, Y, "multicast groups are not in uroce yet"},
    {'n', "iters", nullptr, true, kAll, I, nullptr},
    {'N', "noPeak", nullptr, false, kBwUsage, I, nullptr},
    {'O', "dualport", nullptr, false, kIbBw, G, "a uroce device has one port; the test runs on it"},
    {'p', "port", nullptr, true, kAll, I, nullptr},
    {'q', "qp", nullptr, true, kBwUsage, I, nullptr},
    {'Q', "cq-mod", nullptr, true, kBwUsage, I, nullptr},
    {'r', "rx-depth", nullptr, true, kSendUsage, I, nullptr},
    {'R', "rdma_cm", nullptr, false, kIb, I, nullptr},
    {'s', "size", nullptr, true, kSB | kWB | kRB | kSL | kWL | kRL | kRaw, I, nullptr},
    {'S', "sl", nullptr, true, kAll, I, nullptr},
    {'t', "tx-depth", nullptr, true, kBwUsage, I, nullptr},
    {'T', "tos", nullptr, true, kAll, I, nullptr},
    {'u', "qp-timeout", nullptr, true, kAll, I, nullptr},
    {'V', "version", nullptr, false, kAll, I, nullptr},
    {'w', "limit_bw", nullptr, true, kBwUsage, I, nullptr},
    {'W', "report-counters", nullptr, true, kAll, G,
     "it reads a ConnectX port's sysfs counters; uroce-perf prints the device's own counters at the end"},
    {'x', "gid-index", nullptr, true, kIb, I, nullptr},
    {'y', "limit_msgrate", nullptr, true, kBwUsage, I, nullptr},
    {'z', "com_rdma_cm", "comm_rdma_cm", false, kIb, Y, kCm},
    {0, "out_json", nullptr, false, kAll, I, nullptr},
    {0, "out_json_file", nullptr, true, kAll, I, nullptr},
    {0, "cpu_util", nullptr, false, kAll, G,
     "uroce polls: each engine keeps its core busy all the time, so the figure would always be 100%"},
    {0, "dlid", nullptr, true, kAll, G, "RoCE has no LIDs: packets are addressed by GID (IP address)"},
    {0, "dont_xchg_versions", nullptr, false, kIb, Y,
     "uroce-perf always exchanges versions and the MTU (give the flag to neither side)"},
    {0, "force-link", nullptr, true, kAll, I, nullptr},
    {0, "inline_recv", nullptr, true, kSB | kRB | kAB | kSL | kRL | kAL | kRaw, G,
     "inline receive is a ConnectX feature; uroce copies received data into the posted buffer"},
    {0, "use-srq", nullptr, false, kSendUsage, I, nullptr},
    {0, "ipv6", nullptr, false, kIb, I, nullptr},
    {'j', "source_ip", nullptr, true, kAll, I, nullptr},
    {0, "mmap", nullptr, true, kIb, G, "buffers in an mmap'd file are for P2P device memory; uroce's are DPDK memory"},
    {0, "mmap-offset", nullptr, true, kIb, G, "buffers in an mmap'd file are for P2P device memory"},
    {0, "mr_per_qp", nullptr, false, kBwUsage, I, nullptr},
    {0, "odp", nullptr, false, kAll, G, "on-demand paging: uroce registers pinned DPDK memory, which never pages"},
    {0, "output", nullptr, true, kAll, I, nullptr},
    {0, "use_old_post_send", nullptr, false, kAll, G, "uroce has one post_send (the ibv_post_send shape)"},
    {0, "perform_warm_up", nullptr, false, kAll, I, nullptr},
    {0, "pkey_index", nullptr, true, kAll, G, "RoCE uses the default P_Key; uroce has a single one"},
    {0, "report-both", nullptr, false, kBwUsage, I, nullptr},
    {0, "report_gbits", nullptr, false, kBwUsage, I, nullptr},
    {0, "report-per-port", nullptr, false, kIbBw, G, "a uroce device has one port (-O is ignored too)"},
    {0, "reversed", nullptr, false, kBwUsage, I, nullptr},
    {0, "run_infinitely", nullptr, false, kBwUsage, I, nullptr},
    {0, "retry_count", nullptr, true, kIb, G, "uroce-perf -R asks the CM for perftest's default, 7"},
    {0, "tclass", nullptr, true, kAll, I, nullptr},
    {0, "use_hugepages", nullptr, false, kAll, I, nullptr},
    {0, "wait_destroy", nullptr, true, kBwUsage, G, "uroce-perf frees its resources when the test ends"},
    {0, "disable_pcie_relaxed", nullptr, false, kBwUsage, G, "PCIe relaxed ordering is a NIC setting; uroce has no PCIe device"},
    {0, "burst_size", nullptr, true, kBwUsage, I, nullptr},
    {0, "typical_pkt_size", nullptr, true, kBwUsage, I, nullptr},
    {0, "rate_limit", nullptr, true, kBwUsage, I, nullptr},
    {0, "rate_units", nullptr, true, kBwUsage, I, nullptr},
    {0, "rate_limit_type", nullptr, true, kBwUsage, I, nullptr},
    {'o', "outs", nullptr, true, kRB | kAB | kRL | kAL, I, nullptr},
    {'A', "atomic_type", nullptr, true, kAB | kAL, I, nullptr},
    {'C', "report-cycles", nullptr, false, kLatUsage, I, nullptr},
    {'H', "report-histogram", "report-histogrm", false, kLatUsage, I, nullptr},
    {'U', "report-unsorted", nullptr, false, kLatUsage, I, nullptr},
    {0, "latency_gap", nullptr, true, kLatUsage, I, nullptr},
    // Raw Ethernet: uroce-perf's raw tests take both MACs from the ports
    // and the exchange, and decide the side by the SERVER argument.
    {'B', "source_mac", nullptr, true, kRaw, G, "uroce-perf takes this side's MAC from --mac or the port"},
    {'E', "dest_mac", nullptr, true, kRaw, G, "uroce-perf learns the peer's MAC by ARP over the exchanged address"},
    {'G', "use_rss", nullptr, false, kRaw, Y, "RSS over several raw queues is not in uroce-perf yet"},
    {'J', "dest_ip", nullptr, true, kRaw, Y, kPlainFrames},
    {'K', "dest_port", nullptr, true, kRaw, Y, kPlainFrames},
    {'k', "source_port", nullptr, true, kRaw, Y, kPlainFrames},
    {'Y', "ethertype", nullptr, true, kRaw, Y, "uroce-perf's raw frames carry a fixed EtherType"},
    {'Z', "server", nullptr, false, kRaw, G, "uroce-perf is the server without a SERVER argument"},
    {'P', "client", nullptr, false, kRaw, G, "uroce-perf is the client when given a SERVER argument"},
    {'v', "mac_fwd", nullptr, false, kRaw, Y, "MAC forwarding is not in uroce-perf yet"},
    {0, "vlan_en", nullptr, false, kRaw, Y, kPlainFrames},
    {0, "vlan_pcp", nullptr, true, kRaw, Y, kPlainFrames},
    {0, "flows", nullptr, true, kRaw, Y, kPlainFrames},
    {0, "flows_burst", nullptr, true, kRaw, Y, kPlainFrames},
    {0, "promiscuous", nullptr, false, kRaw, Y, "promiscuous and sniffer modes are not in uroce-perf yet"},
    {0, "sniffer", nullptr, false, kRaw, Y, "promiscuous and sniffer modes are not in uroce-perf yet"},
    {0, "reply_every", nullptr, true, kRaw, Y, "raw_lat answers every frame"},
    {0, "flow_label", nullptr, true, kRaw, Y, kPlainFrames},
    {0, "tcp", nullptr, false, kRaw, Y, kPlainFrames},
    {0, "raw_ipv6", nullptr, false, kRaw, Y, kPlainFrames},
    {0, "raw_mcast", nullptr, false, kXB, Y, "multicast is not in uroce-perf yet"},
    // In perftest's getopt table but not in its usage texts.
    {0, "remote_mac", nullptr, true, kRaw, G, "uroce-perf learns the peer's MAC by ARP over the exchanged address"},
    {0, "local_mac", nullptr, true, kRaw, G, "uroce-perf takes this side's MAC from --mac or the port"},
    {0, "remote_ip", nullptr, true, kRaw, Y, kPlainFrames},
    {0, "local_ip", nullptr, true, kRaw, Y, kPlainFrames},
    {0, "remote_port", nullptr, true, kRaw, Y, kPlainFrames},
    {0, "local_port", nullptr, true, kRaw, Y, kPlainFrames},
    {0, "use_cuda", nullptr, true, kAll, G, "GPU memory: uroce's buffers are host memory (perftest without CUDA ignores it too)"},
    {0, "use_cuda_bus_id", nullptr, true, kAll, G, "GPU memory: uroce's buffers are host memory"},
    {0, "use_rocm", nullptr, true, kAll, G, "GPU memory: uroce's buffers are host memory"},
    {0, "use_ooo", nullptr, false, kAll, G, "out-of-order data placement is a ConnectX feature"},
};

std::string spelling(const PerftestFlag& f) {
  return f.short_name ? std::string("-") + f.short_name : std::string("--") + f.long_name;
}

int usage(const std::string& what) {
  std::fprintf(stderr, "uroce-perf: %s\n", what.c_str());
  return 2;
}

// A flag given on the command line, in order.
struct Given {
  const PerftestFlag* flag;
  std::string value;
};

bool to_uint(const std::string& s, uint64_t lo, uint64_t hi, uint64_t& out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (s.empty() || *end || errno || s[0] == '-' || v < lo || v > hi) return false;
  out = v;
  return true;
}

bool to_double(const std::string& s, double& out) {
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return !s.empty() && !*end;
}

// What the parse knows beyond Options: which flags came, and their text.
struct Parse {
  Options& o;
  const TestSpec& spec;
  std::map<std::string, std::string> given;  // long name -> value ("" for a flag)
  std::string rate_limit_type;
  bool has(const char* name) const { return given.count(name) != 0; }
};

// -1 when fine, else the exit status (a message printed).
int number(const Given& g, uint64_t lo, uint64_t hi, uint64_t& out) {
  if (to_uint(g.value, lo, hi, out)) return -1;
  return usage(spelling(*g.flag) + " " + g.value + ": expected an integer in " + std::to_string(lo) + ".." +
               std::to_string(hi));
}

template <typename T>
int set_number(const Given& g, uint64_t lo, uint64_t hi, T& field) {
  uint64_t v = 0;
  const int rc = number(g, lo, hi, v);
  if (rc < 0) field = T(v);
  return rc;
}

// perftest's -s: a number, optionally followed by K or M.
int set_size(const Given& g, uint64_t& size) {
  std::string text = g.value;
  uint64_t factor = 1;
  if (!text.empty() && (text.back() == 'K' || text.back() == 'M')) {
    factor = text.back() == 'K' ? 1024 : 1024 * 1024;
    text.pop_back();
  }
  uint64_t v = 0;
  if (!to_uint(text, 1, uint64_t(1) << 31, v) || v * factor > (uint64_t(1) << 31) - 1)
    return usage("-s " + g.value + ": Message Size should be between 1 and 2147483647");
  size = v * factor;
  return -1;
}

// Applies one implemented flag to the options.
int apply(Parse& p, const Given& g) {
  Options& o = p.o;
  const std::string name = g.flag->long_name;
  const std::string& v = g.value;
  if (name == "all") return o.all_sizes = true, -1;
  if (name == "bidirectional") return o.bidirectional = true, -1;
  if (name == "events") return o.use_event = true, -1;
  if (name == "vector") return set_number(g, 0, 1 << 20, o.comp_vector);
  if (name == "connection") {
    static const std::map<std::string, Conn> kConn = {{"RC", Conn::rc}, {"UC", Conn::uc}, {"UD", Conn::ud},
                                                       {"XRC", Conn::xrc}, {"DC", Conn::dc}, {"SRD", Conn::srd}};
    auto it = kConn.find(v);
    if (it == kConn.end()) return usage("-c " + v + ": Invalid Connection type. Please choose from {RC,UC,UD,XRC,DC,SRD}");
    o.conn = it->second;
    return -1;
  }
  if (name == "ib-dev") return o.ib_dev = v, -1;
  if (name == "duration") return set_number(g, 1, 3600 * 24 * 365, o.duration);
  if (name == "margin") return set_number(g, 0, 3600 * 24 * 365, o.margin_s);
  if (name == "CPU-freq") return o.cpu_freq_f = true, -1;
  if (name == "ib-port") return set_number(g, 1, 255, o.ib_port);
  if (name == "inline_size") return set_number(g, 0, 512, o.inline_size);
  if (name == "post_list") return set_number(g, 1, 1024, o.post_list);
  if (name == "hop_limit") return set_number(g, 0, 255, o.hop_limit);
  if (name == "mtu") {
    if (set_number(g, 0, 9600, o.mtu) >= 0) return 2;
    if (o.verb != Verb::raw && o.mtu != 256 && o.mtu != 512 && o.mtu != 1024 && o.mtu != 2048 && o.mtu != 4096)
      return usage("-m " + v + ": Invalid MTU. Please choose mtu from {256,512,1024,2048,4096}");
    if (o.verb == Verb::raw && (o.mtu < 64 || o.mtu > 9600)) return usage("-m " + v + ": MTU size : 64 - 9600");
    // raw tests: the link carries jumbo frames from 4096 on, as before
    if (o.verb == Verb::raw) o.mtu = o.mtu > 1024 ? 4096 : 1024;
    return -1;
  }
  if (name == "iters") return o.iters_given = true, set_number(g, 5, 100000000, o.iters);
  if (name == "noPeak") return o.no_peak = true, -1;
  if (name == "rdma_cm") return o.rdma_cm = true, -1;
  if (name == "port") return set_number(g, 1, 65535, o.tcp_port);
  if (name == "qp") return set_number(g, 1, 16384, o.num_qps);
  if (name == "cq-mod") return set_number(g, 1, 1024, o.cq_mod);
  if (name == "rx-depth") return set_number(g, 1, 16384, o.rx_depth);
  if (name == "size") return set_size(g, o.size);
  if (name == "sl") return set_number(g, 0, 15, o.sl);
  if (name == "tx-depth") return set_number(g, 1, 15000, o.tx_depth);
  if (name == "tos") return set_number(g, 0, 255, o.tos);
  if (name == "qp-timeout") return set_number(g, 0, 31, o.qp_timeout);
  if (name == "limit_bw" || name == "limit_msgrate") {
    double d = 0;
    if (!to_double(v, d) || d < 0)
      return usage(spelling(*g.flag) + " " + v + (name == "limit_bw" ? ": Invalid Minimum BW Limit" : ": Invalid Minimum msgRate Limit"));
    (name == "limit_bw" ? o.limit_bw : o.limit_msgrate) = d;
    return -1;
  }
  if (name == "gid-index") return set_number(g, 0, 64, o.gid_index);
  if (name == "out_json") return o.out_json = true, -1;
  if (name == "out_json_file") return o.out_json_file = v, -1;
  if (name == "force-link") {
    if (v.rfind("Ethernet", 0) == 0 || v.rfind("ETHERNET", 0) == 0 || v.rfind("ethernet", 0) == 0) return -1;
    if (v == "IB" || v == "ib") return usage("--force-link IB: uroce is RoCE; its link is Ethernet");
    return usage("--force-link " + v + ": Invalid link layer value should be IB or ETHERNET.");
  }
  if (name == "use-srq") return o.use_srq = true, -1;
  if (name == "ipv6") return o.ipv6 = true, -1;
  if (name == "source_ip") return o.source_ip = v, -1;
  if (name == "mr_per_qp") return o.mr_per_qp = true, -1;
  if (name == "output") {
    if (v == "bandwidth") o.output = OutputMode::bandwidth;
    else if (v == "message_rate") o.output = OutputMode::message_rate;
    else if (v == "latency") o.output = OutputMode::latency;
    else return usage("--output " + v + ": Invalid verbosity level output flag. Please use bandwidth, latency, message_rate");
    return -1;
  }
  if (name == "perform_warm_up") return o.perform_warm_up = true, -1;
  if (name == "report-both") return o.report_both = true, -1;
  if (name == "report_gbits") return o.report_gbits = true, -1;
  if (name == "reversed") return o.reversed = true, -1;
  if (name == "run_infinitely") return o.run_infinitely = true, -1;
  if (name == "tclass") return set_number(g, 0, 255, o.tclass);
  if (name == "use_hugepages") return o.use_hugepages = true, -1;
  if (name == "burst_size") return set_number(g, 0, 1u << 30, o.burst_size);
  if (name == "typical_pkt_size") {
    uint64_t ignored = 0;
    return number(g, 0, 0xFFFF, ignored);
  }
  if (name == "rate_limit") {
    if (!to_double(v, o.rate_limit) || o.rate_limit <= 0) return usage("--rate_limit " + v + ": Rate limit must be non-negative");
    o.rate_limited = true;
    return -1;
  }
  if (name == "rate_units") {
    if (v != "M" && v != "g" && v != "p") return usage("--rate_units " + v + ": Invalid rate limit units. Please use M,g or p");
    o.rate_units = v[0];
    return -1;
  }
  if (name == "rate_limit_type") {
    if (v != "SW" && v != "HW" && v != "PP") return usage("--rate_limit_type " + v + ": Invalid rate limit type flag. Please use HW, SW or PP.");
    p.rate_limit_type = v;
    return -1;
  }
  if (name == "outs") return set_number(g, 1, 128, o.out_reads);
  if (name == "atomic_type") {
    if (v != "CMP_AND_SWAP" && v != "FETCH_AND_ADD")
      return usage("-A " + v + ": Invalid Atomic type! please choose from {CMP_AND_SWAP,FETCH_AND_ADD}");
    o.cmp_and_swap = v == "CMP_AND_SWAP";
    return -1;
  }
  if (name == "report-cycles") return o.report_cycles = true, -1;
  if (name == "report-histogram") return o.report_histogram = true, -1;
  // perftest's usage says -U implies -H, but perftest 4.5 prints the
  // unsorted samples alone (tests/data/perftest/*_lat_U).
  if (name == "report-unsorted") return o.report_unsorted = true, -1;
  if (name == "latency_gap") return set_number(g, 0, 1u << 30, o.latency_gap_us);
  return usage("internal: no handler for --" + name);
}

// perftest's refusals of a flag in a test (its parser's and
// force_dependencies' messages); nullptr when perftest takes the flag.
const char* refusal(const Parse& p, const std::string& name) {
  const Options& o = p.o;
  const bool lat = o.kind == Kind::lat;
  if (name == "bidirectional" && lat) return "Bidirectional is only available in BW test";
  if (name == "noPeak" && lat) return "NoPeak only valid for BW tests";
  if ((name == "report-cycles" || name == "report-histogram" || name == "report-unsorted") && !lat)
    return "Available only on Latency tests";
  if (name == "qp" && lat) return "Multiple QPs only available on bw tests";
  if (name == "inline_size" && (o.verb == Verb::read || o.verb == Verb::atomic))
    return "Inline feature not available on READ/Atomic verbs";
  if (name == "outs" && o.verb != Verb::read && o.verb != Verb::atomic)
    return "Setting Outstanding reads only available on READ verb";
  if (name == "atomic_type" && o.verb != Verb::atomic)
    return "You are not running the atomic_lat/bw test! To change the atomic action type, you must run one of the "
           "atomic tests";
  if ((name == "events" || name == "vector") && o.verb == Verb::write) return "Events feature not available on WRITE verb";
  if (name == "mcg" && o.verb != Verb::send) return "MultiCast feature only available on SEND verb";
  if (name == "use-srq" && o.verb != Verb::send && o.verb != Verb::raw) return "Using SRQ only avavilible in SEND tests.";
  if (name == "run_infinitely" && lat) return "run_infinitely exists only in BW tests for now.";
  if (name == "latency_gap" && !lat) return "Latency gap feature is only for latency tests";
  if (name == "all" && o.verb == Verb::raw) return "Raw Ethernet tests do not support -a / --all flag.";
  if (name == "all" && o.verb == Verb::atomic) return "Message size cannot be changed for Atomic tests";
  if (name == "gid-index" && o.verb == Verb::raw) return "GID index isn't supported for Raw Ethernet tests";
  if ((name == "rdma_cm" || name == "com_rdma_cm") && o.verb == Verb::raw)
    return "RDMA CM isn't supported for Raw Ethernet tests";
  if (name == "post_list" && lat && o.post_list > 1) return "Post list is supported in BW tests only";
  if (name == "rx-depth" && o.verb != Verb::send && o.verb != Verb::raw && o.rx_depth > 1)
    return "On RDMA verbs rx depth can be only 1";
  if (name == "size" && o.verb == Verb::atomic && o.size != 8) return "Message size cannot be changed for Atomic tests";
  if (name == "dualport" && lat) return "Dual-port mode only supports BW tests.";
  return nullptr;
}

// The flags whose value matters for refusal() are applied even in a test
// whose usage does not list them; the rest are then unused.
bool checked_outside_usage(const std::string& name) {
  return name == "size" || name == "rx-depth" || name == "post_list" || name == "qp" || name == "inline_size" ||
         name == "outs";
}

// perftest's rules (force_dependencies in perftest_parameters.c) for the
// queue depth, CQ moderation and post lists, so that no combination leaves
// the sender waiting for a completion it never asked for. -1: go on.
int force_dependencies(Parse& p) {
  Options& o = p.o;
  const bool cq_mod_given = p.has("cq-mod");
  if (o.kind == Kind::bw && !o.duration && !o.run_infinitely && o.tx_depth > o.iters) o.tx_depth = uint32_t(o.iters);
  if (o.verb == Verb::send && !o.duration && o.rx_depth > o.iters) o.rx_depth = uint32_t(o.iters);
  if (o.conn == Conn::ud && o.use_srq && !o.duration && !o.run_infinitely && o.iters <= 100) o.rx_depth = 100;
  // perftest's UD receiver keeps a receive posted for every message, up
  // to UC_MAX_RX, when -r is the default: a datagram finding none is lost.
  if (o.conn == Conn::ud && !o.duration && !o.run_infinitely && o.rx_depth == 512)
    o.rx_depth = uint32_t(std::min<uint64_t>(o.iters, 16000));
  // perftest: no CQ moderation for messages above 8 KiB unless asked for
  // (not with -a, UD or events).
  if (o.size > 8192 && o.conn != Conn::ud && !o.all_sizes && !cq_mod_given && o.kind == Kind::bw) o.cq_mod = 1;
  if (o.post_list > 1) {
    if (o.kind != Kind::bw) return usage("-l (post list) is supported in BW tests only");
    if (!o.duration && o.iters % o.post_list) return usage("-n must be a multiple of -l (the post list size)");
    if (!cq_mod_given) o.cq_mod = o.post_list;  // perftest: "CQ moderation will be the size of the post list"
    else if (o.post_list % o.cq_mod) return usage("-l (post list size) must be a multiple of -Q (CQ moderation)");
  }
  if (o.post_list > o.tx_depth)
    return usage("-l " + std::to_string(o.post_list) + " does not fit the send queue (-t " + std::to_string(o.tx_depth) +
                 ")");
  o.cq_mod = std::min(o.cq_mod, o.tx_depth);
  if (o.use_srq && o.num_qps > o.rx_depth) return usage("Using SRQ depth should be greater than number of QPs.");
  if (o.verb == Verb::send && o.rx_depth % 2 == 1 && !o.all_sizes) ++o.rx_depth;  // perftest's odd rx_depth fix
  if (o.duration) {
    if (o.all_sizes) return usage("Duration mode currently doesn't support running on all sizes.");
    o.no_peak = true;  // perftest: a -D run reports no peak
  }
  if (o.run_infinitely) {
    o.no_peak = true;
    if (!o.duration) o.duration = 5;  // perftest's DEF_DURATION: a row every 5 s
    if (o.bidirectional && o.verb == Verb::send)
      return usage("run_infinitely mode is not supported in SEND Bidirectional BW test");
    if (o.rate_limited) return usage("run_infinitely does not support rate limit feature yet");
  }
  if (o.kind == Kind::bw && !o.duration && o.iters > 20000) o.no_peak = true;
  // -f: perftest's margin defaults to a quarter of -D; DURATION > 2*MARGIN.
  if (o.duration && !p.has("margin")) o.margin_s = o.duration / 4;
  const uint32_t duration = o.duration ? o.duration : 5;
  if (p.has("margin") && !(duration > 2 * o.margin_s)) return usage("please check that DURATION > 2*MARGIN");
  if (o.output != OutputMode::table) {
    if (o.kind == Kind::bw && o.output == OutputMode::latency)
      return usage("--output latency: Output verbosity level for BW can be: bandwidth, message_rate");
    if (o.kind == Kind::lat && o.output != OutputMode::latency)
      return usage("--output: Output verbosity level for LAT can be: latency");
  }
  return -1;
}

// -c: what uroce's transport has.
int check_connection(const Options& o) {
  switch (o.conn) {
    case Conn::rc: return -1;
    case Conn::uc:
      if (o.verb == Verb::read || o.verb == Verb::atomic) return usage("-c UC: UC connection not possible in READ/ATOMIC verbs");
      return -1;
    case Conn::ud:
      if (o.verb != Verb::send) return usage("-c UD: UD connection only possible in SEND verb");
      return -1;
    case Conn::xrc: return usage("-c XRC: uroce has no XRC (shared receive domains across processes)");
    case Conn::dc: return usage("-c DC: DC is a ConnectX (mlx5) transport; uroce has RC, UC and UD");
    case Conn::srd: return usage("-c SRD: SRD is AWS EFA's transport; uroce has RC, UC and UD");
  }
  return -1;
}

// The software rate limiter (perftest's SW type; HW and PP are NIC
// features, done in software here with a note).
int check_rate_limit(Parse& p) {
  Options& o = p.o;
  const std::string& type = p.rate_limit_type;
  if (!o.rate_limited) {
    if (o.burst_size > 0) return usage("--burst_size: Can't enable burst mode when rate limiter is off");
    if (p.has("typical_pkt_size")) return usage("--typical_pkt_size: Typical packet size only supports PP rate limiter");
    if (!type.empty())
      std::fprintf(stderr, "uroce-perf: --rate_limit_type ignored: no --rate_limit given\n");
    return -1;
  }
  if (type == "PP") {
    if (o.verb != Verb::raw) return usage("--rate_limit_type PP: Packet Pacing is only supported for Raw Ethernet.");
    return usage("--rate_limit_type PP is not supported yet: packet pacing is a ConnectX feature; use SW");
  }
  if (p.has("typical_pkt_size")) return usage("--typical_pkt_size: Typical packet size only supports PP rate limiter");
  if (type != "SW")  // perftest's default type is HW: a QP rate in the NIC
    std::fprintf(stderr, "uroce-perf: --rate_limit_type %s: uroce has no hardware rate limiter; pacing in software (SW)\n",
                 type.empty() ? "HW (the default)" : type.c_str());
  if (o.kind != Kind::bw || o.verb == Verb::atomic || (o.verb == Verb::send && o.bidirectional) || o.verb == Verb::raw)
    return usage("--rate_limit: SW Rate limiter cann't be executed on non-BW, ATOMIC or bidirectional SEND tests" +
                 std::string(o.verb == Verb::raw ? " (nor, in uroce-perf, raw tests)" : ""));
  if (o.burst_size == 0) o.burst_size = o.tx_depth;
  return -1;
}

// uroce's own address options, and how they go with perftest's.
int check_addresses(const Options& o) {
  wire::IpAddr ip;
  wire::MacAddr mac;
  if (!o.ip.empty() && !wire::IpAddr::parse(o.ip, ip)) return usage("--ip " + o.ip + ": not an IPv4 or IPv6 address");
  if (!o.mac.empty() && !wire::MacAddr::parse(o.mac, mac)) return usage("--mac " + o.mac + ": not a MAC address (XX:XX:XX:XX:XX:XX)");
  if (o.rdma_cm && !o.daemon.empty())
    return usage("-R: --daemon runs both ends in this process, with no connection manager between them");
  if ((o.loopback || !o.daemon.empty()) && (o.vlan >= 0 || o.pcp >= 0))
    return usage("--vlan and --pcp tag a port's frames: they go with --dev (uroced's port has its own)");
  if (o.verb == Verb::raw && (o.vlan >= 0 || o.pcp >= 0))
    return usage("--vlan and --pcp tag RoCE frames: raw_bw and raw_lat send plain frames, untagged");
  if (!o.daemon.empty()) {
    if (o.loopback || !o.dev.empty() || !o.server.empty())
      return usage("--daemon runs both ends here as clients of uroced; it takes no --loopback, --dev or SERVER");
    const bool supported = o.verb != Verb::raw && !o.run_infinitely && !o.use_hugepages && o.pcap.empty();
    if (!supported)
      return usage("--daemon runs the RC, UC and UD tests so far (no raw, --run_infinitely, --use_hugepages, --pcap)");
    if (o.inline_size > 256) return usage("--daemon: -I is at most 256");
    return -1;
  }
  if (o.rdma_cm) {
    if (o.loopback) return usage("-R: --loopback runs both ends in one process, with no connection manager between them");
    if (o.conn == Conn::uc) return usage("-R: UC is not supported in librdmacm (as in perftest)");
    if (o.conn == Conn::ud) return usage("-R: uroce-perf connects RC QPs through the CM; UD's (SIDR) is not in uroce-perf yet");
    if (o.verb == Verb::atomic || (o.kind == Kind::lat && o.verb != Verb::send))
      return usage("-R: uroce-perf runs write_bw, read_bw, send_bw and send_lat over the CM so far");
    wire::IpAddr server;
    if (!o.server.empty() && !wire::IpAddr::parse(o.server, server))
      return usage("-R: the SERVER is its RoCE address (an IPv4 or IPv6 address, the CM's destination), not " + o.server);
    if (o.run_infinitely) return usage("-R: --run_infinitely is not supported with -R yet");
  }
  if (o.loopback && !o.dev.empty())
    return usage("--loopback runs both ends over an in-process link; it takes no --dev");
  if (o.loopback && !o.server.empty()) return usage("--loopback runs both ends here; it takes no SERVER address");
  if (o.engine_lcores != 1 && !o.loopback) return usage("--engine-lcores is for --loopback, which has two devices");
  if (o.engine_lcores != 1 && o.use_event) return usage("--engine-lcores: -e runs both engines on threads already");
  if (!o.loopback && (o.dev.empty() || o.ip.empty()))
    return usage("client and server need a port and an address: --dev PCI|VDEV --ip ADDR\n"
                 "  (or run both ends in this process with --loopback)");
  if (o.verb != Verb::raw && !o.source_ip.empty()) {
    wire::IpAddr src;
    if (!wire::IpAddr::parse(o.source_ip, src)) return usage("--source_ip " + o.source_ip + ": not an IP address");
    if (o.loopback) return usage("--source_ip: --loopback has its own addresses (192.168.77.2 for the client); give no --source_ip");
    if (!(src == ip)) return usage("--source_ip " + o.source_ip + " is not this side's address (--ip " + o.ip + ")");
  }
  if (o.ipv6 && !o.loopback && ip.is_v4_mapped())
    return usage("--ipv6: this side's address (--ip " + o.ip + ") is IPv4; give an IPv6 --ip");
  // Linux's table: the link-local GID, then the addresses (loopback.cpp,
  // uroce::roce_gid_table).
  const int gids = o.loopback ? 3 : 2;
  if (o.gid_index >= gids)
    return usage("-x " + std::to_string(o.gid_index) + ": the device has " + std::to_string(gids) +
                 " GIDs: valid indexes 0.." + std::to_string(gids - 1) +
                 (o.loopback ? " (0: link-local, 1: IPv4, 2: IPv6)" : " (0: link-local, 1: the --ip address)"));
  if (o.ib_port != 1) return usage("-i " + std::to_string(o.ib_port) + ": a uroce device has one port: -i 1");
  // perftest runs both sides infinitely with -b; each would need its SIGINT.
  if (o.run_infinitely && o.bidirectional && !o.loopback)
    return usage("--run_infinitely with -b between two processes is not supported yet (it runs with --loopback)");
  if (o.bidirectional && o.verb == Verb::raw) return usage("-b in raw_bw is not supported yet");
  if (o.reversed && o.verb == Verb::raw) return usage("--reversed in raw_bw is not supported yet");
  return -1;
}

}  // namespace

const std::vector<PerftestFlag>& perftest_flags() { return kFlags; }

uint32_t test_bit(const std::string& test) {
  auto it = kTests.find(test);
  return it == kTests.end() ? 0 : it->second.bit;
}

std::string perftest_binary(const std::string& test) {
  auto it = kTests.find(test);
  return it == kTests.end() ? "" : it->second.binary;
}

int parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"uroce-perf: perftest-compatible RDMA benchmarks over uroce.\n"
               "Server: uroce-perf TEST [options]; client: uroce-perf TEST [options] SERVER;\n"
               "both in one process over a virtual link: uroce-perf TEST --loopback [options]\n"
               "Every perftest 4.5 flag is taken with perftest's meaning; those uroce cannot honour are\n"
               "ignored with a line on stderr or refused (exit 2) with the reason (docs/tools.md)."};
  app.set_version_flag("-V,--version", "uroce-perf " UROCE_VERSION);
  std::string cc_name = "none", cc_file;
  std::vector<std::string> cc_params;
  std::vector<Given> given;
  app.add_option("test", o.test,
                 "write_bw | read_bw | send_bw | atomic_bw | write_lat | read_lat | send_lat | atomic_lat, or "
                 "raw_bw | raw_lat (plain Ethernet frames of -s bytes, clamped to 64..MTU+14: the link's own limit)")
      ->required()
      ->check(CLI::IsMember({"send_bw", "write_bw", "read_bw", "atomic_bw", "send_lat", "write_lat", "read_lat",
                             "atomic_lat", "raw_bw", "raw_lat"}));
  app.add_option("host", o.server, "the server's address: run as the client");
  for (const PerftestFlag& f : kFlags) {
    if (std::string(f.long_name) == "help") continue;  // CLI11's own
    if (std::string(f.long_name) == "version") continue;
    std::string names = f.short_name ? std::string("-") + f.short_name + ",--" + f.long_name : std::string("--") + f.long_name;
    if (f.alias) names += std::string(",--") + f.alias;
    const std::string help = f.use == FlagUse::implemented ? "perftest's" : f.use == FlagUse::ignored ? "ignored: " + std::string(f.why)
                                                                                                     : "not supported yet: " + std::string(f.why);
    if (f.takes_value)
      app.add_option_function<std::string>(names, [&given, &f](const std::string& v) { given.push_back({&f, v}); }, help)
          ->type_name("VALUE");
    else
      app.add_flag_callback(names, [&given, &f] { given.push_back({&f, ""}); }, help);
  }
  app.add_option("--dev", o.dev, "port: a PCI address or a DPDK vdev string");
  app.add_option("--ip", o.ip, "this endpoint's IPv4 or IPv6 address");
  app.add_option("--mac", o.mac, "this endpoint's MAC address");
  app.add_option("--vlan", o.vlan, "802.1Q: the port's frames carry this VLAN id (default untagged)")
      ->check(CLI::Range(0, 4094));
  app.add_option("--pcp", o.pcp, "802.1Q: and this priority (alone: VLAN id 0); -S overrides it")
      ->check(CLI::Range(0, 7));
  app.add_option("--eal", o.eal, "extra DPDK EAL arguments, quoted");
  app.add_option("--pcap", o.pcap, "write every RoCE frame sent and received to this pcap");
  app.add_option("--idle-sleep-us", o.idle_sleep_us,
                 "-e: the longest nap, in microseconds, of an idle engine thread (0: it never naps; "
                 "docs/engine.md)")
      ->check(CLI::Range(0, 1000000));
  app.add_flag("--verify", o.verify, "fill and check data end to end; exit 1 on any mismatch");
  app.add_flag("--loopback", o.loopback, "server and client in this process over a virtual link (no NIC)");
  app.add_option("--engine-lcores", o.engine_lcores,
                 "--loopback: 1 (this thread drives both devices) or 2 (the server device's engine on a thread "
                 "and lcore of its own)")
      ->check(CLI::Range(1, 2));
  app.add_option("--daemon", o.daemon,
                 "server and client in this process as two clients of the uroced at SOCKET (its engine's loopback)");
  app.add_flag("--raw-acks", o.raw_acks,
               "raw_lat: send a 62-byte frame (a RoCEv2 ACK's size) ahead of each frame, as RC answers "
               "with an ACK and a request; give it to both sides");
  app.add_flag("--resources", o.resources,
               "--run_infinitely: after each row, a line 'resources: rss_kb=N mbufs_in_use=N memzones=N "
               "heap_bytes=N' (what scripts/soak.sh watches for growth)");
  app.add_option("--timeout", o.timeout_s,
                 "seconds to wait for the server, each exchange step, ARP, or a silent peer (10); "
                 "the server waits for a client forever")
      ->check(CLI::Range(1, 3600));
  app.add_option("--cc", cc_name, "congestion control: none | dcqcn (ConnectX defaults) | dcqcn-paper (none)")
      ->check(CLI::IsMember({"none", "dcqcn", "dcqcn-mlx5", "dcqcn-paper"}));
  app.add_option("--cc-config", cc_file, "congestion-control settings file (config/dcqcn-*.conf), after --cc");
  app.add_option("--cc-param", cc_params,
                 "override one DCQCN parameter, NAME=VALUE with mlx5's names (repeatable; docs/dcqcn.md)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    return usage(std::string(e.what()) + "\n  (neither a perftest 4.5 flag nor one of uroce-perf's; see --help)");
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  std::string cc_error;
  bool cc_ok = cc::parse_cc(cc_name, o.cc, cc_error);
  if (cc_ok && !cc_file.empty()) cc_ok = cc::load_cc_file(cc_file, o.cc, cc_error);
  for (size_t i = 0; cc_ok && i < cc_params.size(); ++i) cc_ok = cc::apply_cc_param(cc_params[i], o.cc, cc_error);
  if (!cc_ok) return usage(cc_error);

  const TestSpec& spec = kTests.at(o.test);
  o.verb = spec.verb;
  o.kind = spec.kind;
  // perftest's defaults by test: -s 2 and -n 1000 for latency, -n 5000
  // for write_bw only, 1000 for every other test; 8-byte atomics; -r 512
  // for SEND, 1 for RDMA.
  if (o.kind == Kind::lat) o.size = 2;
  o.iters = o.kind == Kind::bw && o.verb == Verb::write ? 5000 : 1000;
  if (o.verb == Verb::atomic) o.size = 8;
  o.rx_depth = o.verb == Verb::send || o.verb == Verb::raw ? 512 : 1;

  Parse p{o, spec, {}, {}};
  for (const Given& g : given) {
    const PerftestFlag& f = *g.flag;
    p.given[f.long_name] = g.value;
    const bool listed = (f.tests & spec.bit) != 0;
    if (f.use == FlagUse::not_yet && listed) return usage(spelling(f) + " is not supported yet: " + f.why);
    if (f.use == FlagUse::ignored && listed) {
      std::fprintf(stderr, "uroce-perf: %s ignored: %s\n", spelling(f).c_str(), f.why);
      continue;
    }
    if (f.use == FlagUse::implemented && (listed || checked_outside_usage(f.long_name)))
      if (const int rc = apply(p, g); rc >= 0) return rc;
    if (const char* why = refusal(p, f.long_name)) return usage(spelling(f) + ": " + why + " (as in perftest)");
    if (!listed && !checked_outside_usage(f.long_name))
      std::fprintf(stderr, "uroce-perf: %s ignored: %s does not use it (perftest takes it and ignores it too)\n",
                   spelling(f).c_str(), spec.binary);
  }
  // Flags perftest refuses by their value, whatever the test.
  if (o.tos >= 0 && o.verb != Verb::raw && !o.rdma_cm)
    return usage("-T: TOS only valid for rdma_cm based QP and RawEth QP (as in perftest)");
  if (o.tos >= 0 && o.rdma_cm) return usage("-T: uroce's connection manager does not set a TOS yet: leave -T out");
  if (o.tos >= 0) std::fprintf(stderr, "uroce-perf: -T ignored: %s\n", kPlainFrames);
  if (o.hop_limit != 64 && o.verb != Verb::raw) return usage("-L: Hop limit only valid for RawEth QP (as in perftest)");
  if (o.hop_limit != 64) std::fprintf(stderr, "uroce-perf: -L ignored: %s\n", kPlainFrames);
  if (o.tclass >= 0 && o.verb == Verb::raw) std::fprintf(stderr, "uroce-perf: --tclass ignored: %s\n", kPlainFrames);
  if (o.sl && o.verb == Verb::raw) std::fprintf(stderr, "uroce-perf: -S ignored: %s\n", kPlainFrames);
  if (o.verb == Verb::raw && !o.source_ip.empty()) std::fprintf(stderr, "uroce-perf: -j ignored: %s\n", kPlainFrames);
  if (o.verb == Verb::raw && (o.use_srq || p.has("rx-depth"))) {
    std::fprintf(stderr, "uroce-perf: %s ignored: raw tests read the port directly, with no receive queue\n",
                 o.use_srq ? "--use-srq" : "-r");
    o.use_srq = false;
  }
  if (o.out_json && o.out_json_file.empty()) o.json_default_file = true;
  if (o.raw_acks && o.test != "raw_lat") return usage("--raw-acks applies to raw_lat only");
  if (const int rc = check_connection(o); rc >= 0) return rc;
  // perftest's default when -I is not given (ctx_set_max_inline): its
  // "optimal" inline sizes for WRITE and SEND latency tests
  // (DEF_INLINE_WRITE, DEF_INLINE_SEND_RC_UC, DEF_INLINE_SEND_UD), none
  // for everything else. (-I stops at uroce's 512, below UD's 1024.)
  if (!p.has("inline_size") && o.kind == Kind::lat)
    o.inline_size = o.verb == Verb::write ? 220 : o.verb != Verb::send ? 0 : o.conn == Conn::ud ? 188 : 236;
  if (o.run_infinitely && o.kind == Kind::lat) return usage("run_infinitely exists only in BW tests for now.");
  if (const int rc = check_rate_limit(p); rc >= 0) return rc;
  if (const int rc = force_dependencies(p); rc >= 0) return rc;
  if (o.verify && o.inline_size > 0 && o.verb == Verb::read) o.inline_size = 0;
  if (o.latency_gap_us && o.kind != Kind::lat) return usage("Latency gap feature is only for latency tests");
  if (const int rc = check_addresses(o); rc >= 0) return rc;
  // Without -x perftest takes the device's best GID: IPv4 unless --ipv6
  // (a remote side's --ip is its one address either way).
  if (o.gid_index < 0) o.gid_index = o.loopback && o.ipv6 ? 2 : 1;
  return -1;
}

std::vector<uint64_t> sizes(const Options& o) {
  if (!o.all_sizes || o.verb == Verb::atomic) return {o.size};
  std::vector<uint64_t> v;
  const uint64_t last = o.ud_max_size ? o.ud_max_size : uint64_t(1) << 23;
  for (uint64_t s = 2; s <= last; s <<= 1) v.push_back(s);
  return v;
}

void cap_ud_sizes(Options& o, uint32_t path_mtu) {
  if (o.conn != Conn::ud) return;
  if (!o.all_sizes) {
    o.size = std::min<uint64_t>(o.size, path_mtu);  // silently, as perftest does
    return;
  }
  if (o.ud_max_size != 0 && o.ud_max_size <= path_mtu) return;
  std::fprintf(stderr, " Max msg size in UD is MTU %u\n Changing to this MTU\n", path_mtu);
  o.ud_max_size = path_mtu;
}

}  // namespace uroce::perf
