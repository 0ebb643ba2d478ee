// SPDX-License-Identifier: BSD-3-Clause
#include "incast.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "../transport/rc_pair.h"
#include "sim_fabric.h"

namespace uroce::test {
namespace {

struct Flow {
  Side tx, rx;
  uint64_t done_bytes = 0, last_bytes = 0;
  uint32_t outstanding = 0;
  uint64_t start_ns = 0, stop_ns = 0;
  bool failed = false;
};

QpOptions incast_qp(const IncastConfig& cfg) {
  QpOptions o;
  o.max_send_wr = o.max_recv_wr = cfg.depth + 4;
  o.timeout = 10;  // 4 ms, as the transport tests
  o.retry_cnt = 7;
  return o;
}

// Keeps `depth` WRITEs in flight on each flow that has not stopped.
void service(std::vector<std::unique_ptr<Flow>>& flows, const IncastConfig& cfg, uint64_t now) {
  for (auto& fp : flows) {
    Flow& f = *fp;
    ibv_wc wc[32];
    int k;
    while ((k = f.tx.cq->poll(32, wc)) > 0) {
      for (int i = 0; i < k; ++i) {
        --f.outstanding;
        if (wc[i].status != IBV_WC_SUCCESS)
          f.failed = true;
        else
          f.done_bytes += cfg.msg_bytes;
      }
    }
    while (!f.failed && now >= f.start_ns && now < f.stop_ns && f.outstanding < cfg.depth) {
      const size_t slot = (f.done_bytes / cfg.msg_bytes + f.outstanding) % cfg.depth;
      const size_t off = slot * cfg.msg_bytes;
      if (post_wr(f.tx, IBV_WR_RDMA_WRITE, slot, off, cfg.msg_bytes, f.rx.addr(off), f.rx.mr->rkey()) != 0) {
        f.failed = true;
        break;
      }
      ++f.outstanding;
    }
  }
}

}  // namespace

IncastResult run_incast(const IncastConfig& cfg) {
  const auto wall0 = std::chrono::steady_clock::now();
  sim::SimFabric fabric(cfg.seed, 1500);
  sim::LinkFaults transit;
  transit.latency_ns = cfg.fabric_ns;
  fabric.wire().set_faults(transit);
  const uint64_t sender_bps = cfg.sender_bps != 0 ? cfg.sender_bps : cfg.link_bps;
  sim::SwitchPortConfig port{sender_bps, cfg.cable_ns, 0, {}};
  fabric.wire().enable_switch(port);

  DeviceConfig dc;
  dc.mbufs = 1023;  // 17 devices fit the tests' 256 MB of EAL memory
  dc.cc = cfg.cc;
  dc.cc.line_rate_mbps = sender_bps / 1'000'000;
  Device& receiver = fabric.add_device("10.0.0.1", dc);
  sim::SwitchPortConfig bottleneck = port;
  bottleneck.rate_bps = cfg.link_bps;
  bottleneck.buffer_bytes = cfg.buffer_bytes;
  bottleneck.red = cfg.red;
  fabric.wire().set_switch_port(fabric.port(0), bottleneck);

  QpOptions o = incast_qp(cfg);
  o.bytes = size_t(cfg.msg_bytes) * cfg.depth;
  std::vector<std::unique_ptr<Flow>> flows;
  for (int i = 0; i < cfg.senders; ++i) {
    Device& dev = fabric.add_device("10.0.0." + std::to_string(2 + i), dc);
    auto f = std::make_unique<Flow>();
    connect_pair(f->tx, dev, with_psn(o, 0x100), f->rx, receiver, with_psn(o, 0x200));
    f->start_ns = uint64_t(i) * cfg.start_gap_ns;
    f->stop_ns = i == 0 ? cfg.run_ns : cfg.stop_others_ns;
    flows.push_back(std::move(f));
  }

  IncastResult r;
  sim::SimWire& wire = fabric.wire();
  auto& clock = fabric.clock();
  uint64_t link_bytes = 0;
  uint64_t next_start = 0;
  for (uint64_t t = cfg.sample_ns; t <= cfg.run_ns; t += cfg.sample_ns) {
    // Stop at every flow start, so it posts on time even on an idle fabric.
    for (;;) {
      next_start = kNever;
      for (auto& f : flows)
        if (f->start_ns > clock.now_ns()) next_start = std::min(next_start, f->start_ns);
      const uint64_t until = std::min(t, next_start);
      fabric.run_until(
          [&] {
            service(flows, cfg, clock.now_ns());
            return false;
          },
          until - clock.now_ns());
      clock.advance_to(until);
      if (until == t) break;
    }
    clock.advance_to(t);
    service(flows, cfg, t);
    IncastSample s;
    s.t_ns = t;
    for (auto& f : flows) {
      s.goodput_gbps.push_back(double(f->done_bytes - f->last_bytes) * 8 / double(cfg.sample_ns));
      f->last_bytes = f->done_bytes;
      const cc::CcStats st = f->tx.qp->cc_stats();
      s.rc_gbps.push_back(st.rate_mbps / 1000);
      s.alpha.push_back(st.alpha);
    }
    s.queue_bytes = wire.queue_bytes(fabric.port(0));
    const sim::SwitchCounters& sc = wire.switch_counters(fabric.port(0));
    // Sent = taken in, less what is still queued.
    const uint64_t out = sc.enqueued_bytes - s.queue_bytes;
    s.link_gbps = double(out - link_bytes) * 8 / double(cfg.sample_ns);
    link_bytes = out;
    s.below_kmin_ns = sc.time_below_kmin_ns;
    s.above_kmax_ns = sc.time_above_kmax_ns;
    s.depth_byte_ns = sc.depth_byte_ns;
    r.samples.push_back(std::move(s));
  }
  for (int i = 0; i < cfg.senders; ++i) {
    const Flow& f = *flows[size_t(i)];
    IncastFlow out;
    out.bytes = f.done_bytes;
    out.counters = f.tx.qp->counters();
    out.cc = f.tx.qp->cc_stats();
    out.receiver_cc = f.rx.qp->cc_stats();
    out.queue_dropped = wire.counters(fabric.port(size_t(i) + 1), fabric.port(0)).queue_dropped;
    out.ecn_marked = wire.counters(fabric.port(size_t(i) + 1), fabric.port(0)).ecn_marked;
    out.failed = f.failed;
    r.flows.push_back(out);
  }
  r.bottleneck = wire.switch_counters(fabric.port(0));
  flows.clear();  // QPs and regions before the devices
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

std::vector<double> IncastResult::mean_goodput(uint64_t from_ns, uint64_t to_ns) const {
  std::vector<double> sum(flows.size(), 0.0);
  int n = 0;
  for (const auto& s : samples) {
    if (s.t_ns <= from_ns || s.t_ns > to_ns) continue;
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += s.goodput_gbps[i];
    ++n;
  }
  for (auto& x : sum) x = n > 0 ? x / n : 0.0;
  return sum;
}

double IncastResult::mean_link_gbps(uint64_t from_ns, uint64_t to_ns) const {
  double sum = 0;
  int n = 0;
  for (const auto& s : samples) {
    if (s.t_ns <= from_ns || s.t_ns > to_ns) continue;
    sum += s.link_gbps;
    ++n;
  }
  return n > 0 ? sum / n : 0.0;
}

namespace {

// The change of a cumulative integral over (from, to], divided by its length
// (a share of the time for a time, the mean for a byte*ns integral).
double share(const std::vector<IncastSample>& samples, uint64_t from_ns, uint64_t to_ns,
             double IncastSample::*field) {
  const IncastSample* a = nullptr;
  const IncastSample* b = nullptr;
  for (const auto& s : samples) {
    if (s.t_ns == from_ns) a = &s;
    if (s.t_ns == to_ns) b = &s;
  }
  if (a == nullptr || b == nullptr || to_ns <= from_ns) return 0.0;
  return (b->*field - a->*field) / double(to_ns - from_ns);
}

}  // namespace

double IncastResult::time_below_kmin(uint64_t from_ns, uint64_t to_ns) const {
  return share(samples, from_ns, to_ns, &IncastSample::below_kmin_ns);
}

double IncastResult::time_above_kmax(uint64_t from_ns, uint64_t to_ns) const {
  return share(samples, from_ns, to_ns, &IncastSample::above_kmax_ns);
}

double IncastResult::mean_queue_bytes(uint64_t from_ns, uint64_t to_ns) const {
  return share(samples, from_ns, to_ns, &IncastSample::depth_byte_ns);
}

uint64_t IncastResult::retransmitted() const {
  uint64_t n = 0;
  for (const auto& f : flows) n += f.counters.retransmitted_pkts;
  return n;
}

uint64_t IncastResult::cnps_received() const {
  uint64_t n = 0;
  for (const auto& f : flows) n += f.cc.cnps_received;
  return n;
}

double jain(const std::vector<double>& x) {
  double s = 0, s2 = 0;
  for (double v : x) {
    s += v;
    s2 += v * v;
  }
  return s2 > 0 ? s * s / (double(x.size()) * s2) : 0.0;
}

bool write_tsv(const IncastResult& r, const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "t_ms\tqueue_kb\tlink_gbps");
  for (size_t i = 0; i < r.flows.size(); ++i)
    std::fprintf(f, "\tgoodput%zu_gbps\trc%zu_gbps\talpha%zu", i, i, i);
  std::fprintf(f, "\n");
  for (const auto& s : r.samples) {
    std::fprintf(f, "%.3f\t%.2f\t%.4f", double(s.t_ns) / 1e6, double(s.queue_bytes) / 1000, s.link_gbps);
    for (size_t i = 0; i < s.goodput_gbps.size(); ++i)
      std::fprintf(f, "\t%.4f\t%.4f\t%.4f", s.goodput_gbps[i], s.rc_gbps[i], s.alpha[i]);
    std::fprintf(f, "\n");
  }
  return std::fclose(f) == 0;
}

}  // namespace uroce::test
