// SPDX-License-Identifier: BSD-3-Clause
// The DCQCN reaction point: reference.md's equations, with mlx5's
// refinements (monitor period, target clamping, first-CNP rate) as options.
#include "cc/dcqcn_rp.h"

#include <algorithm>
#include <cmath>

namespace uroce::cc {
namespace {

// Close enough to the ceiling to hand the QP back to line rate (mlx5
// releases its rate limiter there); fast recovery only halves the gap.
constexpr double kReleaseFraction = 0.999;
// Increase events applied in one advance() before skipping ahead: bounds
// the work after a long idle period when the increase steps are 0.
constexpr uint32_t kMaxCatchUp = 10000;

}  // namespace

void DcqcnRp::configure(const DcqcnParams& p, uint64_t line_rate_mbps) {
  const double line = double(std::max<uint64_t>(line_rate_mbps, 1));
  max_ = p.rpg_max_rate ? std::min(double(p.rpg_max_rate), line) : line;
  min_ = std::min(double(std::max<uint32_t>(p.rpg_min_rate, 1)), max_);
  g_ = double(1024 - std::min<uint32_t>(p.dce_tcp_g, 1024)) / 1024.0;
  ai_ = p.rpg_ai_rate;
  hai_ = p.rpg_hai_rate;
  cut_floor_ = double(100 - std::min<uint32_t>(p.rpg_min_dec_fac, 100)) / 100.0;
  gd_ = std::ldexp(1.0, int(std::min<uint32_t>(p.rpg_gd, 15)));
  alpha0_ = std::min(double(p.initial_alpha_value) / 1023.0, 1.0);
  first_rate_ = p.rate_to_set_on_first_cnp;
  k_ns_ = std::max<uint64_t>(uint64_t(p.dce_tcp_rtt) * 1000, 1);
  t_ns_ = std::max<uint64_t>(uint64_t(p.rpg_time_reset) * 1000, 1);
  monitor_ns_ = uint64_t(p.rate_reduce_monitor_period) * 1000;
  byte_reset_ = p.rpg_byte_reset;
  f_ = p.rpg_threshold;
  clamp_ = p.clamp_tgt_rate != 0;
  clamp_after_time_ = p.clamp_tgt_rate_after_time_inc != 0;
  decreases_ = increases_ = cnps_ = 0;
  restart();
}

void DcqcnRp::restart() {
  limited_ = pending_ = ever_decreased_ = false;
  rt_ = max_;
  alpha_ = alpha0_;
  set_rate(max_);
  alpha_at_ = timer_at_ = decreased_at_ = 0;
  bytes_ = 0;
  time_stage_ = byte_stage_ = 0;
}

void DcqcnRp::set_rate(double rc) {
  rc_ = std::clamp(rc, min_, max_);
  ns_per_byte_ = 8000.0 / rc_;  // R Mb/s = R bits per µs
}

void DcqcnRp::on_cnp(uint64_t now) {
  ++cnps_;
  advance(now);  // may hand the QP back to line rate first
  if (limited_) {
    if (monitor_ns_ == 0 || now - decreased_at_ >= monitor_ns_) decrease(now);
    else pending_ = true;  // folded into one decrease at the end of the period
    return;
  }
  // The rate limiter starts: α from its initial value, R_T at line rate.
  limited_ = true;
  ever_decreased_ = false;
  alpha_ = alpha0_;
  rt_ = rc_;
  if (first_rate_ <= 0) return decrease(now);
  set_rate(std::min(first_rate_, rc_));
  rt_ = rc_;
  alpha_at_ = timer_at_ = decreased_at_ = now;
  ever_decreased_ = true;
  time_stage_ = byte_stage_ = 0;
  bytes_ = 0;
  ++decreases_;
}

void DcqcnRp::decrease(uint64_t now) {
  // mlx5: without clamp_tgt_rate, R_T keeps its value until the rate has
  // grown again, so repeated cuts do not drag the target down with them.
  const bool clamp = clamp_ || byte_stage_ > 0 || (clamp_after_time_ && time_stage_ > 0);
  if (clamp || !ever_decreased_) rt_ = rc_;
  double r = rc_ * (1.0 - alpha_ / gd_);
  r = std::max(r, rc_ * cut_floor_);
  set_rate(r);
  alpha_ = (1.0 - g_) * alpha_ + g_;
  alpha_at_ = timer_at_ = decreased_at_ = now;
  ever_decreased_ = true;
  pending_ = false;
  time_stage_ = byte_stage_ = 0;
  bytes_ = 0;
  ++decreases_;
}

void DcqcnRp::increase_event() {
  ++increases_;
  const uint32_t t = time_stage_;
  const uint32_t b = byte_reset_ ? byte_stage_ : time_stage_;
  const uint32_t hi = std::max(t, b), lo = std::min(t, b);
  if (hi < f_) {
    // Fast recovery: R_C halves its distance to R_T.
  } else if (lo > f_) {
    rt_ += double(lo - f_) * hai_;  // hyper increase, i = min(T, BC) - F
  } else {
    rt_ += ai_;  // additive increase
  }
  rt_ = std::min(rt_, max_);
  set_rate((rt_ + rc_) / 2.0);
  if (rt_ >= max_ && rc_ >= max_ * kReleaseFraction) {
    limited_ = false;
    pending_ = false;
    rt_ = max_;
    set_rate(max_);
  }
}

void DcqcnRp::advance(uint64_t now) {
  if (!limited_) return;
  auto decay_to = [this](uint64_t t) {
    if (t < alpha_at_ + k_ns_) return;
    const uint64_t n = (t - alpha_at_) / k_ns_;
    alpha_at_ += n * k_ns_;
    if (n <= 4) {  // the common case, per packet at K = 1 µs: no pow()
      for (uint64_t i = 0; i < n; ++i) alpha_ *= 1.0 - g_;
    } else {
      alpha_ *= std::pow(1.0 - g_, double(n));
    }
  };
  auto timer_to = [this](uint64_t t) {
    uint32_t events = 0;
    while (limited_ && t >= timer_at_ + t_ns_) {
      if (++events > kMaxCatchUp) {
        timer_at_ = t - (t - timer_at_) % t_ns_;
        break;
      }
      timer_at_ += t_ns_;
      ++time_stage_;
      increase_event();
    }
  };
  if (pending_ && now >= decreased_at_ + monitor_ns_) {
    const uint64_t at = decreased_at_ + monitor_ns_;
    decay_to(at);
    timer_to(at);
    if (limited_) decrease(at);
  }
  decay_to(now);
  timer_to(now);
}

void DcqcnRp::on_sent(uint32_t bytes) {
  if (!limited_ || byte_reset_ == 0) return;
  bytes_ += bytes;
  while (limited_ && bytes_ >= byte_reset_) {
    bytes_ -= byte_reset_;
    ++byte_stage_;
    increase_event();
  }
}

uint64_t DcqcnRp::next_event() const {
  if (!limited_) return UINT64_MAX;
  uint64_t t = timer_at_ + t_ns_;
  if (pending_) t = std::min(t, decreased_at_ + monitor_ns_);
  return t;
}

}  // namespace uroce::cc
