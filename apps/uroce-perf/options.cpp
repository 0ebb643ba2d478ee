// SPDX-License-Identifier: BSD-3-Clause
#include "options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

namespace uroce::perf {
namespace {

struct TestSpec {
  Verb verb;
  Kind kind;
};

const std::map<std::string, TestSpec> kTests = {
    {"send_bw", {Verb::send, Kind::bw}},     {"write_bw", {Verb::write, Kind::bw}},
    {"read_bw", {Verb::read, Kind::bw}},     {"atomic_bw", {Verb::atomic, Kind::bw}},
    {"send_lat", {Verb::send, Kind::lat}},   {"write_lat", {Verb::write, Kind::lat}},
    {"read_lat", {Verb::read, Kind::lat}},   {"raw_bw", {Verb::raw, Kind::bw}},
    {"raw_lat", {Verb::raw, Kind::lat}},
};

// perftest's rules (force_dependencies in perftest_parameters.c) for the
// queue depth, CQ moderation and post lists, so that no combination leaves
// the sender waiting for a completion it never asked for. -1: go on.
int force_dependencies(Options& o, bool cq_mod_given) {
  auto usage = [](const std::string& what) {
    std::fprintf(stderr, "uroce-perf: %s\n", what.c_str());
    return 2;
  };
  if (o.post_list > 1) {
    if (o.kind != Kind::bw) return usage("-l (post list) is supported in BW tests only");
    if (!o.duration && o.iters % o.post_list) return usage("-n must be a multiple of -l (the post list size)");
    if (!cq_mod_given) o.cq_mod = o.post_list;  // perftest: "CQ moderation will be the size of the post list"
    else if (o.post_list % o.cq_mod) return usage("-l (post list size) must be a multiple of -Q (CQ moderation)");
  }
  if (o.kind == Kind::bw && !o.duration && o.tx_depth > o.iters) o.tx_depth = uint32_t(o.iters);
  if (o.post_list > o.tx_depth)
    return usage("-l " + std::to_string(o.post_list) + " does not fit the send queue (-t " + std::to_string(o.tx_depth) +
                 ")");
  o.cq_mod = std::min(o.cq_mod, o.tx_depth);
  return -1;
}

}  // namespace

int parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"uroce-perf: perftest-compatible RDMA benchmarks over uroce.\n"
               "Server: uroce-perf TEST [options]; client: uroce-perf TEST [options] SERVER;\n"
               "both in one process over a virtual link: uroce-perf TEST --loopback [options]"};
  app.set_version_flag("--version", "uroce-perf " UROCE_VERSION);
  std::string atomic_type = "FETCH_AND_ADD";
  std::string cc_name = "none", cc_file;
  std::vector<std::string> cc_params;
  app.add_option("test", o.test,
                 "write_bw | read_bw | send_bw | atomic_bw | write_lat | read_lat | send_lat, or raw_bw | raw_lat "
                 "(plain Ethernet frames of -s bytes, clamped to 64..MTU+14: the link's own limit)")
      ->required()
      ->check(CLI::IsMember({"send_bw", "write_bw", "read_bw", "atomic_bw", "send_lat", "write_lat", "read_lat",
                             "raw_bw", "raw_lat"}));
  app.add_option("server", o.server, "server address (client mode)");
  auto* size = app.add_option("-s,--size", o.size, "message size (BW default 65536, LAT default 2)")
                   ->check(CLI::Range(uint64_t(1), uint64_t(1) << 31));
  app.add_flag("-a,--all", o.all_sizes, "run sizes from 2 to 2^23");
  auto* iters = app.add_option("-n,--iters", o.iters, "iterations (BW default 5000, LAT default 1000)")
                    ->check(CLI::Range(uint64_t(5), uint64_t(100000000)));
  app.add_option("-D,--duration", o.duration, "run for this many seconds instead of -n")->check(CLI::Range(1, 3600));
  app.add_option("-m,--mtu", o.mtu, "path MTU (256..4096)")->check(CLI::IsMember({256, 512, 1024, 2048, 4096}));
  app.add_option("-t,--tx-depth", o.tx_depth, "send queue depth (128)")->check(CLI::Range(1, 15000));
  auto* cq_mod = app.add_option("-Q,--cq-mod", o.cq_mod, "signal every N sends (100)")->check(CLI::Range(1, 1024));
  app.add_option("-q,--qp", o.num_qps, "number of QPs (1)")->check(CLI::Range(1, 1024));
  app.add_option("-l,--post_list", o.post_list, "WRs per post call (1)")->check(CLI::Range(1, 1024));
  auto* inline_size = app.add_option("-I,--inline_size", o.inline_size, "max inline size (write_lat 220, send_lat 236, else 0)")
                          ->check(CLI::Range(0, 512));
  app.add_option("-u,--qp-timeout", o.qp_timeout, "local ACK timeout exponent (14)")->check(CLI::Range(0, 31));
  app.add_option("-x,--gid-index", o.gid_index, "GID index (0)")->check(CLI::Range(0, 0));
  app.add_option("-p,--port", o.tcp_port, "TCP port of the exchange (18515)");
  app.add_option("-A,--atomic_type", atomic_type, "CMP_AND_SWAP | FETCH_AND_ADD")
      ->check(CLI::IsMember({"CMP_AND_SWAP", "FETCH_AND_ADD"}));
  app.add_flag("--report_gbits", o.report_gbits, "report Gb/s instead of MB/s");
  app.add_flag("--out_json", o.out_json, "also print the results as JSON");
  app.add_option("--out_json_file", o.out_json_file, "write the JSON results to this file");
  app.add_option("--dev", o.dev, "port: a PCI address or a DPDK vdev string");
  app.add_option("--ip", o.ip, "this endpoint's IPv4 or IPv6 address");
  app.add_option("--mac", o.mac, "this endpoint's MAC address");
  app.add_option("--eal", o.eal, "extra DPDK EAL arguments, quoted");
  app.add_option("--pcap", o.pcap, "write every RoCE frame sent and received to this pcap");
  app.add_flag("--verify", o.verify, "fill and check data end to end; exit 1 on any mismatch");
  app.add_flag("--loopback", o.loopback, "server and client in this process over a virtual link (no NIC)");
  app.add_flag("--raw-acks", o.raw_acks,
               "raw_lat: send a 62-byte frame (a RoCEv2 ACK's size) ahead of each frame, as RC answers "
               "with an ACK and a request; give it to both sides");
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
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  std::string cc_error;
  bool cc_ok = cc::parse_cc(cc_name, o.cc, cc_error);
  if (cc_ok && !cc_file.empty()) cc_ok = cc::load_cc_file(cc_file, o.cc, cc_error);
  for (size_t i = 0; cc_ok && i < cc_params.size(); ++i) cc_ok = cc::apply_cc_param(cc_params[i], o.cc, cc_error);
  if (!cc_ok) {
    std::fprintf(stderr, "uroce-perf: %s\n", cc_error.c_str());
    return 2;
  }
  const TestSpec spec = kTests.at(o.test);
  o.verb = spec.verb;
  o.kind = spec.kind;
  o.cmp_and_swap = atomic_type == "CMP_AND_SWAP";
  if (o.kind == Kind::lat) {
    if (size->count() == 0) o.size = 2;
    if (iters->count() == 0) o.iters = 1000;
  }
  if (o.verb == Verb::atomic) o.size = 8;
  if (o.raw_acks && o.test != "raw_lat") {
    std::fprintf(stderr, "uroce-perf: --raw-acks applies to raw_lat only\n");
    return 2;
  }
  // perftest's default when -I is not given (ctx_set_max_inline): its
  // "optimal" inline sizes for WRITE and SEND latency tests
  // (DEF_INLINE_WRITE, DEF_INLINE_SEND_RC_UC), none for everything else.
  if (inline_size->count() == 0 && o.kind == Kind::lat)
    o.inline_size = o.verb == Verb::write ? 220 : o.verb == Verb::send ? 236 : 0;
  if (const int rc = force_dependencies(o, cq_mod->count() > 0); rc >= 0) return rc;
  if (o.verify && o.inline_size > 0 && o.verb == Verb::read) o.inline_size = 0;
  if (!o.loopback && (o.dev.empty() || o.ip.empty())) {
    std::fprintf(stderr,
                 "uroce-perf: client and server need a port and an address: --dev PCI|VDEV --ip ADDR\n"
                 "  (or run both ends in this process with --loopback)\n");
    return 2;
  }
  if (o.loopback && !o.server.empty()) {
    std::fprintf(stderr, "uroce-perf: --loopback runs both ends here; it takes no SERVER address\n");
    return 2;
  }
  return -1;
}

std::vector<uint64_t> sizes(const Options& o) {
  if (!o.all_sizes || o.verb == Verb::atomic) return {o.size};
  std::vector<uint64_t> v;
  for (uint64_t s = 2; s <= (uint64_t(1) << 23); s <<= 1) v.push_back(s);
  return v;
}

}  // namespace uroce::perf
