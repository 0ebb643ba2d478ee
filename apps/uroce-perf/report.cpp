// SPDX-License-Identifier: BSD-3-Clause
#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

namespace uroce::perf {
namespace {

constexpr const char* kLine = "---------------------------------------------------------------------------------------\n";

const char* verb_name(const Options& o) {
  switch (o.verb) {
    case Verb::send: return "Send";
    case Verb::write: return "RDMA_Write";
    case Verb::read: return "RDMA_Read";
    case Verb::atomic: return "Atomic";
    case Verb::raw: return "Raw Ethernet";
  }
  return "";
}

// perftest: MB/sec is 2^20 bytes per second; Gb/sec is 10^9 bits.
double rate_unit(const Options& o, double bytes_per_s) {
  return o.report_gbits ? bytes_per_s * 8 / 1e9 : bytes_per_s / 1048576.0;
}

void print_address(const char* side, const PeerInfo& p) {
  std::printf(" %s address: LID %#04x QPN %#06x PSN %#06x RKey %#08x VAddr %#016llx\n", side, 0, p.qpn, p.psn,
              p.rkey, (unsigned long long)p.vaddr);
  std::printf(" GID: ");
  for (int i = 0; i < 16; ++i) std::printf("%02d%s", p.gid.bytes[i], i < 15 ? ":" : "\n");
}

struct LatStats {
  double min = 0, max = 0, typical = 0, avg = 0, stdev = 0, p99 = 0, p999 = 0;
};

LatStats stats(std::vector<double> v) {
  LatStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.typical = v[v.size() / 2];
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  s.avg = sum / double(v.size());
  for (double x : v) sq += (x - s.avg) * (x - s.avg);
  s.stdev = std::sqrt(sq / double(v.size()));
  s.p99 = v[std::min(v.size() - 1, size_t(double(v.size()) * 0.99))];
  s.p999 = v[std::min(v.size() - 1, size_t(double(v.size()) * 0.999))];
  return s;
}

}  // namespace

void print_banner(const Options& o, const std::string& device, uint32_t mtu, const PeerInfo& local,
                  const PeerInfo& remote) {
  std::printf("%s", kLine);
  std::printf("                    %s %s Test\n", verb_name(o), o.kind == Kind::bw ? "BW" : "Latency");
  std::printf(" Dual-port       : OFF\t\tDevice         : %s\n", device.c_str());
  std::printf(" Number of qps   : %u\t\tTransport type : IB\n", o.num_qps);
  std::printf(" Connection type : RC\t\tUsing SRQ      : OFF\n");
  if (o.verb == Verb::atomic)
    std::printf(" Atomic Operation : %s\n", o.cmp_and_swap ? "CMP_AND_SWAP" : "FETCH_AND_ADD");
  std::printf(" TX depth        : %u\n", o.kind == Kind::bw ? o.tx_depth : 1);
  if (o.kind == Kind::bw) std::printf(" CQ Moderation   : %u\n", o.cq_mod);
  std::printf(" Mtu             : %u[B]\n", mtu);
  std::printf(" Link type       : Ethernet\n");
  std::printf(" GID index       : %d\n", o.gid_index);
  std::printf(" Max inline data : %u[B]\n", o.inline_size);
  std::printf(" rdma_cm QPs\t : OFF\n");
  std::printf(" Data ex. method : %s\n", o.loopback ? "in-process (loopback)" : "Ethernet");
  std::printf("%s", kLine);
  if (o.verb != Verb::raw) {
    print_address("local", local);
    print_address("remote", remote);
    std::printf("%s", kLine);
  }
}

void print_bw_header(const Options& o) {
  std::printf("%s\n", o.report_gbits ? " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
                                     : " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]");
}

void print_bw_row(const Options& o, const BwResult& r) {
  std::printf(" %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t   %-7.6lf\n", (unsigned long)r.size,
              (unsigned long)r.iters, rate_unit(o, r.peak_bps), rate_unit(o, r.avg_bps), r.msg_rate / 1e6);
  std::fflush(stdout);
}

void print_lat_header() {
  std::printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
              "99%% percentile[usec]   99.9%% percentile[usec] \n");
}

void print_lat_row(const LatResult& r) {
  const LatStats s = stats(r.usec);
  std::printf(" %-7lu %-10lu     %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
              (unsigned long)r.size, (unsigned long)r.usec.size(), s.min, s.max, s.typical, s.avg, s.stdev, s.p99,
              s.p999);
  std::fflush(stdout);
}

void print_ack_frames(const LatResult& r) {
  std::printf(" uroce: %lu B: %lu ACK-sized frames received\n", (unsigned long)r.size, (unsigned long)r.ack_frames);
}

void print_footer() { std::printf("%s", kLine); }

bool write_json(const Options& o, const std::vector<BwResult>& bw, const std::vector<LatResult>& lat,
                const nlohmann::json& cc, std::string& error) {
  nlohmann::json j;
  j["test"] = o.test;
  j["num_qps"] = o.num_qps;
  j["tx_depth"] = o.tx_depth;
  j["units"] = o.report_gbits ? "Gb/sec" : "MB/sec";
  j["results"] = nlohmann::json::array();
  for (const BwResult& r : bw)
    j["results"].push_back({{"bytes", r.size}, {"iterations", r.iters}, {"bw_peak", rate_unit(o, r.peak_bps)},
                            {"bw_average", rate_unit(o, r.avg_bps)}, {"msg_rate_mpps", r.msg_rate / 1e6}});
  for (const LatResult& r : lat) {
    const LatStats s = stats(r.usec);
    j["results"].push_back({{"bytes", r.size}, {"iterations", r.usec.size()}, {"t_min_usec", s.min},
                            {"t_max_usec", s.max}, {"t_typical_usec", s.typical}, {"t_avg_usec", s.avg},
                            {"t_stdev_usec", s.stdev}, {"p99_usec", s.p99}, {"p99_9_usec", s.p999}});
  }
  if (!cc.empty()) j["cc"] = cc;
  if (o.out_json) std::printf("%s\n", j.dump(1).c_str());
  if (!o.out_json_file.empty()) {
    std::ofstream f(o.out_json_file);
    f << j.dump(1) << "\n";
    if (!f) {
      error = "cannot write " + o.out_json_file;
      return false;
    }
  }
  return true;
}

}  // namespace uroce::perf
