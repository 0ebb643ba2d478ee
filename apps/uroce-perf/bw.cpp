// Bandwidth: keep tx_depth WRs in flight per QP, signal one in cq_mod,
// count completions (a signaled completion retires every WR before it).
#include <algorithm>
#include <chrono>
#include <cstring>

#include "runner.h"

namespace uroce::perf {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

ibv_wr_opcode opcode_of(const Options& o) {
  switch (o.verb) {
    case Verb::send: return IBV_WR_SEND;
    case Verb::write: return IBV_WR_RDMA_WRITE;
    case Verb::read: return IBV_WR_RDMA_READ;
    case Verb::atomic: return o.cmp_and_swap ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
    case Verb::raw: break;  // raw.cpp, no WRs
  }
  return IBV_WR_SEND;
}

struct QpState {
  uint64_t posted = 0;
  uint64_t completed = 0;
};

class BwRun {
 public:
  BwRun(Endpoint& c, Endpoint& s, const PollFn& poll, const Options& o, uint64_t size)
      : c_(c), s_(s), poll_(poll), o_(o), size_(size), qps_(c.qp_count()) {
    // Everything the measured loop needs is ready before it starts.
    for (size_t q = 0; q < qps_.size(); ++q) peers_.push_back(s.info(q));
    marks_.reserve(o.duration ? 1 << 20 : o.iters * qps_.size() / std::max<uint32_t>(o.cq_mod, 1) + 64);
  }

  BwResult run();

 private:
  bool done(Clock::time_point t0) const;
  void post(size_t q);
  void reap_client();
  void reap_server();
  void post_recv(size_t q, uint64_t id);
  void prepare();
  void verify();

  Endpoint& c_;
  Endpoint& s_;
  const PollFn& poll_;
  const Options& o_;
  uint64_t size_;
  std::vector<QpState> qps_;
  std::vector<PeerInfo> peers_;  // the server's QP addresses, one per QP
  BwResult r_;
  std::vector<std::pair<double, uint64_t>> marks_;  // (time, completed) for the peak
  Clock::time_point t0_;
};

void BwRun::post_recv(size_t q, uint64_t id) {
  // The whole buffer: receives left over from a smaller size still fit.
  ibv_sge sge{s_.addr(q), uint32_t(s_.buf_bytes()), s_.lkey()};
  RecvWr wr;
  wr.wr_id = id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  const RecvWr* bad = nullptr;
  if (s_.qp(q).post_recv(&wr, &bad) == 0) ++s_.recvs_outstanding;
}

void BwRun::prepare() {
  for (size_t q = 0; q < qps_.size(); ++q) {
    fill_pattern(c_.buf(q), size_, 0xC0 + uint32_t(q));
    fill_pattern(s_.buf(q), size_, 0x50 + uint32_t(q));
    if (o_.verb == Verb::write || o_.verb == Verb::send) std::memset(s_.buf(q), 0, size_);
    if (o_.verb == Verb::read) std::memset(c_.buf(q), 0, size_);
    if (o_.verb == Verb::atomic) std::memset(s_.buf(q), 0, 8);
    if (o_.verb == Verb::send)
      while (s_.recvs_outstanding < o_.tx_depth * qps_.size()) post_recv(q, 0);
  }
}

bool BwRun::done(Clock::time_point t0) const {
  if (o_.duration) return seconds_since(t0) >= o_.duration;
  for (const QpState& s : qps_)
    if (s.completed < o_.iters) return false;
  return true;
}

void BwRun::post(size_t q) {
  QpState& st = qps_[q];
  const uint64_t limit = o_.duration ? UINT64_MAX : o_.iters;
  while (st.posted < limit && st.posted - st.completed + o_.post_list <= o_.tx_depth) {
    SendWr wrs[64];
    ibv_sge sges[64];
    const uint32_t n = std::min<uint32_t>(o_.post_list, 64);
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t idx = st.posted + i;
      sges[i] = {c_.addr(q), uint32_t(size_), c_.lkey()};
      SendWr& w = wrs[i];
      w = SendWr{};
      w.wr_id = idx;
      w.opcode = opcode_of(o_);
      w.sg_list = &sges[i];
      w.num_sge = 1;
      // With -D every WR is signaled, so the run can stop at any WR and
      // nothing is left in flight uncounted.
      const bool last = !o_.duration && idx + 1 == o_.iters;
      w.send_flags = (o_.duration || (idx + 1) % o_.cq_mod == 0 || last) ? IBV_SEND_SIGNALED : 0;
      if (size_ <= o_.inline_size && (o_.verb == Verb::send || o_.verb == Verb::write)) w.send_flags |= IBV_SEND_INLINE;
      const PeerInfo& peer = peers_[q];
      if (o_.verb == Verb::atomic) {
        w.wr.atomic.remote_addr = peer.vaddr;
        w.wr.atomic.rkey = peer.rkey;
        w.wr.atomic.compare_add = o_.cmp_and_swap ? idx : 1;  // CAS chain: k -> k+1
        w.wr.atomic.swap = idx + 1;
      } else {
        w.wr.rdma.remote_addr = peer.vaddr;
        w.wr.rdma.rkey = peer.rkey;
      }
      w.next = i + 1 < n ? &wrs[i + 1] : nullptr;
    }
    const SendWr* bad = nullptr;
    if (c_.qp(q).post_send(wrs, &bad) != 0) {
      r_.error = "post_send failed";
      return;
    }
    st.posted += n;
  }
}

void BwRun::reap_client() {
  ibv_wc wc[32];
  int n;
  while ((n = c_.cq().poll(32, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        r_.error = "completion with error, status " + std::to_string(wc[i].status) + " (wr_id " +
                   std::to_string(wc[i].wr_id) + ")";
        return;
      }
      for (size_t q = 0; q < qps_.size(); ++q)
        if (c_.qp(q).qp_num() == wc[i].qp_num) qps_[q].completed = wc[i].wr_id + 1;
    }
    uint64_t total = 0;
    for (const QpState& s : qps_) total += s.completed;
    marks_.emplace_back(seconds_since(t0_), total);
  }
}

void BwRun::reap_server() {
  if (o_.verb != Verb::send) return;
  ibv_wc wc[32];
  int n;
  while ((n = s_.cq().poll(32, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        r_.error = "receive completion with error, status " + std::to_string(wc[i].status);
        return;
      }
      for (size_t q = 0; q < qps_.size(); ++q) {
        if (s_.qp(q).qp_num() != wc[i].qp_num) continue;
        if (o_.verify && wc[i].byte_len != size_) r_.error = "received " + std::to_string(wc[i].byte_len) + " bytes";
        --s_.recvs_outstanding;
        post_recv(q, wc[i].wr_id);
      }
    }
  }
}

void BwRun::verify() {
  for (size_t q = 0; q < qps_.size() && r_.error.empty(); ++q) {
    switch (o_.verb) {
      case Verb::send:
      case Verb::write: check_pattern(s_.buf(q), size_, 0xC0 + uint32_t(q), r_.error); break;
      case Verb::read: check_pattern(c_.buf(q), size_, 0x50 + uint32_t(q), r_.error); break;
      case Verb::atomic: {
        uint64_t v;
        std::memcpy(&v, s_.buf(q), 8);
        if (v != qps_[q].completed)
          r_.error = "remote counter is " + std::to_string(v) + ", expected " + std::to_string(qps_[q].completed);
        break;
      }
      case Verb::raw: break;
    }
  }
}

BwResult BwRun::run() {
  r_.size = size_;
  prepare();
  t0_ = Clock::now();
  while (!done(t0_) && r_.error.empty()) {
    for (size_t q = 0; q < qps_.size(); ++q) post(q);
    poll_();
    reap_client();
    reap_server();
  }
  // Duration mode: let what is in flight finish before looking at memory.
  while (o_.duration && r_.error.empty()) {
    bool idle = true;
    for (const QpState& s : qps_) idle &= s.completed >= s.posted;
    if (idle) break;
    poll_();
    reap_client();
    reap_server();
  }
  r_.seconds = seconds_since(t0_);
  for (const QpState& s : qps_) r_.iters += s.completed;
  r_.avg_bps = double(r_.iters) * double(size_) / r_.seconds;
  r_.msg_rate = double(r_.iters) / r_.seconds;
  // Peak: the best rate over any stretch of at least a tenth of the run.
  const double window = r_.seconds / 10;
  size_t j = 0;
  for (size_t i = 0; i < marks_.size(); ++i) {
    while (j + 1 < i && marks_[i].first - marks_[j + 1].first >= window) ++j;
    const double dt = marks_[i].first - marks_[j].first;
    if (dt >= window && dt > 0)
      r_.peak_bps = std::max(r_.peak_bps, double(marks_[i].second - marks_[j].second) * double(size_) / dt);
  }
  r_.peak_bps = std::max(r_.peak_bps, r_.avg_bps);
  if (o_.verify && r_.error.empty()) verify();
  return r_;
}

}  // namespace

BwResult run_bw(Endpoint& client, Endpoint& server, const PollFn& poll, const Options& o, uint64_t size) {
  return BwRun(client, server, poll, o, size).run();
}

}  // namespace uroce::perf
