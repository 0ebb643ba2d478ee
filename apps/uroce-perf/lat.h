// SPDX-License-Identifier: BSD-3-Clause
// The two sides of a latency test, one message in flight, as state
// machines that never block (see bw.h). SEND and WRITE ping-pong between
// the sides and report half the round trip (perftest's convention); READ
// and atomics report the whole operation. Messages go from the start of one buffer into
// the exposed second half of the other (Endpoint::exposed_offset, the
// address exchanged), so a side never takes its own bytes for the peer's;
// the last byte carries the iteration's marker, which a WRITE's receiver
// spins on, as perftest's write_lat does. In write_lat each side sends its
// own first half (the same pattern on both sides, so the client can check
// what arrived); in send_lat the server echoes what arrived.
#pragma once

#include <chrono>

#include "cycle_clock.h"
#include "runner.h"

namespace uroce::perf {

// Completions seen but not yet waited for, by opcode: a send completion
// may arrive while we wait for a receive.
struct WcTally {
  uint32_t count[256] = {};
  std::string error;
  void reap(Endpoint& e, CompletionQueue& cq);
  bool take(ibv_wc_opcode op);
};

class LatSide {
 public:
  // The client measures; the server answers (or, for READ, does nothing).
  LatSide(Endpoint& e, const PeerInfo& peer, const Options& o, uint64_t size, bool client);
  // Buffers and the first receive. Only the first size clears the buffer:
  // with -a the peer may already write the next size (perftest exchanges
  // nothing between sizes), and sizes grow, so a marker position is still
  // zero when its size starts.
  void start(bool first_size = true);
  bool step();   // true when this side's iterations are done (or failed)
  LatResult finish();
  const std::string& error() const { return tally_.error; }

 private:
  enum class State { post, wait_peer, wait_own, done };
  using Clock = CycleClock;
  // perftest's (char)++scnt: 1, 2, ... 255, 0, 1 ...
  uint8_t marker() const { return uint8_t(iter_ + 1); }
  // Who posts first in each round trip: in perftest's write_lat the server
  // (run_iter_lat_write: "client poll first"), in send_lat the client. A
  // side that posts when its peer also does would overwrite its first
  // marker before the peer saw it.
  bool posts_first() const { return o_.verb == Verb::write ? !client_ : client_; }
  // perftest's SEND and WRITE servers time their own posts of the
  // ping-pong and print a row as the client does; READ and atomic servers
  // only answer.
  bool measures() const { return client_ || o_.verb == Verb::send || o_.verb == Verb::write; }
  // Where the peer's bytes land (a UD receive's payload: past the GRH slot).
  uint8_t* in() { return e_.buf(0) + e_.exposed_offset() + e_.grh_room(); }
  State advance();  // at most one transition; returns the new state
  void post();
  bool peer_arrived();
  void next();
  bool time_up(double grace);
  void count_round_trip();  // -D: the round trips between the margins and their time

  Endpoint& e_;
  PeerInfo peer_;
  const Options& o_;
  uint64_t size_;
  bool client_;
  State state_ = State::post;
  uint64_t iter_ = 0;
  bool posted_ = false;  // this iteration's message is out
  WcTally tally_;
  Clock::time_point start_;
  uint64_t last_done_ = 0, window_from_ = 0;  // -D: TSC of the last round trip's end, of the window's start
  double next_progress_ = 3;
  uint64_t clock_reads_ = 0;
  Clock::time_point gap_from_{};
  LatResult r_;
};

// Both sides in one loop over `poll` (--loopback).
LatResult run_lat(Endpoint& client, Endpoint& server, const PollFn& poll, const Options& o, uint64_t size);

}  // namespace uroce::perf
