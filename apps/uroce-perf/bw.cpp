// SPDX-License-Identifier: BSD-3-Clause
#include "bw.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

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

// Errors that a peer running another test causes: perftest's QPs allow only
// their own verb, and only SEND tests post receives.
std::string mismatch_hint(ibv_wc_status st) {
  if (st == IBV_WC_REM_ACCESS_ERR || st == IBV_WC_REM_INV_REQ_ERR)
    return ": the peer's QP does not allow this operation; it likely runs another test";
  if (st == IBV_WC_RNR_RETRY_EXC_ERR) return ": the peer posted no receive; it likely runs another test";
  return "";
}

}  // namespace

BwClient::BwClient(Endpoint& e, const std::vector<PeerInfo>& peers, const Options& o, uint64_t size)
    : e_(e), peers_(peers), o_(o), size_(size), qps_(e.qp_count()) {
  // Everything the measured loop needs is ready before it starts.
  marks_.reserve(kMaxMarks);
  qp_index_.reserve(qps_.size());
  for (size_t q = 0; q < qps_.size(); ++q) qp_index_.emplace(e.qp(q).qp_num(), uint32_t(q));
  ready_.reserve(qps_.size());
  r_.size = size;
  if (o.rate_limited) {
    // --rate_units: g Gb/s (10^9 bits), M MiB/s, p messages per second.
    const double bytes = double(std::max<uint64_t>(size, 1));
    msgs_per_s_ = o.rate_units == 'p' ? o.rate_limit
                  : o.rate_units == 'M' ? o.rate_limit * 1048576.0 / bytes
                                        : o.rate_limit * 1e9 / 8 / bytes;
  }
}

uint64_t BwClient::total() const { return completed_total_; }

// perftest's SW limiter: bursts of --burst_size WRs (default -t), each
// burst allowed once its share of the rate's time has passed.
uint64_t BwClient::pace_limit() {
  if (msgs_per_s_ <= 0) return UINT64_MAX;
  const double t = std::chrono::duration<double>(Clock::now() - t0_).count();
  const uint64_t burst = std::max<uint32_t>(o_.burst_size, 1);
  return (uint64_t(t * msgs_per_s_ / double(burst)) + 1) * burst;
}

void BwClient::window(double t) {
  if (!o_.duration || o_.run_infinitely) return;
  if (!in_window_ && t >= o_.margin_s) {
    in_window_ = true;
    window_start_ = {t, total()};
  }
  if (in_window_ && !window_closed_ && t >= double(o_.duration) - double(o_.margin_s)) {
    window_closed_ = true;
    window_end_ = {t, total()};
  }
}

void BwClient::start() {
  for (size_t q = 0; q < qps_.size(); ++q) {
    fill_pattern(e_.buf(q), size_, client_seed(q));
    if (o_.verb == Verb::read) std::memset(e_.buf(q), 0, size_);
  }
  warmed_ = !o_.perform_warm_up || o_.verb == Verb::send;  // perftest: Atomic, Read and Write BW tests
}

// One send queue's worth of WRs per QP before the clock starts, so that
// the measured run finds warm caches and a resolved path. Warm-up atomics
// leave the remote counter as it was (add 0, compare with a value it
// never holds), so --verify still counts only the measured ones.
bool BwClient::warm_up() {
  const uint64_t per_qp = o_.tx_depth;
  if (warm_posted_ == 0) {
    for (size_t q = 0; q < qps_.size(); ++q) {
      for (uint64_t i = 0; i < per_qp; ++i) {
        ibv_sge sge{e_.addr(q), uint32_t(size_), e_.lkey(q)};
        SendWr w;
        w.wr_id = UINT64_MAX;
        w.opcode = opcode_of(o_);
        w.sg_list = &sge;
        w.num_sge = 1;
        w.send_flags = IBV_SEND_SIGNALED;
        if (o_.verb == Verb::atomic) {
          w.wr.atomic.remote_addr = peers_[q].vaddr;
          w.wr.atomic.rkey = peers_[q].rkey;
          w.wr.atomic.compare_add = o_.cmp_and_swap ? UINT64_MAX : 0;
          w.wr.atomic.swap = 0;
        } else {
          w.wr.rdma.remote_addr = peers_[q].vaddr;
          w.wr.rdma.rkey = peers_[q].rkey;
        }
        const SendWr* bad = nullptr;
        if (e_.qp(q).post_send(&w, &bad) != 0) return r_.error = "post_send failed (warm-up)", true;
        ++warm_posted_;
      }
    }
  }
  ibv_wc wc[32];
  int n;
  while ((n = e_.poll(e_.cq(), 32, wc)) > 0)
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) return r_.error = "warm-up completion with error, status " + std::to_string(wc[i].status), true;
      ++warm_done_;
    }
  return warm_done_ == warm_posted_;
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
    return completed_total_ == posted_total_;
  }
  return completed_total_ == o_.iters * qps_.size();
}

// The most WRs QP q may have posted by now (-n, or the end of -D).
uint64_t BwClient::post_limit(size_t q) const {
  const QpState& st = qps_[q];
  return o_.duration ? (stopping_ ? st.posted : UINT64_MAX) : o_.iters;
}

bool BwClient::may_post(size_t q) const {
  const QpState& st = qps_[q];
  return st.posted < post_limit(q) && st.posted - st.completed + o_.post_list <= o_.tx_depth;
}

void BwClient::make_ready(size_t q) {
  if (qps_[q].ready || !may_post(q)) return;
  qps_[q].ready = true;
  ready_.push_back(uint32_t(q));
}

// Only the QPs with room in their send queue get a turn: a step costs
// what completed since the last one, not the number of QPs, which with
// thousands of QPs in flight is nearly all waiting for completions. At most
// kStepPosts WRs a step: the first step of -q 10000 would otherwise post a
// million WRs before the engine next reads its port, long enough for the
// first ones' ACK timers to expire with their ACKs waiting unread.
void BwClient::post_ready() {
  const uint64_t stop = posted_total_ + kStepPosts;
  for (size_t i = 0; i < ready_.size() && r_.error.empty() && posted_total_ < stop;) {
    const uint32_t q = ready_[i];
    post(q);
    if (may_post(q)) {  // --rate_limit held it back, or -l WRs more fit
      ++i;
      continue;
    }
    qps_[q].ready = false;
    ready_[i] = ready_.back();
    ready_.pop_back();
  }
}

void BwClient::post(size_t q) {
  QpState& st = qps_[q];
  uint64_t limit = post_limit(q);
  if (msgs_per_s_ > 0) {
    const uint64_t allowed = pace_limit();
    if (allowed <= posted_total_) return;
    limit = std::min(limit, st.posted + (allowed - posted_total_));
  }
  while (st.posted < limit && st.posted - st.completed + o_.post_list <= o_.tx_depth) {
    SendWr* wrs = wrs_.data();  // members: not 64 WRs constructed per post
    ibv_sge* sges = sges_.data();
    const uint32_t n = uint32_t(std::min<uint64_t>(std::min<uint32_t>(o_.post_list, 64), limit - st.posted));
    const PeerInfo& peer = peers_[q];
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t idx = st.posted + i;
      sges[i] = {e_.addr(q), uint32_t(size_), e_.lkey(q)};
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
      if (e_.ud()) {
        w.wr.ud.ah = e_.ah(q);
        w.wr.ud.remote_qpn = peer.qpn;
        w.wr.ud.remote_qkey = kUdQkey;
      } else if (o_.verb == Verb::atomic) {
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
    posted_total_ += n;
  }
}

void BwClient::reap() {
  ibv_wc wc[32];
  int n;
  while ((n = e_.poll(e_.cq(), 32, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        r_.error = "completion with error: " + app::wc_status_text(wc[i].status) + " (wr_id " +
                   std::to_string(wc[i].wr_id) + ")" + mismatch_hint(wc[i].status);
        return;
      }
      const auto it = qp_index_.find(wc[i].qp_num);
      if (it == qp_index_.end()) continue;
      QpState& st = qps_[it->second];
      completed_total_ += wc[i].wr_id + 1 - st.completed;
      st.completed = wc[i].wr_id + 1;
      make_ready(it->second);
    }
    if (!o_.no_peak) mark(elapsed(), total());
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
  if (!warmed_) {
    warmed_ = warm_up();
    return !r_.error.empty();
  }
  if (!started_) {
    started_ = true;
    t0_ = Clock::now();
    for (size_t q = 0; q < qps_.size(); ++q) make_ready(q);
  }
  post_ready();
  reap();
  window(elapsed());
  if (elapsed_ >= next_progress_ && !o_.run_infinitely) {
    next_progress_ += 2;
    std::fprintf(stderr, "uroce-perf: %lu B: %lu messages completed in %.0f s\n", (unsigned long)size_,
                 (unsigned long)total(), elapsed_);
  }
  return done();
}

BwResult BwClient::finish() {
  r_.seconds = std::chrono::duration<double>(Clock::now() - t0_).count();
  for (const QpState& s : qps_) {
    r_.iters += s.completed;
    r_.per_qp.push_back(s.completed);
  }
  // -D: only what completed between the margins counts (perftest's -f).
  if (window_closed_ && window_end_.first > window_start_.first) {
    r_.iters = window_end_.second - window_start_.second;
    r_.seconds = window_end_.first - window_start_.first;
  }
  r_.avg_bps = double(r_.iters) * double(size_) / r_.seconds;
  r_.msg_rate = double(r_.iters) / r_.seconds;
  if (o_.no_peak) {  // -N (and -D, or more than 20000 iterations): perftest reports a peak of 0
    r_.peak_bps = 0;
    return verify_read(), r_;
  }
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
  verify_read();
  return r_;
}

void BwClient::verify_read() {
  if (o_.verify && r_.error.empty() && o_.verb == Verb::read)
    for (size_t q = 0; q < qps_.size() && r_.error.empty(); ++q)
      check_pattern(e_.buf(q), size_, server_seed(q), r_.error);
}

BwServer::BwServer(Endpoint& e, const Options& o, uint64_t size) : e_(e), o_(o), size_(size) {}

void BwServer::post_recv(size_t q, uint64_t id) {
  // The whole buffer: receives left over from a smaller size still fit.
  ibv_sge sge{e_.addr(q) + e_.exposed_offset(), uint32_t(e_.buf_bytes() - e_.exposed_offset()), e_.lkey(q)};
  RecvWr wr;
  wr.wr_id = id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (e_.post_recv(q, &wr) == 0) ++e_.recvs_outstanding;
}

void BwServer::start() {
  for (size_t q = 0; q < e_.qp_count(); ++q) {
    fill_pattern(target(q), size_, server_seed(q));
    if (o_.verb == Verb::write || o_.verb == Verb::send) std::memset(target(q), 0, size_);
    if (o_.verb == Verb::atomic) std::memset(target(q), 0, 8);
    // -r receives per QP (perftest's rx_depth), or in all through the SRQ.
    // With the SRQ any QP's message may land in any buffer: spread them.
    const uint32_t want = o_.use_srq ? o_.rx_depth : o_.rx_depth * uint32_t(q + 1);
    if (o_.verb == Verb::send && o_.use_srq && q + 1 == e_.qp_count())
      for (uint64_t k = 0; e_.recvs_outstanding < want; ++k) post_recv(k % e_.qp_count(), k % e_.qp_count());
    else if (o_.verb == Verb::send && !o_.use_srq)
      while (e_.recvs_outstanding < want) post_recv(q, q);
  }
}

void BwServer::step() {
  if (o_.verb != Verb::send) return;
  ibv_wc wc[32];
  int n;
  uint64_t got = 0;
  // A UD receive's byte_len counts the GRH slot too.
  const uint64_t expected = size_ + e_.grh_room();
  while ((n = e_.poll(e_.recv_cq(), 32, wc)) > 0) {
    if (!got_first_) {
      got_first_ = true;
      first_rx_ = Clock::now();
    }
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        if (error_.empty()) error_ = "receive completion with error: " + app::wc_status_text(wc[i].status);
        continue;
      }
      if (o_.verify && wc[i].byte_len != expected && error_.empty())
        error_ = "received " + std::to_string(wc[i].byte_len) + " bytes, expected " + std::to_string(expected);
      ++received_;
      ++got;
      --e_.recvs_outstanding;
      post_recv(wc[i].wr_id, wc[i].wr_id);
    }
  }
  if (got) stamp(Clock::now(), got);
}

// One clock read per batch of receives, not per message.
void BwServer::stamp(Clock::time_point now, uint64_t n) {
  last_rx_ = now;
  if (!o_.duration) return;
  const double t = std::chrono::duration<double>(now - first_rx_).count();
  if (t >= o_.margin_s && t < double(o_.duration) - double(o_.margin_s)) in_window_ += n;
}

void BwServer::drain(uint64_t sent, const PollFn& poll) {
  constexpr auto kQuiet = std::chrono::milliseconds(200);
  auto last = std::chrono::steady_clock::now();
  for (uint64_t before = received_; received_ < sent && error_.empty();) {
    poll();
    step();
    const auto now = std::chrono::steady_clock::now();
    if (received_ != before) before = received_, last = now;
    else if (now - last > kQuiet) break;
  }
}

BwResult BwServer::result() const {
  BwResult r;
  r.size = size_;
  r.error = error_;
  r.iters = o_.duration ? in_window_ : received_;
  r.seconds = o_.duration ? double(o_.duration) - 2.0 * double(o_.margin_s)
                          : std::chrono::duration<double>(last_rx_ - first_rx_).count();
  if (r.seconds > 0) {
    r.avg_bps = double(r.iters) * double(size_) / r.seconds;
    r.msg_rate = double(r.iters) / r.seconds;
  }
  return r;
}

std::string BwServer::verify(const std::vector<uint64_t>& completed) const {
  std::string error = error_;
  for (size_t q = 0; q < e_.qp_count() && error.empty(); ++q) {
    if (o_.verb == Verb::send || o_.verb == Verb::write) {
      check_pattern(target(q), size_, client_seed(q), error);
      // --use-srq: a buffer holds the last message of whichever QP used it.
      for (size_t k = 0; o_.use_srq && !error.empty() && k < e_.qp_count(); ++k) {
        error.clear();
        check_pattern(target(q), size_, client_seed(k), error);
      }
    } else if (o_.verb == Verb::atomic && q < completed.size()) {
      uint64_t v;
      std::memcpy(&v, target(q), 8);
      if (v != completed[q])
        error = "remote counter is " + std::to_string(v) + ", expected " + std::to_string(completed[q]);
    }
  }
  return error;
}

namespace {

// One direction: `from` sends to `to`.
struct Direction {
  Direction(Endpoint& from, Endpoint& to, const Options& o, uint64_t size)
      : client(from, peers_of(to), o, size), server(to, o, size) {}
  static std::vector<PeerInfo> peers_of(Endpoint& e) {
    std::vector<PeerInfo> v;
    for (size_t q = 0; q < e.qp_count(); ++q) v.push_back(e.info(q));
    return v;
  }
  BwClient client;
  BwServer server;
  bool done = false;
};

// The sender's figures stop at its last completion; then the receiver
// takes what is still on the way (UD: its completions come before the
// datagrams arrive).
BwResult finish(Direction& d, const Options& o, const PollFn& poll) {
  BwResult r = d.client.finish();
  uint64_t sent = 0;
  for (uint64_t n : r.per_qp) sent += n;
  if (o.verb == Verb::send) d.server.drain(sent, poll);
  if (d.server.received() < sent && o.verb == Verb::send) r.lost = sent - d.server.received();
  if (r.error.empty() && !d.server.error().empty()) r.error = d.server.error();
  if (o.verify && r.error.empty()) r.error = d.server.verify(r.per_qp);
  return r;
}

}  // namespace

BwResult run_bw(Endpoint& client, Endpoint& server, const PollFn& poll, const Options& o, uint64_t size,
                BwResult* receiver) {
  // --reversed: perftest swaps the roles; the server's side sends.
  Endpoint& from = o.reversed ? server : client;
  Endpoint& to = o.reversed ? client : server;
  Direction ab(from, to, o, size);
  std::unique_ptr<Direction> ba;
  if (o.bidirectional) ba = std::make_unique<Direction>(to, from, o, size);
  ab.server.start();
  if (ba) ba->server.start();
  ab.client.start();
  if (ba) ba->client.start();
  while (!ab.done || (ba && !ba->done)) {
    if (!ab.done) ab.done = ab.client.step();
    if (ba && !ba->done) ba->done = ba->client.step();
    poll();
    ab.server.step();
    if (ba) ba->server.step();
  }
  BwResult r = finish(ab, o, poll);
  if (receiver) *receiver = ab.server.result();
  if (!ba) return r;
  return sum_of(r, finish(*ba, o, poll));
}

// perftest -b: each side reports the rates of what it sent plus what its
// peer sent, and its own count of messages (-n per QP: 20 for -n 20,
// tests/data/perftest/*_bidir).
BwResult sum_of(const BwResult& mine, const BwResult& peer) {
  BwResult r = mine;
  if (r.error.empty()) r.error = peer.error;
  r.bidirectional = true;
  r.local_iters = mine.iters;
  r.remote_iters = peer.iters;
  r.local_peak_bps = mine.peak_bps;
  r.remote_peak_bps = peer.peak_bps;
  r.local_avg_bps = mine.avg_bps;
  r.local_msg_rate = mine.msg_rate;
  r.remote_avg_bps = peer.avg_bps;
  r.remote_msg_rate = peer.msg_rate;
  r.lost += peer.lost;
  r.avg_bps += peer.avg_bps;
  r.msg_rate += peer.msg_rate;
  r.peak_bps = r.peak_bps > 0 ? r.peak_bps + peer.peak_bps : 0;
  return r;
}

std::string check_limits(const Options& o, const std::vector<BwResult>& results) {
  if (results.empty()) return "";
  const double unit = o.report_gbits ? 125e6 : 1048576.0;
  bool bw_ok = o.limit_bw <= 0, rate_ok = o.limit_msgrate <= 0;
  for (const BwResult& r : results) {
    bw_ok = bw_ok || r.avg_bps / unit >= o.limit_bw;
    rate_ok = rate_ok || r.msg_rate / 1e6 >= o.limit_msgrate;
  }
  if (!bw_ok) return "Error: BW result is below bw limit";
  if (!rate_ok) return "Error: Msg rate  is below msg_rate limit";
  return "";
}

}  // namespace uroce::perf
