// SPDX-License-Identifier: BSD-3-Clause
#include "lat.h"

#include <cstdio>
#include <cstring>

#include "app_support.h"

namespace uroce::perf {
namespace {

int post_recv(Endpoint& e) {
  ibv_sge sge{e.addr(0) + e.exposed_offset(), uint32_t(e.buf_bytes() - e.exposed_offset()), e.lkey()};
  RecvWr wr;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  return e.post_recv(0, &wr);
}

ibv_wc_opcode completion_of(const Options& o) {
  switch (o.verb) {
    case Verb::send: return IBV_WC_SEND;
    case Verb::write: return IBV_WC_RDMA_WRITE;
    case Verb::atomic: return o.cmp_and_swap ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD;
    default: return IBV_WC_RDMA_READ;
  }
}

// READ and atomics: the client's own operation is the round trip; the
// server's NIC answers.
bool one_sided(Verb v) { return v == Verb::read || v == Verb::atomic; }

}  // namespace

void WcTally::reap(Endpoint& e, CompletionQueue& cq) {
  ibv_wc wc[8];
  int n;
  do {  // a short batch means the CQ is empty: no second call to find out
    n = e.poll(cq, 8, wc);
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS && error.empty())
        error = "completion with error: " + app::wc_status_text(wc[i].status);
      ++count[wc[i].opcode & 0xFF];
    }
  } while (n == 8);
}

bool WcTally::take(ibv_wc_opcode op) {
  if (count[op & 0xFF] == 0) return false;
  --count[op & 0xFF];
  return true;
}

LatSide::LatSide(Endpoint& e, const PeerInfo& peer, const Options& o, uint64_t size, bool client)
    : e_(e), peer_(peer), o_(o), size_(size), client_(client) {
  r_.size = size;
  // Reserved before the run: no allocation in the measured loop. -D keeps
  // no stamps (perftest reports its average alone), so no bound is needed.
  if (measures() && !o.duration) r_.posted.reserve(o.iters);
}

// -D: a side stops posting once the duration is over; a side still
// waiting for its peer stops a second later (the peer's clock ended the
// run and no answer is coming).
bool LatSide::time_up(double grace) {
  if (!o_.duration) return false;
  if ((++clock_reads_ & 63) != 0) return false;
  return std::chrono::duration<double>(Clock::now() - start_).count() >= double(o_.duration) + grace;
}

// -D: only round trips that end between the margins count (perftest's
// -f), with the time from the end of the one before the first.
void LatSide::count_round_trip() {
  const uint64_t now = Clock::cycles();
  const double t = std::chrono::duration<double>(Clock::now() - start_).count();
  if (t >= o_.margin_s && t < double(o_.duration) - o_.margin_s) {
    if (r_.iters++ == 0) window_from_ = last_done_;
    r_.window_cycles = now - window_from_;
  }
  last_done_ = now;
}

void LatSide::start(bool first_size) {
  start_ = Clock::now();
  last_done_ = Clock::cycles();
  if (first_size) std::memset(e_.buf(0), 0, e_.buf_bytes());
  if (client_ || o_.verb == Verb::write) fill_pattern(e_.buf(0), size_, 0x33);
  else if (o_.verb == Verb::read) fill_pattern(in(), size_, 0x77);  // READ fetches this
  else if (o_.verb == Verb::atomic) std::memset(in(), 0, 8);       // the counter the client's atomics change
  if (o_.verb == Verb::send) post_recv(e_);
  state_ = one_sided(o_.verb) && !client_ ? State::done : posts_first() ? State::post : State::wait_peer;
}

void LatSide::post() {
  ibv_sge sge{e_.addr(0), uint32_t(size_), e_.lkey()};
  SendWr w;
  w.opcode = o_.verb == Verb::send ? IBV_WR_SEND : o_.verb == Verb::write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
  if (o_.verb == Verb::atomic) {
    w.opcode = o_.cmp_and_swap ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
    w.wr.atomic.remote_addr = peer_.vaddr;
    w.wr.atomic.rkey = peer_.rkey;
    w.wr.atomic.compare_add = o_.cmp_and_swap ? iter_ : 1;  // the counter goes 0, 1, 2 ... either way
    w.wr.atomic.swap = iter_ + 1;
    sge.addr += e_.exposed_offset();  // the original value lands in our second half
    sge.length = 8;
    w.sg_list = &sge;
    w.num_sge = 1;
    w.send_flags = IBV_SEND_SIGNALED;
    const SendWr* bad = nullptr;
    if (e_.qp(0).post_send(&w, &bad) != 0 && tally_.error.empty()) tally_.error = "post_send failed";
    return;
  }
  w.sg_list = &sge;
  w.num_sge = 1;
  w.send_flags = IBV_SEND_SIGNALED;
  if (size_ <= o_.inline_size && o_.verb != Verb::read) w.send_flags |= IBV_SEND_INLINE;
  if (e_.ud()) {
    w.wr.ud.ah = e_.ah(0);
    w.wr.ud.remote_qpn = peer_.qpn;
    w.wr.ud.remote_qkey = kUdQkey;
  } else {
    w.wr.rdma.remote_addr = peer_.vaddr;  // the peer's exposed half
    w.wr.rdma.rkey = peer_.rkey;
  }
  // A SEND server echoes what arrived; a READ lands in the exposed half;
  // everything else goes out of this side's own first half.
  if (o_.verb == Verb::send && !client_) sge.addr = reinterpret_cast<uintptr_t>(in());
  else if (o_.verb == Verb::read) sge.addr += e_.exposed_offset();
  const SendWr* bad = nullptr;
  if (e_.qp(0).post_send(&w, &bad) != 0 && tally_.error.empty()) tally_.error = "post_send failed";
}

bool LatSide::peer_arrived() {
  if (o_.verb == Verb::write) return *static_cast<volatile uint8_t*>(in() + size_ - 1) == marker();
  if (!tally_.take(IBV_WC_RECV)) return false;
  if (o_.duration || iter_ + 1 < o_.iters) post_recv(e_);  // none left over for the next size
  return true;
}

void LatSide::next() {
  // A line on stderr every 2 s once a run lasts 3 s (clock read every 1024).
  if (client_ && (iter_ & 1023) == 1023) {
    const double s = std::chrono::duration<double>(Clock::now() - start_).count();
    if (s >= next_progress_) {
      next_progress_ = s + 2;
      std::fprintf(stderr, "uroce-perf: %lu B: %lu of %lu iterations in %.0f s\n", (unsigned long)size_,
                   (unsigned long)iter_ + 1, (unsigned long)o_.iters, s);
    }
  }
  if (++iter_ == o_.iters && !o_.duration) state_ = State::done;
  else state_ = posts_first() ? State::post : State::wait_peer;
  if (o_.latency_gap_us) gap_from_ = Clock::now();
}

bool LatSide::step() {
  tally_.reap(e_, e_.cq());
  tally_.reap(e_, e_.recv_cq());
  if (!tally_.error.empty()) return true;
  if ((state_ == State::post && time_up(0)) || (state_ != State::done && time_up(1))) state_ = State::done;
  // Take every transition that is ready now: a poll between two of them
  // (the peer's message and our own completion arrive in one burst) would
  // add an engine round to each half round trip.
  for (State before = state_; advance() != before; before = state_) {
  }
  return state_ == State::done || !tally_.error.empty();
}

LatSide::State LatSide::advance() {
  switch (state_) {
    case State::post:
      // --latency_gap: this long between a round trip and the next post.
      if (o_.latency_gap_us && client_ &&
          std::chrono::duration<double, std::micro>(Clock::now() - gap_from_).count() < o_.latency_gap_us)
        break;
      e_.buf(0)[size_ - 1] = marker();  // the message ends with the iteration's marker
      // Only a side that reports stamps; a TSC read is 20+ ns of the answer's path.
      if (measures() && r_.posted.size() < r_.posted.capacity()) r_.posted.push_back(Clock::cycles());
      post();
      state_ = one_sided(o_.verb) || !posts_first() ? State::wait_own : State::wait_peer;
      break;
    case State::wait_peer:
      if (!peer_arrived()) break;
      state_ = posts_first() ? State::wait_own : State::post;  // or answer it
      break;
    case State::wait_own:
      if (!tally_.take(completion_of(o_))) break;
      if (client_ && o_.duration) count_round_trip();
      next();
      break;
    case State::done: break;
  }
  return state_;
}

LatResult LatSide::finish() {
  r_.error = tally_.error;
  if (!o_.duration) r_.iters = iter_;
  if (!client_ || !o_.verify || !r_.error.empty()) return r_;
  if (o_.verb == Verb::read) check_pattern(in(), size_, 0x77, r_.error);
  else if (o_.verb == Verb::atomic) {
    uint64_t last = 0;  // what the last atomic found: one less than the operations done
    std::memcpy(&last, in(), 8);
    if (iter_ > 0 && last != iter_ - 1)
      r_.error = "the last atomic returned " + std::to_string(last) + ", expected " + std::to_string(iter_ - 1);
  }
  else if (std::memcmp(e_.buf(0), in(), size_) != 0) r_.error = "echoed data does not match what was sent";
  return r_;
}

LatResult run_lat(Endpoint& client, Endpoint& server, const PollFn& poll, const Options& o, uint64_t size) {
  LatSide c(client, server.info(0), o, size, true);
  LatSide s(server, client.info(0), o, size, false);
  s.start();
  c.start();
  while (!c.step()) {
    poll();
    s.step();
  }
  LatResult r = c.finish();
  if (r.error.empty()) r.error = s.error();
  return r;
}

}  // namespace uroce::perf
