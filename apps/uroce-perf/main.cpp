// SPDX-License-Identifier: BSD-3-Clause
// uroce-perf: perftest's benchmarks (ib_write_bw, ib_read_lat, ...) over
// uroce, with perftest's flags, banner and result table.
#include <rte_mbuf.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "endpoint.h"
#include <unistd.h>

#include "daemon_run.h"
#include "loopback.h"
#include "options.h"
#include "perftest_glue.h"
#include "raw.h"
#include "remote.h"
#include "report.h"
#include "bw.h"
#include "lat.h"
#include "runner.h"
#include "uroce/port/eal.h"

using namespace uroce;
using namespace uroce::perf;

namespace {

volatile std::sig_atomic_t interrupted = 0;

int fail(const std::string& msg) {
  std::fprintf(stderr, "uroce-perf: %s\n", msg.c_str());
  return 1;
}

std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// raw_bw / raw_lat on the loopback link's ports; the engines stay idle.
int run_raw(const Options& o, Loopback& lb, const RunInfo& run) {
  rte_mempool* pool =
      rte_pktmbuf_pool_create("uroce_raw", 8191, 256, 0, RTE_PKTMBUF_HEADROOM + 9100, SOCKET_ID_ANY);
  if (pool == nullptr) return fail("cannot create the raw frame pool (give EAL more memory with --eal \"-m MB\")");
  PacketPort& a = lb.cap_a ? static_cast<PacketPort&>(*lb.cap_a) : *lb.port_a;
  PacketPort& b = *lb.port_b;
  std::vector<BwResult> bw;
  std::vector<LatResult> lat;
  std::string failure, error;
  o.kind == Kind::bw ? print_bw_header(o) : print_lat_header(o);
  for (uint64_t s : sizes(o)) {
    const uint64_t size = raw_frame_size(s, a.mtu());
    if (o.kind == Kind::bw) {
      bw.push_back(run_raw_bw(a, b, pool, o, size));
      print_bw_row(o, bw.back());
      failure = bw.back().error;
    } else {
      lat.push_back(run_raw_lat(a, b, pool, o, size));
      print_lat_row(o, lat.back());
      if (o.raw_acks) print_ack_frames(lat.back());
      failure = lat.back().error;
    }
    if (!failure.empty()) break;
  }
  print_footer(o);
  if (!write_json(o, run, bw, lat, nlohmann::json::object(), error)) return fail(error);
  if (!failure.empty()) return fail(failure);
  if (o.verify) std::printf(" uroce: raw frames in order and intact; data verified\n");
  return 0;
}

// What perftest's SEND server prints as its row, for the side a loopback
// run does not print (-b: each side's row is the sum already).
void print_receiver(const Options& o, const BwResult& rx) {
  if (o.verb != Verb::send || o.bidirectional || !full_output(o)) return;
  const double unit = o.report_gbits ? 125e6 : 1048576.0;
  std::printf(" uroce: receiver: %lu B, %lu messages, BW average %.2f %s, MsgRate %.6f Mpps\n",
              (unsigned long)rx.size, (unsigned long)rx.iters, rx.avg_bps / unit, o.report_gbits ? "Gb/sec" : "MB/sec",
              rx.msg_rate / 1e6);
}

void print_lost(const BwResult& r, const Options& o) {
  if (r.lost)
    std::printf(" uroce: %lu B: %lu %s messages lost on the way\n", (unsigned long)r.size, (unsigned long)r.lost,
                o.conn == Conn::uc ? "UC" : "UD");
}

int run_loopback(Options o) {
  EalConfig eal;
  eal.args = split(o.eal);
  eal.quiet = true;
  std::string error;
  if (!eal_init(eal, error)) return fail(error);
  const uint32_t mtu = o.mtu ? o.mtu : 1024;
  cap_ud_sizes(o, mtu);
  Loopback lb;
  // Jumbo link when the path MTU needs it, like a real setup would.
  if (!lb.open(mtu > 1024 ? 9000 : 1500, o.pcap, o.cc, o.idle_sleep_us, error)) return fail(error);
  const uint64_t bytes = buffer_bytes(o);
  auto server = Endpoint::create(*lb.server, o, bytes, 0x5E, error);
  if (!server) return fail("server: " + error);
  auto client = Endpoint::create(*lb.client, o, bytes, 0xC1, error);
  if (!client) return fail("client: " + error);
  for (size_t q = 0; q < o.num_qps; ++q) {
    if (int err = server->connect(q, client->info(q), o, mtu_enum(mtu)))
      return fail("connecting the server QP failed: " + std::string(strerror(err)));
    if (int err = client->connect(q, server->info(q), o, mtu_enum(mtu)))
      return fail("connecting the client QP failed: " + std::string(strerror(err)));
  }
  RunInfo run;
  run.device = o.ib_dev.empty() ? "uroce_lb1 (net_ring loopback)" : o.ib_dev;
  // A raw test's MTU is its largest frame: the link MTU and the Ethernet header and FCS.
  run.mtu = o.verb == Verb::raw ? lb.port_a->mtu() + 18 : mtu;
  for (size_t q = 0; q < o.num_qps; ++q) {
    run.local.push_back(client->info(q));
    run.remote.push_back(server->info(q));
  }
  print_banner(o, run);
  if (o.verb == Verb::raw) return run_raw(o, lb, run);
  // -e: the engines run on threads of their own and the loops sleep on
  // the endpoints' completion channels.
  if (o.use_event && (!lb.server->start_engine_thread(-1, error) || !lb.client->start_engine_thread(-1, error)))
    return fail(error);
  // --engine-lcores 2: the server's engine on its own lcore; this thread
  // posts, polls and drives the client's engine (Device::poll of the
  // threaded server does nothing).
  if (o.engine_lcores == 2 && !lb.server->start_engine_thread(-1, error)) return fail(error);
  const PollFn poll = o.use_event ? PollFn([&] { wait_events({client.get(), server.get()}, event_wait_ms(o)); })
                                  : PollFn([&] { lb.poll(); });
  std::vector<BwResult> bw;
  std::vector<LatResult> lat;
  std::vector<BwResult> receivers;  // SEND: the receiving side's figures
  std::string failure;
  o.kind == Kind::bw ? print_bw_header(o) : print_lat_header(o);
  if (o.run_infinitely) {
    // A row every -D seconds until SIGINT (perftest's --run_infinitely).
    std::signal(SIGINT, [](int) { interrupted = 1; });
    while (!interrupted && failure.empty()) {
      const BwResult r = run_bw(*client, *server, poll, o, o.size);
      if (!interrupted || !r.error.empty()) print_bw_row(o, r);
      failure = r.error;
    }
  }
  for (uint64_t size : sizes(o)) {
    if (o.run_infinitely) break;
    if (o.kind == Kind::bw) {
      BwResult rx;
      bw.push_back(run_bw(*client, *server, poll, o, size, &rx));
      print_bw_row(o, bw.back());
      receivers.push_back(rx);
      failure = bw.back().error;
    } else {
      lat.push_back(run_lat(*client, *server, poll, o, size));
      print_lat_row(o, lat.back());
      failure = lat.back().error;
    }
    if (!failure.empty()) break;
  }
  print_footer(o);
  for (const BwResult& r : bw) print_lost(r, o);
  for (const BwResult& r : receivers) print_receiver(o, r);
  nlohmann::json cc = cc_stats_json(o, "client", *client);
  cc.update(cc_stats_json(o, "server", *server));
  if (!write_json(o, run, bw, lat, cc, error)) return fail(error);
  const DeviceCounters c = lb.client->counters();
  std::printf(" uroce: %lu packets sent, %lu received, %lu retransmitted%s\n",
              (unsigned long)c.transport.sent_pkts, (unsigned long)c.transport.rcvd_pkts,
              (unsigned long)c.transport.retransmitted_pkts, o.verify && failure.empty() ? "; data verified" : "");
  print_cc_stats(o, "client", *client);
  print_cc_stats(o, "server", *server);
  if (!failure.empty()) return fail(failure);
  if (const std::string limit = check_limits(o, bw); !limit.empty()) {
    std::fprintf(stderr, "%s\n", limit.c_str());  // perftest's line, and its failure
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = parse_options(argc, argv, o); rc >= 0) return rc;
  if (std::string error; !check_json_path(o, error)) return fail(error);
  if (!o.daemon.empty()) {
    const int rc = run_daemon(o);
    _exit(rc);  // no EAL ran: nothing to shut down
  }
  if (!o.loopback) run_remote(o);  // ends the process
  return run_loopback(o);
}
