// SPDX-License-Identifier: BSD-3-Clause
// DCQCN congestion control (Zhu et al., SIGCOMM 2015) as ConnectX NICs run
// it: its parameters, the presets, how a device and a QP select it, and the
// per-QP statistics. docs/dcqcn.md explains the algorithm and the tuning.
//
// Parameter names and units are mlx5's roce_rp_* / roce_np_* tunables
// (sysfs .../ecn/roce_rp/<name>, .../ecn/roce_np/<name>), so an operator can
// copy a NIC's settings into `--cc-param name=value` unchanged.
#pragma once

#include "uroce/api.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace uroce::cc {

enum class CcAlgo : uint8_t { none, dcqcn };

struct DcqcnParams {
  // --- RP (reaction point: the sender) ---
  // Rate-increase timer T, µs: an increase event every T without a decrease.
  uint32_t rpg_time_reset = 300;
  // Byte counter B: an increase event every B bytes sent; 0 disables it.
  uint32_t rpg_byte_reset = 32767;
  // F: increase events per counter before leaving fast recovery.
  uint32_t rpg_threshold = 1;
  // Additive (R_AI) and hyper (R_HAI) increase steps of the target rate, Mb/s.
  uint32_t rpg_ai_rate = 5;
  uint32_t rpg_hai_rate = 50;
  // Rate bounds, Mb/s; max 0 = the device's line rate (CcConfig::line_rate_mbps).
  uint32_t rpg_min_rate = 1;
  uint32_t rpg_max_rate = 0;
  // Max cut per decrease: the new rate is at least (100 - this)% of the old one.
  uint32_t rpg_min_dec_fac = 50;
  // Decrease R_C <- R_C (1 - α / 2^rpg_gd); 1 is the paper's α/2.
  uint32_t rpg_gd = 1;
  // α gain in 1/1024: α <- (dce_tcp_g·α + (1024 - dce_tcp_g)·[CNP]) / 1024,
  // i.e. g = (1024 - dce_tcp_g)/1024 (1020 = the paper's 1/256).
  uint32_t dce_tcp_g = 1019;
  // α update period K, µs: α decays by (1 - g) every K without a CNP.
  uint32_t dce_tcp_rtt = 1;
  // At most one decrease per period, µs; CNPs within it are folded into one.
  uint32_t rate_reduce_monitor_period = 4;
  // α when the rate limiter starts (first CNP), in 1/1023 (1023 = 1.0).
  uint32_t initial_alpha_value = 1023;
  // Rate set on the first CNP, Mb/s; 0 = the usual decrease from line rate.
  uint32_t rate_to_set_on_first_cnp = 0;
  // On a decrease, R_T <- R_C always (1), or only after an increase event
  // (0; with clamp_tgt_rate_after_time_inc also after a timer increase).
  uint32_t clamp_tgt_rate = 0;
  uint32_t clamp_tgt_rate_after_time_inc = 1;

  // --- NP (notification point: the receiver) ---
  // At most one CNP per QP per this interval, µs (the paper's N).
  uint32_t min_time_between_cnps = 4;
  uint32_t cnp_dscp = 48;        // DSCP of CNPs
  uint32_t cnp_802p_prio = 6;    // PCP of CNPs when the QP's frames are VLAN-tagged

  // --- Data packets (uroce's own; ConnectX takes these from the traffic class) ---
  // ECN codepoint of data packets: 2 = ECT(0), 1 = ECT(1), 0 = not ECN-capable.
  uint32_t data_ecn = 2;
  // DSCP of data packets when the address handle's traffic class gives none.
  uint32_t data_dscp = 0;

  bool operator==(const DcqcnParams&) const = default;
};

// ConnectX (mlx5) firmware defaults: the field initialisers above.
UROCE_API DcqcnParams preset_mlx5();
// SIGCOMM 2015 (at 40 Gb/s): g 1/256, K 55 µs, T 55 µs, B 10 MB, F 5,
// R_AI 40 Mb/s, N 50 µs, R_T clamped on every decrease, no monitor period.
UROCE_API DcqcnParams preset_paper();

// What a device runs, and what a QP may override (QpInitAttr::cc).
struct UROCE_API CcConfig {
  CcAlgo algo = CcAlgo::none;
  DcqcnParams dcqcn = preset_mlx5();
  // Link speed of the port, Mb/s: the ceiling of R_C (unless rpg_max_rate).
  uint64_t line_rate_mbps = 100000;
  bool operator==(const CcConfig&) const = default;
};

// "none" (ECN-capable data, CE marks counted, no CNPs, no pacing),
// "dcqcn" (= "dcqcn-mlx5"), "dcqcn-paper". Replaces algo and dcqcn; false
// with a message listing the choices otherwise.
UROCE_API bool parse_cc(std::string_view name, CcConfig& cfg, std::string& error);
// One override "name=value" (a DcqcnParams field, or line_rate_mbps); the
// value is a decimal integer. False with a message naming the key.
UROCE_API bool apply_cc_param(std::string_view assignment, CcConfig& cfg, std::string& error);
// A file of "name = value" lines ('#' starts a comment): an optional first
// "cc = none|dcqcn|dcqcn-paper", then parameters as for apply_cc_param.
// False with "path:line: reason" on the first bad line.
UROCE_API bool load_cc_file(const std::string& path, CcConfig& cfg, std::string& error);
// "dcqcn rpg_time_reset=300 ..." / "none": every parameter, for logs.
UROCE_API std::string describe(const CcConfig& cfg);

// Per-QP congestion-control state and counters: QueuePair::cc_stats().
struct CcStats {
  CcAlgo algo = CcAlgo::none;
  bool limited = false;         // R_C below its ceiling: the QP is paced
  double rate_mbps = 0;         // R_C (the ceiling while not limited)
  double target_mbps = 0;       // R_T
  double alpha = 0;
  uint64_t cnps_sent = 0;       // NP: CNPs this QP sent for CE marks it saw
  uint64_t cnps_received = 0;   // RP: CNPs addressed to this QP
  uint64_t ecn_marks = 0;       // NP: CE-marked packets received
  uint64_t rate_decreases = 0;
  uint64_t rate_increases = 0;  // increase events (fast recovery, AI, HAI)
  uint64_t paced_waits = 0;     // times the QP had to wait for its next send time
};

}  // namespace uroce::cc
