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
  const RecvWr* bad = nullptr;
  return e.qp(0).post_recv(&wr, &bad);
}

ibv_wc_opcode completion_of(Verb v) {
  return v == Verb::send ? IBV_WC_SEND : v == Verb::write ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ;
}

}  // namespace

void WcTally::reap(CompletionQueue& cq) {
  ibv_wc wc[8];
  int n;
  do {  // a short batch means the CQ is empty: no second call to find out
    n = cq.poll(8, wc);
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
  r_.usec.reserve(o.iters);
}

void LatSide::start(bool first_size) {
  start_ = Clock::now();
  if (first_size) std::memset(e_.buf(0), 0, e_.buf_bytes());
  if (client_ || o_.verb == Verb::write) fill_pattern(e_.buf(0), size_, 0x33);
  else if (o_.verb == Verb::read) fill_pattern(in(), size_, 0x77);  // READ fetches this
  if (o_.verb == Verb::send) post_recv(e_);
  state_ = o_.verb == Verb::read && !client_ ? State::done : posts_first() ? State::post : State::wait_peer;
}

void LatSide::post() {
  ibv_sge sge{e_.addr(0), uint32_t(size_), e_.lkey()};
  SendWr w;
  w.opcode = o_.verb == Verb::send ? IBV_WR_SEND : o_.verb == Verb::write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
  w.sg_list = &sge;
  w.num_sge = 1;
  w.send_flags = IBV_SEND_SIGNALED;
  if (size_ <= o_.inline_size && o_.verb != Verb::read) w.send_flags |= IBV_SEND_INLINE;
  w.wr.rdma.remote_addr = peer_.vaddr;  // the peer's exposed half
  w.wr.rdma.rkey = peer_.rkey;
  // A SEND server echoes what arrived; a READ lands in the exposed half;
  // everything else goes out of this side's own first half.
  if (o_.verb == Verb::read || (o_.verb == Verb::send && !client_)) sge.addr += e_.exposed_offset();
  const SendWr* bad = nullptr;
  if (e_.qp(0).post_send(&w, &bad) != 0 && tally_.error.empty()) tally_.error = "post_send failed";
}

bool LatSide::peer_arrived() {
  if (o_.verb == Verb::write) return *static_cast<volatile uint8_t*>(in() + size_ - 1) == marker();
  if (!tally_.take(IBV_WC_RECV)) return false;
  if (iter_ + 1 < o_.iters) post_recv(e_);  // none left over for the next size
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
  if (++iter_ == o_.iters) state_ = State::done;
  else state_ = posts_first() ? State::post : State::wait_peer;
}

bool LatSide::step() {
  tally_.reap(e_.cq());
  if (!tally_.error.empty()) return true;
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
      e_.buf(0)[size_ - 1] = marker();  // the message ends with the iteration's marker
      // Only the client reports; a TSC read is 20+ ns of the answer's path.
      if (client_) t0_ = Clock::now();
      post();
      state_ = o_.verb == Verb::read || !posts_first() ? State::wait_own : State::wait_peer;
      break;
    case State::wait_peer:
      if (!peer_arrived()) break;
      // Half a round trip since this side's last post (the write_lat
      // client has none before the server's first message).
      if (client_ && (posts_first() || iter_ > 0))
        r_.usec.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0_).count() / 2);
      state_ = posts_first() ? State::wait_own : State::post;  // or answer it
      break;
    case State::wait_own:
      if (!tally_.take(completion_of(o_.verb))) break;
      if (client_ && o_.verb == Verb::read)
        r_.usec.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0_).count());
      next();
      break;
    case State::done: break;
  }
  return state_;
}

LatResult LatSide::finish() {
  r_.error = tally_.error;
  if (!client_ || !o_.verify || !r_.error.empty()) return r_;
  if (o_.verb == Verb::read) check_pattern(in(), size_, 0x77, r_.error);
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
