// SPDX-License-Identifier: BSD-3-Clause
// DCQCN presets and the "--cc" / "--cc-param" parser.
#include <charconv>

#include "uroce/cc/dcqcn.h"

namespace uroce::cc {
namespace {

struct Field {
  const char* name;
  uint32_t DcqcnParams::*member;
  uint32_t max;  // largest accepted value
};

// Every DcqcnParams field by its mlx5 name, with the range that makes sense.
constexpr Field kFields[] = {
    {"rpg_time_reset", &DcqcnParams::rpg_time_reset, 100000000},
    {"rpg_byte_reset", &DcqcnParams::rpg_byte_reset, UINT32_MAX},
    {"rpg_threshold", &DcqcnParams::rpg_threshold, 1000},
    {"rpg_ai_rate", &DcqcnParams::rpg_ai_rate, 10000000},
    {"rpg_hai_rate", &DcqcnParams::rpg_hai_rate, 10000000},
    {"rpg_min_rate", &DcqcnParams::rpg_min_rate, 10000000},
    {"rpg_max_rate", &DcqcnParams::rpg_max_rate, 10000000},
    {"rpg_min_dec_fac", &DcqcnParams::rpg_min_dec_fac, 100},
    {"rpg_gd", &DcqcnParams::rpg_gd, 15},
    {"dce_tcp_g", &DcqcnParams::dce_tcp_g, 1024},
    {"dce_tcp_rtt", &DcqcnParams::dce_tcp_rtt, 100000000},
    {"rate_reduce_monitor_period", &DcqcnParams::rate_reduce_monitor_period, 100000000},
    {"initial_alpha_value", &DcqcnParams::initial_alpha_value, 1023},
    {"rate_to_set_on_first_cnp", &DcqcnParams::rate_to_set_on_first_cnp, 10000000},
    {"clamp_tgt_rate", &DcqcnParams::clamp_tgt_rate, 1},
    {"clamp_tgt_rate_after_time_inc", &DcqcnParams::clamp_tgt_rate_after_time_inc, 1},
    {"min_time_between_cnps", &DcqcnParams::min_time_between_cnps, 100000000},
    {"cnp_dscp", &DcqcnParams::cnp_dscp, 63},
    {"cnp_802p_prio", &DcqcnParams::cnp_802p_prio, 7},
    {"data_ecn", &DcqcnParams::data_ecn, 3},
    {"data_dscp", &DcqcnParams::data_dscp, 63},
};

// Fields that must not be 0: a period of 0 would mean an event per ns.
bool must_be_positive(std::string_view name) {
  return name == "rpg_time_reset" || name == "dce_tcp_rtt" || name == "rpg_min_rate";
}

bool parse_u64(std::string_view s, uint64_t& v) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}

std::string key_list() {
  std::string s = "line_rate_mbps";
  for (const Field& f : kFields) s += std::string(", ") + f.name;
  return s;
}

}  // namespace

DcqcnParams preset_mlx5() { return DcqcnParams{}; }

DcqcnParams preset_paper() {
  DcqcnParams p;
  p.rpg_time_reset = 55;
  p.rpg_byte_reset = 10u << 20;  // 10 MB
  p.rpg_threshold = 5;
  p.rpg_ai_rate = 40;
  p.rpg_hai_rate = 400;  // not in the paper: QCN's ratio R_HAI = 10 R_AI
  p.rpg_min_rate = 1;
  p.rpg_min_dec_fac = 50;  // never binds with rpg_gd 1: α/2 <= 1/2
  p.rpg_gd = 1;
  p.dce_tcp_g = 1020;  // g = 4/1024 = 1/256
  p.dce_tcp_rtt = 55;
  p.rate_reduce_monitor_period = 0;  // every CNP cuts at once
  p.initial_alpha_value = 1023;
  p.rate_to_set_on_first_cnp = 0;
  p.clamp_tgt_rate = 1;
  p.clamp_tgt_rate_after_time_inc = 1;
  p.min_time_between_cnps = 50;
  return p;
}

bool parse_cc(std::string_view name, CcConfig& cfg, std::string& error) {
  if (name == "none") {
    cfg.algo = CcAlgo::none;
    cfg.dcqcn = preset_mlx5();
  } else if (name == "dcqcn" || name == "dcqcn-mlx5") {
    cfg.algo = CcAlgo::dcqcn;
    cfg.dcqcn = preset_mlx5();
  } else if (name == "dcqcn-paper") {
    cfg.algo = CcAlgo::dcqcn;
    cfg.dcqcn = preset_paper();
  } else {
    error = "unknown congestion control '" + std::string(name) + "' (choose none, dcqcn, dcqcn-mlx5 or dcqcn-paper)";
    return false;
  }
  return true;
}

bool apply_cc_param(std::string_view assignment, CcConfig& cfg, std::string& error) {
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) {
    error = "congestion-control parameter '" + std::string(assignment) + "' is not of the form name=value";
    return false;
  }
  const std::string_view key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  uint64_t v = 0;
  if (!parse_u64(text, v)) {
    error = "congestion-control parameter " + std::string(key) + ": '" + std::string(text) +
            "' is not a non-negative decimal integer";
    return false;
  }
  if (key == "line_rate_mbps") {
    if (v == 0) {
      error = "congestion-control parameter line_rate_mbps must be above 0";
      return false;
    }
    cfg.line_rate_mbps = v;
    return true;
  }
  for (const Field& f : kFields) {
    if (key != f.name) continue;
    if (v > f.max || (v == 0 && must_be_positive(key))) {
      error = "congestion-control parameter " + std::string(key) + "=" + std::string(text) + " is out of range (" +
              (must_be_positive(key) ? "1" : "0") + ".." + std::to_string(f.max) + ")";
      return false;
    }
    cfg.dcqcn.*f.member = uint32_t(v);
    return true;
  }
  error = "unknown congestion-control parameter '" + std::string(key) + "' (known: " + key_list() + ")";
  return false;
}

std::string describe(const CcConfig& cfg) {
  if (cfg.algo == CcAlgo::none) return "none data_ecn=" + std::to_string(cfg.dcqcn.data_ecn);
  std::string s = "dcqcn line_rate_mbps=" + std::to_string(cfg.line_rate_mbps);
  for (const Field& f : kFields) s += std::string(" ") + f.name + "=" + std::to_string(cfg.dcqcn.*f.member);
  return s;
}

}  // namespace uroce::cc
