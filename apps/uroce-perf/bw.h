// SPDX-License-Identifier: BSD-3-Clause
// The two sides of a bandwidth test, as state machines that never block:
// step() does what can be done now and returns. The caller runs the engine
// between steps — both engines in one loop (--loopback) or one engine per
// process, the server stepping while it waits on the exchange.
#pragma once

#include <array>
#include <chrono>
#include <unordered_map>
#include <vector>

#include "cycle_clock.h"
#include "runner.h"

namespace uroce::perf {

// Keeps tx_depth WRs in flight per QP, signals one in cq_mod, counts
// completions (a signaled completion retires every WR before it).
class BwClient {
 public:
  BwClient(Endpoint& e, const std::vector<PeerInfo>& peers, const Options& o, uint64_t size);
  void start();       // fills the buffers; the clock starts at the first step
  bool step();        // posts and reaps (after --perform_warm_up's round); true when the run is over
  BwResult finish();  // rates, and (--verify, READ) the data read

 private:
  struct QpState {
    uint64_t posted = 0;
    uint64_t completed = 0;
    bool ready = false;  // in ready_
  };
  using Clock = CycleClock;
  bool done();
  double elapsed();  // seconds since the start; the clock is read every few calls
  void post(size_t q);
  uint64_t post_limit(size_t q) const;
  bool may_post(size_t q) const;
  void make_ready(size_t q);
  void post_ready();
  void reap();
  bool warm_up();     // --perform_warm_up: one queue's worth per QP, unmeasured; true when done
  uint64_t total() const;
  uint64_t pace_limit();  // --rate_limit: WRs the pacer allows posted by now (all QPs)
  void window(double t);  // -D: the counts at the margins
  void verify_read();     // --verify, READ: the bytes read are the server's

  Endpoint& e_;
  std::vector<PeerInfo> peers_;
  const Options& o_;
  uint64_t size_;
  std::vector<QpState> qps_;
  std::unordered_map<uint32_t, uint32_t> qp_index_;  // QPN -> index in qps_, for a completion's QP
  std::vector<uint32_t> ready_;                      // QPs that may post more
  static constexpr uint64_t kStepPosts = 4096;       // WRs posted per step, at most
  uint64_t completed_total_ = 0;
  std::array<SendWr, 64> wrs_;  // up to -l WRs per post call
  std::array<ibv_sge, 64> sges_;
  // (time, completed) for the peak, at least mark_gap_ seconds apart. When
  // kMaxMarks are taken, every other one goes and the gap doubles: a run of
  // any length (-D 3600, -n 10^9) keeps about as many marks as a short one.
  static constexpr size_t kMaxMarks = size_t(1) << 16;
  void mark(double t, uint64_t total);
  std::vector<std::pair<double, uint64_t>> marks_;
  double mark_gap_ = 0;
  bool started_ = false;
  bool warmed_ = false;
  uint64_t warm_posted_ = 0, warm_done_ = 0;
  uint64_t posted_total_ = 0;
  double msgs_per_s_ = 0;  // --rate_limit as messages per second (0: no pacing)
  // -D: (time, completed) when the margin has passed and when the end
  // margin starts; perftest measures between them.
  bool in_window_ = false, window_closed_ = false;
  std::pair<double, uint64_t> window_start_{}, window_end_{};
  bool stopping_ = false;  // -D: the duration is over, no new posts
  unsigned ticks_ = 0;
  double elapsed_ = 0;
  double next_progress_ = 3;  // a line on stderr every 2 s once a run lasts 3 s
  Clock::time_point t0_;
  BwResult r_;
};

// Passive for WRITE, READ and atomics (the NIC does the work); for SEND it
// keeps receives posted and counts them.
class BwServer {
 public:
  BwServer(Endpoint& e, const Options& o, uint64_t size);
  void start();  // fills or clears the buffers, posts receives
  void step();
  // --verify: the data written or sent here, or the atomic counter after
  // `completed` operations per QP; empty when fine.
  std::string verify(const std::vector<uint64_t>& completed) const;
  const std::string& error() const { return error_; }
  uint64_t received() const { return received_; }
  // Steps with `poll` until `sent` messages are here, or none came for a
  // while (UD loses datagrams; RC has them all when the sender is done).
  void drain(uint64_t sent, const PollFn& poll);
  // perftest's SEND receiver row: the messages received over the time
  // from the first receive to the last (-D: those between the margins,
  // over the measured time); no peak, as perftest's server prints none.
  BwResult result() const;

 private:
  using Clock = CycleClock;
  void post_recv(size_t q, uint64_t id);
  void stamp(Clock::time_point now, uint64_t n);
  // Where the message lands: past the GRH slot for UD.
  uint8_t* target(size_t q) { return e_.buf(q) + e_.exposed_offset() + e_.grh_room(); }
  const uint8_t* target(size_t q) const {
    return const_cast<Endpoint&>(e_).buf(q) + e_.exposed_offset() + e_.grh_room();
  }

  Endpoint& e_;
  const Options& o_;
  uint64_t size_;
  uint64_t received_ = 0;
  uint64_t in_window_ = 0;  // -D: received between the margins
  bool got_first_ = false;
  Clock::time_point first_rx_{}, last_rx_{};
  std::string error_;
};

// Both sides in one loop over `poll` (--loopback); -b: both send and
// receive at once; --reversed: the server's endpoint sends.
// `receiver`, when given: the receiving side's row (SEND, one direction).
BwResult run_bw(Endpoint& client, Endpoint& server, const PollFn& poll, const Options& o, uint64_t size,
                BwResult* receiver = nullptr);

// -b: perftest's row, the sum of what this side sent (`mine`) and what its
// peer sent (`peer`); each is kept for --report-both.
BwResult sum_of(const BwResult& mine, const BwResult& peer);

// -w / -y: perftest's verdict over the sizes run (passes when one size
// reaches the limit); empty when passed, else perftest's error line.
std::string check_limits(const Options& o, const std::vector<BwResult>& results);

}  // namespace uroce::perf
