// SPDX-License-Identifier: BSD-3-Clause
// The DCQCN rate machine of one QP (RP) and the CNP limiter (NP), driven
// by a time source the caller passes in (ns): the engine's per-poll clock,
// virtual time in simulation, or a test's own. No allocation, no clock read.
//
// Time-driven events (α decay every K, the increase timer T, a decrease
// deferred by rate_reduce_monitor_period) are applied lazily by advance():
// an idle QP costs nothing until its next packet or CNP.
#pragma once

#include <cstdint>

#include "uroce/cc/dcqcn.h"

namespace uroce::cc {

class DcqcnRp {
 public:
  DcqcnRp() = default;
  // Starts unlimited at the ceiling (rpg_max_rate, else line_rate_mbps).
  void configure(const DcqcnParams& p, uint64_t line_rate_mbps);

  // Back to the state configure() leaves (a QP reset), same parameters.
  void restart();

  // A CNP for this QP arrived at `now`: decrease (at once, or at the end of
  // the current monitor period).
  void on_cnp(uint64_t now);
  // `bytes` of this QP's packets were sent (drives the byte counter).
  void on_sent(uint32_t bytes);
  // Applies the time-driven events up to `now`. Call before reading the
  // rate; cheap when nothing is due.
  void advance(uint64_t now);

  // Below the ceiling: packets must be paced at rate_mbps().
  bool limited() const { return limited_; }
  double rate_mbps() const { return rc_; }
  double target_mbps() const { return rt_; }
  double alpha() const { return alpha_; }
  double ceiling_mbps() const { return max_; }
  // Transmission time of one byte at R_C, ns (pacing).
  double ns_per_byte() const { return ns_per_byte_; }
  // When advance() has something to do next (kNever-like UINT64_MAX if not limited).
  uint64_t next_event() const;

  // Stage counters (for tests and stats).
  uint32_t time_stage() const { return time_stage_; }
  uint32_t byte_stage() const { return byte_stage_; }
  uint64_t decreases() const { return decreases_; }
  uint64_t increases() const { return increases_; }
  uint64_t cnps() const { return cnps_; }

 private:
  void decrease(uint64_t now);
  void increase_event();
  void set_rate(double rc);

  // Parameters in the units the machine uses (ns, Mb/s, fractions).
  double g_ = 1.0 / 256, min_ = 1, max_ = 100000, ai_ = 5, hai_ = 50;
  double cut_floor_ = 0.5, gd_ = 2, alpha0_ = 1, first_rate_ = 0;
  uint64_t k_ns_ = 1000, t_ns_ = 300000, monitor_ns_ = 4000;
  uint32_t byte_reset_ = 32767, f_ = 1;
  bool clamp_ = false, clamp_after_time_ = true;

  // State.
  bool limited_ = false;
  bool pending_ = false;          // a CNP waits for the monitor period to end
  double rc_ = 100000, rt_ = 100000, alpha_ = 1, ns_per_byte_ = 0;
  uint64_t alpha_at_ = 0;         // start of the current K period
  uint64_t timer_at_ = 0;         // start of the current T period
  uint64_t decreased_at_ = 0;
  bool ever_decreased_ = false;
  uint64_t bytes_ = 0;            // since the last byte-counter event
  uint32_t time_stage_ = 0, byte_stage_ = 0;
  uint64_t decreases_ = 0, increases_ = 0, cnps_ = 0;
};

// NP: whether a CE mark at `now` may produce a CNP for this QP.
class DcqcnNp {
 public:
  void configure(const DcqcnParams& p) { interval_ns_ = uint64_t(p.min_time_between_cnps) * 1000; }
  bool may_send(uint64_t now) const { return !sent_ || now - last_ >= interval_ns_; }
  void sent(uint64_t now) {
    sent_ = true;
    last_ = now;
  }
  void restart() { sent_ = false; }

 private:
  uint64_t interval_ns_ = 4000;
  uint64_t last_ = 0;
  bool sent_ = false;
};

}  // namespace uroce::cc
