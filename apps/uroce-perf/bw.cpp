// SPDX-License-Identifier: BSD-3-Clause
#include "bw.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "app_support.h"

namespace uroce::perf {
namespace {

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

// The bytes each side starts with: the client's are what WRITE and SEND
// carry, the server's what READ fetches.
uint32_t client_seed(size_t q) { return 0xC0 + uint32_t(q); }
uint32_t server_seed(size_t q) { return 0x50 + uint32_t(q); }

}  // namespace

BwClient::BwClient(Endpoint& e, const std::vector<PeerInfo>& peers, const Options& o, uint64_t size)
    : e_(e), peers_(peers), o_(o), size_(size), qps_(e.qp_count()) {
  // Everything the measured loop needs is ready before it starts.
  marks_.reserve(kMaxMarks);
  r_.size = size;
}

void BwClient::start() {
  for (size_t q = 0; q < qps_.size(); ++q) {
    fill_pattern(e_.buf(q), size_, client_seed(q));
    if (o_.verb == Verb::read) std::memset(e_.buf(q), 0, size_);
  }
}

// Reading the clock costs more than a post on some VMs (clock_gettime
// through a slow vDSO path): every 32 steps is fine-grained enough for -D.
double BwClient::elapsed() {
  if (ticks_++ % 32 == 0) elapsed_ = std::chrono::duration<double>(Clock::now() - t0_).count();
  return elapsed_;
}

bool BwClient::done() {
  if (!r_.error.empty()) return true;
  if (o_.duration) {
    if (!stopping_ && elapsed() < o_.duration) return false;
    stopping_ = true;
    // Let what is in flight finish before anyone looks at memory.
    for (const QpState& s : qps_)
      if (s.completed < s.posted) return false;
    return true;
  }
  for (const QpState& s : qps_)
    if (s.completed < o_.iters) return false;
  return true;
}

void BwClient::post(size_t q) {
  QpState& st = qps_[q];
  const uint64_t limit = o_.duration ? (stopping_ ? st.posted : UINT64_MAX) : o_.iters;
  while (st.posted < limit && st.posted - st.completed + o_.post_list <= o_.tx_depth) {
    SendWr* wrs = wrs_.data();  // members: not 64 WRs constructed per post
    ibv_sge* sges = sges_.data();
    const uint32_t n = uint32_t(std::min<uint64_t>(std::min<uint32_t>(o_.post_list, 64), limit - st.posted));
    const PeerInfo& peer = peers_[q];
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t idx = st.posted + i;
      sges[i] = {e_.addr(q), uint32_t(size_), e_.lkey()};
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
    if (n == 0 || e_.qp(q).post_send(wrs, &bad) != 0) {
      if (n) r_.error = "post_send failed";
      return;
    }
    st.posted += n;
  }
}

void BwClient::reap() {
  ibv_wc wc[32];
  int n;
  while ((n = e_.cq().poll(32, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        r_.error = "completion with error: " + app::wc_status_text(wc[i].status) + " (wr_id " +
                   std::to_string(wc[i].wr_id) + ")";
        return;
      }
      for (size_t q = 0; q < qps_.size(); ++q)
        if (e_.qp(q).qp_num() == wc[i].qp_num) qps_[q].completed = wc[i].wr_id + 1;
    }
    uint64_t total = 0;
    for (const QpState& s : qps_) total += s.completed;
    mark(elapsed(), total);
  }
}

void BwClient::mark(double t, uint64_t total) {
  if (!marks_.empty() && t - marks_.back().first <= mark_gap_) {
    marks_.back().second = total;  // one mark per clock reading (or gap) is all the peak can use
    return;
  }
  if (marks_.size() == kMaxMarks) {
    size_t kept = 0;
    for (size_t i = 0; i < marks_.size(); i += 2) marks_[kept++] = marks_[i];
    marks_.resize(kept);
    mark_gap_ = std::max(mark_gap_ * 2, (t - marks_.front().first) / double(kMaxMarks));
  }
  marks_.emplace_back(t, total);
}

bool BwClient::step() {
  if (!started_) {
    started_ = true;
    t0_ = Clock::now();
  }
  for (size_t q = 0; q < qps_.size() && r_.error.empty(); ++q) post(q);
  reap();
  if (elapsed_ >= next_progress_) {
    next_progress_ += 2;
    uint64_t total = 0;
    for (const QpState& s : qps_) total += s.completed;
    std::fprintf(stderr, "uroce-perf: %lu B: %lu messages completed in %.0f s\n", (unsigned long)size_,
                 (unsigned long)total, elapsed_);
  }
  return done();
}

BwResult BwClient::finish() {
  r_.seconds = std::chrono::duration<double>(Clock::now() - t0_).count();
  for (const QpState& s : qps_) {
    r_.iters += s.completed;
    r_.per_qp.push_back(s.completed);
  }
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
  if (o_.verify && r_.error.empty() && o_.verb == Verb::read)
    for (size_t q = 0; q < qps_.size() && r_.error.empty(); ++q)
      check_pattern(e_.buf(q), size_, server_seed(q), r_.error);
  return r_;
}

BwServer::BwServer(Endpoint& e, const Options& o, uint64_t size) : e_(e), o_(o), size_(size) {}

void BwServer::post_recv(size_t q, uint64_t id) {
  // The whole buffer: receives left over from a smaller size still fit.
  ibv_sge sge{e_.addr(q), uint32_t(e_.buf_bytes()), e_.lkey()};
  RecvWr wr;
  wr.wr_id = id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  const RecvWr* bad = nullptr;
  if (e_.qp(q).post_recv(&wr, &bad) == 0) ++e_.recvs_outstanding;
}

void BwServer::start() {
  for (size_t q = 0; q < e_.qp_count(); ++q) {
    fill_pattern(e_.buf(q), size_, server_seed(q));
    if (o_.verb == Verb::write || o_.verb == Verb::send) std::memset(e_.buf(q), 0, size_);
    if (o_.verb == Verb::atomic) std::memset(e_.buf(q), 0, 8);
    if (o_.verb == Verb::send)
      while (e_.recvs_outstanding < o_.tx_depth * (q + 1)) post_recv(q, q);
  }
}

void BwServer::step() {
  if (o_.verb != Verb::send) return;
  ibv_wc wc[32];
  int n;
  while ((n = e_.cq().poll(32, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        if (error_.empty()) error_ = "receive completion with error: " + app::wc_status_text(wc[i].status);
        continue;
      }
      if (o_.verify && wc[i].byte_len != size_ && error_.empty())
        error_ = "received " + std::to_string(wc[i].byte_len) + " bytes, expected " + std::to_string(size_);
      ++received_;
      --e_.recvs_outstanding;
      post_recv(wc[i].wr_id, wc[i].wr_id);
    }
  }
}

std::string BwServer::verify(const std::vector<uint64_t>& completed) const {
  std::string error = error_;
  for (size_t q = 0; q < e_.qp_count() && error.empty(); ++q) {
    if (o_.verb == Verb::send || o_.verb == Verb::write) {
      check_pattern(e_.buf(q), size_, client_seed(q), error);
    } else if (o_.verb == Verb::atomic && q < completed.size()) {
      uint64_t v;
      std::memcpy(&v, e_.buf(q), 8);
      if (v != completed[q])
        error = "remote counter is " + std::to_string(v) + ", expected " + std::to_string(completed[q]);
    }
  }
  return error;
}

BwResult run_bw(Endpoint& client, Endpoint& server, const PollFn& poll, const Options& o, uint64_t size) {
  std::vector<PeerInfo> peers;
  for (size_t q = 0; q < server.qp_count(); ++q) peers.push_back(server.info(q));
  BwClient c(client, peers, o, size);
  BwServer s(server, o, size);
  s.start();
  c.start();
  while (!c.step()) {
    poll();
    s.step();
  }
  BwResult r = c.finish();
  if (r.error.empty() && !s.error().empty()) r.error = s.error();
  if (o.verify && r.error.empty()) r.error = s.verify(r.per_qp);
  return r;
}

}  // namespace uroce::perf
