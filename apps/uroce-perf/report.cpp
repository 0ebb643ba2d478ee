// SPDX-License-Identifier: BSD-3-Clause
// The formats are perftest 4.5's (perftest_parameters.h and
// ctx_print_test_info / print_full_bw_report / print_report_lat): scripts
// written for perftest parse these lines by position and spacing.
#include "report.h"

#include <fcntl.h>
#include <rte_malloc.h>
#include <rte_mempool.h>
#include <rte_memzone.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cycle_clock.h"

namespace uroce::perf {
namespace {

constexpr const char* kLine = "---------------------------------------------------------------------------------------\n";

const char* verb_name(const Options& o) {
  switch (o.verb) {
    case Verb::send: return "Send";
    case Verb::write: return "RDMA_Write";
    case Verb::read: return "RDMA_Read";
    case Verb::atomic: return "Atomic";
    case Verb::raw: return "Send";  // raw_ethernet_bw/lat run perftest's SEND test on a raw QP
  }
  return "";
}

const char* conn_name(const Options& o) {
  if (o.verb == Verb::raw) return "RawEth";
  switch (o.conn) {
    case Conn::rc: return "RC";
    case Conn::uc: return "UC";
    case Conn::ud: return "UD";
    case Conn::xrc: return "XRC";
    case Conn::dc: return "DC";
    case Conn::srd: return "SRD";
  }
  return "RC";
}

// The test's title words: "RDMA_Write Bidirectional BW", "Atomic FETCH_AND_ADD Latency".
std::vector<std::string> title_words(const Options& o) {
  std::vector<std::string> w{verb_name(o)};
  if (o.verb == Verb::atomic) w.emplace_back(o.cmp_and_swap ? "CMP_AND_SWAP" : "FETCH_AND_ADD");
  if (o.kind == Kind::bw) {
    if (o.bidirectional) w.emplace_back("Bidirectional");
    if (o.post_list > 1) w.emplace_back("Post List");
    w.emplace_back("BW");
  } else {
    w.emplace_back("Latency");
  }
  return w;
}

uint32_t tx_depth(const Options& o) { return o.kind == Kind::lat ? 1 : o.tx_depth; }
bool shows_tx_depth(const Options& o, const RunInfo& r) { return !r.server || o.bidirectional; }
bool shows_rx_depth(const Options& o, const RunInfo& r) {
  return (o.verb == Verb::send || o.verb == Verb::raw) && (r.server || o.bidirectional);
}
// perftest's write_lat turns PCIe relaxed ordering off; the other tests leave it on.
bool relaxed_order(const Options& o) { return !(o.kind == Kind::lat && o.verb == Verb::write); }
bool shows_out_reads(const Options& o) { return o.verb == Verb::read || o.verb == Verb::atomic; }
uint32_t out_reads(const Options& o, const RunInfo& r) {
  if (o.out_reads) return o.out_reads;
  return r.local.empty() ? 0 : r.local[0].out_reads;
}

// perftest: MB/sec is 2^20 bytes per second; Gb/sec is 10^9 bits.
double rate_unit(const Options& o, double bytes_per_s) {
  return o.report_gbits ? bytes_per_s * 8 / 1e9 : bytes_per_s / 1048576.0;
}

void print_address(const Options& o, const char* side, const PeerInfo& p) {
  std::printf(" %s address: LID %#04x QPN %#06x PSN %#06x", side, 0, p.qpn, p.psn);
  if (o.verb == Verb::read) std::printf(" OUT %#04x", p.out_reads);
  if (o.verb == Verb::read || o.verb == Verb::write)
    std::printf(" RKey %#08x VAddr %#016llx", p.rkey, (unsigned long long)p.vaddr);
  std::printf("\n GID: ");
  for (int i = 0; i < 16; ++i) std::printf("%02d%s", p.gid.bytes[i], i < 15 ? ":" : "\n");
}

// The figure as the table prints it (printf's rounding, not std::round's).
double round_to(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return std::strtod(b, nullptr);
}

// perftest's READ and atomic tests print a line of their own first (before
// they check the device's inline support).
void print_lead_line(const Options& o) {
  if (o.verb == Verb::read || o.verb == Verb::atomic) std::printf("%s", kLine);
}

struct BwFigures {
  double peak, avg, rate;
};
BwFigures bw_figures(const Options& o, const BwResult& r) {
  return {o.no_peak ? 0.0 : rate_unit(o, r.peak_bps), rate_unit(o, r.avg_bps), r.msg_rate / 1e6};
}
// perftest shows six decimals for a Gb/sec average under 0.1.
bool fine_figures(const Options& o, const BwFigures& f) { return o.report_gbits && f.avg < 0.1; }

nlohmann::ordered_json test_info(const Options& o, const RunInfo& run) {
  std::string test;
  for (const std::string& w : title_words(o)) test += (w == "Post List" ? "Post_List" : w) + "_";
  nlohmann::ordered_json j;
  j["test"] = test + "Test";
  j["Dual_port"] = "OFF";
  j["Device"] = run.device;
  j["Number_of_qps"] = o.num_qps;
  j["Transport_type"] = "IB";
  j["Connection_type"] = conn_name(o);
  j["Using_SRQ"] = o.use_srq ? "ON" : "OFF";
  j["PCIe_relax_order"] = relaxed_order(o) ? "ON" : "OFF";
  j["ibv_wr_API"] = "OFF";
  if (shows_tx_depth(o, run)) j["TX_depth"] = tx_depth(o);
  if (o.post_list > 1) j["Post_List"] = o.post_list;
  if (shows_rx_depth(o, run)) j["RX_depth"] = o.rx_depth;
  if (o.kind == Kind::bw) j["CQ_Moderation"] = o.cq_mod;
  j["Mtu"] = run.mtu;
  j["Link_type"] = "Ethernet";
  j["GID_index"] = o.gid_index;
  if (shows_out_reads(o)) j["Outstand_reads"] = out_reads(o, run);
  else j["Max_inline_data"] = o.inline_size;
  j["rdma_cm_QPs"] = o.rdma_cm ? "ON" : "OFF";
  j["Data_ex_method"] = o.rdma_cm ? "rdma_cm" : "Ethernet";
  return j;
}

nlohmann::ordered_json bw_json(const Options& o, const BwResult& r) {
  const BwFigures f = bw_figures(o, r);
  nlohmann::ordered_json j;
  if (o.output == OutputMode::bandwidth) return j["bw_avg"] = round_to(f.avg, 6), j;
  if (o.output == OutputMode::message_rate) return j["msgRate_avg"] = round_to(f.rate, 6), j;
  const int digits = fine_figures(o, f) ? 6 : 2;
  j["MsgSize"] = r.size;
  j["n_iterations"] = r.iters;
  j["BW_peak"] = round_to(f.peak, digits);
  j["BW_average"] = round_to(f.avg, digits);
  j["MsgRate"] = round_to(f.rate, 6);
  return j;
}

nlohmann::ordered_json lat_json(const Options& o, const LatResult& r) {
  const LatStats s = lat_stats(o, r);
  nlohmann::ordered_json j;
  if (o.output == OutputMode::latency) return j["avg_lat"] = round_to(s.avg, 6), j;
  j["MsgSize"] = r.size;
  j["n_iterations"] = s.iters;
  j["t_min"] = round_to(s.min, 2);
  j["t_max"] = round_to(s.max, 2);
  j["t_typical"] = round_to(s.typical, 2);
  j["t_avg"] = round_to(s.avg, 2);
  j["t_stdev"] = round_to(s.stdev, 2);
  j["percentile_99"] = round_to(s.p99, 2);
  j["percentile_99.9"] = round_to(s.p999, 2);
  return j;
}

// A post answers the peer's in SEND, WRITE and raw: the gap between two
// posts is a round trip, and perftest halves it; READ and atomics wait
// for their own operation.
double rtt_factor(const Options& o) { return o.verb == Verb::read || o.verb == Verb::atomic ? 1 : 2; }

// Cycles per printed unit and round trip: usec, or TSC cycles with -C.
double quotient(const Options& o) { return (o.report_cycles ? 1.0 : CycleClock::cycles_per_usec()) * rtt_factor(o); }

// The gaps between consecutive posts, in cycles.
std::vector<uint64_t> gaps(const LatResult& r) {
  std::vector<uint64_t> d;
  for (size_t i = 1; i < r.posted.size(); ++i) d.push_back(r.posted[i] - r.posted[i - 1]);
  return d;
}

void print_samples(const Options& o, const std::vector<uint64_t>& d, size_t n) {
  std::printf("#, %s\n", o.report_cycles ? "cycles" : "usec");
  const double q = quotient(o);
  for (size_t i = 0; i < n && i < d.size(); ++i) std::printf("%zu, %g\n", i + 1, double(d[i]) / q);
}

// perftest keeps a deviation and its square in an int; on x86 a double
// out of an int's range converts to INT_MIN. Deviations beyond 46340
// units (cycles with -C, or milliseconds-long outliers) so make its sum
// negative and its stdev -nan, which the same samples give here.
double perftest_int(double v) {
  if (!(v > -2147483649.0 && v < 2147483648.0)) return -2147483648.0;
  return std::trunc(v);
}
}  // namespace

bool full_output(const Options& o) { return o.output == OutputMode::table; }

LatStats lat_stats(const Options& o, const LatResult& r) {
  LatStats s;
  s.iters = r.iters;
  if (o.duration) {  // perftest: the counted round trips' time over their number, always in usec
    const double usec = double(r.window_cycles) / CycleClock::cycles_per_usec();
    if (r.iters && usec > 0) s.avg = usec / rtt_factor(o) / double(r.iters), s.tps = double(r.iters) / (usec / 1e6);
    return s;
  }
  std::vector<uint64_t> d = gaps(r);
  if (d.empty()) return s;
  std::sort(d.begin(), d.end());
  // perftest leaves the two largest gaps out of every figure but t_max
  // (the second largest); its median of an even count is the mean of the
  // two middle gaps, in whole cycles.
  const size_t n = d.size() > 2 ? d.size() - 2 : d.size();
  const double q = quotient(o);
  auto at = [&](size_t i) { return double(d[std::min(i, d.size() - 1)]) / q; };
  s.min = at(0);
  s.max = at(n);
  s.typical = double((n - 1) % 2 ? (d[n / 2] + d[n / 2 - 1]) / 2 : d[n / 2]) / q;
  double sum = 0, sq = 0;
  for (size_t i = 0; i < n; ++i) sum += at(i);
  s.avg = sum / double(n);
  for (size_t i = 0; i < n; ++i) {
    const double dev = perftest_int(s.avg - at(i));
    sq += perftest_int(dev * dev);
  }
  s.stdev = sq < 0 ? -std::nan("") : std::sqrt(sq / double(n));
  s.p99 = at(size_t(std::ceil(double(n) * 0.99)));
  s.p999 = at(size_t(std::ceil(double(n) * 0.999)));
  return s;
}

void print_waiting_for_client(const Options& o) {
  print_lead_line(o);  // in every --output mode, as perftest does
  if (!full_output(o)) return;
  std::printf("\n************************************\n* Waiting for client to connect... *\n************************************\n");
  std::fflush(stdout);
}

void print_banner(const Options& o, const RunInfo& run) {
  if (!run.server) print_lead_line(o);  // in every --output mode, as perftest does
  if (!full_output(o)) return;
  std::printf("%s", kLine);
  std::printf("                    ");
  for (const std::string& w : title_words(o)) std::printf("%s ", w.c_str());
  std::printf("Test\n");
  if (o.use_event) std::printf(" Test with events. Using %s_comp0\n", run.device.c_str());
  std::printf(" Dual-port       : OFF\t\tDevice         : %s\n", run.device.c_str());
  std::printf(" Number of qps   : %u\t\tTransport type : IB\n", o.num_qps);
  std::printf(" Connection type : %s\t\tUsing SRQ      : %s\n", conn_name(o), o.use_srq ? "ON" : "OFF");
  std::printf(" PCIe relax order: %s\n", relaxed_order(o) ? "ON" : "OFF");
  std::printf(" ibv_wr* API     : OFF\n");
  if (shows_tx_depth(o, run)) std::printf(" TX depth        : %u\n", tx_depth(o));
  if (o.post_list > 1) std::printf(" Post List       : %u\n", o.post_list);
  if (shows_rx_depth(o, run)) std::printf(" RX depth        : %u\n", o.rx_depth);
  if (o.kind == Kind::bw) std::printf(" CQ Moderation   : %u\n", o.cq_mod);
  std::printf(" Mtu             : %u[B]\n", run.mtu);
  std::printf(" Link type       : Ethernet\n");
  std::printf(" GID index       : %d\n", o.gid_index);
  if (shows_out_reads(o)) std::printf(" Outstand reads  : %u\n", out_reads(o, run));
  else std::printf(" Max inline data : %u[B]\n", o.inline_size);
  std::printf(" rdma_cm QPs\t : %s\n", o.rdma_cm ? "ON" : "OFF");
  std::printf(" Data ex. method : %s\n", o.rdma_cm ? "rdma_cm" : "Ethernet");
  std::printf("%s", kLine);
  if (o.verb == Verb::raw) return;  // perftest's raw tests print MACs, not QP records
  for (const PeerInfo& p : run.local) print_address(o, "local", p);
  for (const PeerInfo& p : run.remote) print_address(o, "remote", p);
  std::printf("%s", kLine);
  std::fflush(stdout);
}

void print_bw_header(const Options& o) {
  if (!full_output(o)) return;
  std::printf("%s\n", o.report_gbits ? " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
                                     : " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]");
}

namespace {

void print_bw_figures(const Options& o, uint64_t size, uint64_t iters, const BwFigures& f) {
  if (o.output == OutputMode::bandwidth) {
    std::printf("%lf\n", f.avg);
  } else if (o.output == OutputMode::message_rate) {
    std::printf("%lf\n", f.rate);
  } else if (fine_figures(o, f)) {
    std::printf(" %-7lu    %lu           %-7.6lf            %-7.6lf            %-7.6lf\n", (unsigned long)size,
                (unsigned long)iters, f.peak, f.avg, f.rate);
  } else {
    std::printf(" %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t   %-7.6lf\n", (unsigned long)size,
                (unsigned long)iters, f.peak, f.avg, f.rate);
  }
}

// --report-both: each direction in a table of its own after the sum.
void print_direction(const Options& o, const char* title, uint64_t size, uint64_t iters, double peak_bps,
                     double avg_bps, double msg_rate) {
  std::printf("%s\n %s results: \n%s", kLine, title, kLine);
  print_bw_header(o);
  print_bw_figures(o, size, iters, {o.no_peak ? 0.0 : rate_unit(o, peak_bps), rate_unit(o, avg_bps), msg_rate / 1e6});
}

}  // namespace

void print_bw_row(const Options& o, const BwResult& r) {
  print_bw_figures(o, r.size, r.iters, bw_figures(o, r));
  if (o.report_both && r.bidirectional && full_output(o)) {
    print_direction(o, "Local", r.size, r.local_iters, r.local_peak_bps, r.local_avg_bps, r.local_msg_rate);
    print_direction(o, "Remote", r.size, r.remote_iters, r.remote_peak_bps, r.remote_avg_bps, r.remote_msg_rate);
  }
  std::fflush(stdout);
}

void print_lat_header(const Options& o) {
  if (!full_output(o)) return;
  if (o.kind == Kind::lat && o.duration)
    std::printf(" #bytes        #iterations       t_avg[usec]    tps average\n");
  else
    std::printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
                "99%% percentile[usec]   99.9%% percentile[usec] \n");
}

void print_lat_row(const Options& o, const LatResult& r) {
  const LatStats s = lat_stats(o, r);
  if (o.duration) {  // perftest's -D latency: the average and transactions per second only
    if (o.output == OutputMode::latency) std::printf("%lf\n", s.avg);
    else std::printf(" %-7lu       %lu            %-7.2f        %-7.2f\n", (unsigned long)r.size, (unsigned long)s.iters, s.avg, s.tps);
    std::fflush(stdout);
    return;
  }
  // -U: the gaps as measured; -H: sorted, without the two largest.
  std::vector<uint64_t> d = gaps(r);
  if (o.report_unsorted) print_samples(o, d, d.size());
  std::sort(d.begin(), d.end());
  if (o.report_histogram) print_samples(o, d, d.size() > 2 ? d.size() - 2 : d.size());
  if ((o.report_unsorted || o.report_histogram) && full_output(o)) {
    std::printf("%s", kLine);
    print_lat_header(o);
  }
  if (o.output == OutputMode::latency)
    std::printf("%lf\n", s.avg);
  else  // #iterations is -n, as perftest prints it, though n - 1 gaps are measured
    std::printf(" %-7lu %lu          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
                (unsigned long)r.size, (unsigned long)o.iters, s.min, s.max, s.typical, s.avg, s.stdev, s.p99, s.p999);
  std::fflush(stdout);
}

void print_ack_frames(const LatResult& r) {
  std::printf(" uroce: %lu B: %lu ACK-sized frames received\n", (unsigned long)r.size, (unsigned long)r.ack_frames);
}

void print_footer(const Options& o) {
  if (full_output(o)) std::printf("%s", kLine);
  std::fflush(stdout);
}

std::string json_path(const Options& o) {
  if (!o.out_json_file.empty()) return o.out_json_file;
  return o.out_json || o.json_default_file ? "perftest_out.json" : "";
}

bool check_json_path(const Options& o, std::string& error) {
  const std::string path = json_path(o);
  if (path.empty()) return true;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return error = "cannot write the JSON report " + path + ": " + std::strerror(errno), false;
  ::close(fd);
  return true;
}

bool write_json(const Options& o, const RunInfo& run, const std::vector<BwResult>& bw,
                const std::vector<LatResult>& lat, const nlohmann::json& cc, std::string& error) {
  const std::string path = json_path(o);
  if (path.empty() || (bw.empty() && lat.empty())) return true;
  nlohmann::ordered_json j;
  j["test_info"] = test_info(o, run);
  j["results"] = bw.empty() ? lat_json(o, lat.back()) : bw_json(o, bw.back());
  if (!cc.empty()) j["cc"] = cc;
  std::ofstream f(path, std::ios::trunc);
  f << j.dump(1) << "\n";
  f.close();
  if (!f) return error = "cannot write the JSON report " + path + ": " + std::strerror(errno), false;
  return true;
}

void print_resources(std::FILE* out) {
  long rss_pages = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    long size = 0;
    if (std::fscanf(f, "%ld %ld", &size, &rss_pages) != 2) rss_pages = 0;
    std::fclose(f);
  }
  unsigned mbufs = 0;
  rte_mempool_walk([](rte_mempool* mp, void* arg) { *static_cast<unsigned*>(arg) += rte_mempool_in_use_count(mp); },
                   &mbufs);
  unsigned zones = 0;
  rte_memzone_walk([](const rte_memzone*, void* arg) { ++*static_cast<unsigned*>(arg); }, &zones);
  // The heap of every socket EAL knows (--no-huge: one).
  uint64_t heap = 0;
  for (unsigned i = 0; i < rte_socket_count(); ++i) {
    rte_malloc_socket_stats st{};
    if (rte_malloc_get_socket_stats(rte_socket_id_by_idx(i), &st) == 0) heap += st.heap_allocsz_bytes;
  }
  std::fprintf(out, "resources: rss_kb=%ld mbufs_in_use=%u memzones=%u heap_bytes=%llu\n",
               rss_pages * (sysconf(_SC_PAGESIZE) / 1024), mbufs, zones, static_cast<unsigned long long>(heap));
  std::fflush(out);
}

}  // namespace uroce::perf
