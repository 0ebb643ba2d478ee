// SPDX-License-Identifier: BSD-3-Clause
// Presets and the --cc / --cc-param parser.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "uroce/cc/dcqcn.h"

using namespace uroce::cc;

TEST_CASE("presets carry the documented values", "[dcqcn-params]") {
  const DcqcnParams m = preset_mlx5();
  CHECK(m.dce_tcp_g == 1019);
  CHECK(m.dce_tcp_rtt == 1);
  CHECK(m.min_time_between_cnps == 4);
  CHECK(m.rpg_time_reset == 300);
  CHECK(m.rpg_byte_reset == 32767);
  CHECK(m.rpg_threshold == 1);
  CHECK(m.rpg_ai_rate == 5);
  CHECK(m.rpg_hai_rate == 50);
  CHECK(m.rpg_min_rate == 1);
  CHECK(m.rpg_min_dec_fac == 50);
  CHECK(m.rate_reduce_monitor_period == 4);
  CHECK(m.cnp_dscp == 48);
  CHECK(m.cnp_802p_prio == 6);
  CHECK(m.data_ecn == 2);
  const DcqcnParams p = preset_paper();
  CHECK(1024 - p.dce_tcp_g == 4);  // g = 1/256
  CHECK(p.dce_tcp_rtt == 55);
  CHECK(p.rpg_time_reset == 55);
  CHECK(p.rpg_byte_reset == 10u * 1024 * 1024);
  CHECK(p.rpg_threshold == 5);
  CHECK(p.rpg_ai_rate == 40);
  CHECK(p.min_time_between_cnps == 50);
  CHECK(p.clamp_tgt_rate == 1);
  CHECK(p.rate_reduce_monitor_period == 0);
}

TEST_CASE("parse_cc selects the algorithm and preset", "[dcqcn-params]") {
  CcConfig c;
  std::string err;
  REQUIRE(parse_cc("dcqcn", c, err));
  CHECK(c.algo == CcAlgo::dcqcn);
  CHECK(c.dcqcn == preset_mlx5());
  REQUIRE(parse_cc("dcqcn-paper", c, err));
  CHECK(c.algo == CcAlgo::dcqcn);
  CHECK(c.dcqcn == preset_paper());
  REQUIRE(parse_cc("dcqcn-mlx5", c, err));
  CHECK(c.dcqcn == preset_mlx5());
  REQUIRE(parse_cc("none", c, err));
  CHECK(c.algo == CcAlgo::none);
  CHECK_FALSE(parse_cc("dctcp", c, err));
  CHECK(err.find("dctcp") != std::string::npos);
  CHECK(err.find("dcqcn-paper") != std::string::npos);
  CHECK_FALSE(parse_cc("", c, err));
}

TEST_CASE("apply_cc_param overrides one field and rejects bad input clearly", "[dcqcn-params]") {
  CcConfig c;
  std::string err;
  REQUIRE(parse_cc("dcqcn", c, err));
  REQUIRE(apply_cc_param("rpg_time_reset=55", c, err));
  CHECK(c.dcqcn.rpg_time_reset == 55);
  REQUIRE(apply_cc_param("min_time_between_cnps=0", c, err));
  CHECK(c.dcqcn.min_time_between_cnps == 0);
  REQUIRE(apply_cc_param("line_rate_mbps=400000", c, err));
  CHECK(c.line_rate_mbps == 400000);
  REQUIRE(apply_cc_param("cnp_dscp=46", c, err));
  CHECK(c.dcqcn.cnp_dscp == 46);

  struct Bad {
    const char* text;
    const char* says;
  };
  for (const Bad& b : {Bad{"rpg_time_reset", "name=value"}, Bad{"rpg_tim_reset=5", "unknown"},
                       Bad{"rpg_time_reset=", "decimal"}, Bad{"rpg_time_reset=-1", "decimal"},
                       Bad{"rpg_time_reset=1.5", "decimal"}, Bad{"rpg_time_reset=0", "out of range"},
                       Bad{"dce_tcp_g=1025", "out of range"}, Bad{"cnp_dscp=64", "out of range"},
                       Bad{"cnp_802p_prio=8", "out of range"}, Bad{"data_ecn=4", "out of range"},
                       Bad{"line_rate_mbps=0", "line_rate_mbps"}, Bad{"dce_tcp_rtt=0", "out of range"},
                       Bad{"rpg_threshold=99999999999999999999", "decimal"}}) {
    INFO(b.text);
    err.clear();
    const CcConfig before = c;
    CHECK_FALSE(apply_cc_param(b.text, c, err));
    CHECK(err.find(b.says) != std::string::npos);
    CHECK(c == before);  // nothing half-applied
  }
  err.clear();
  CHECK_FALSE(apply_cc_param("bogus=1", c, err));
  CHECK(err.find("rpg_ai_rate") != std::string::npos);  // lists the known names
}

TEST_CASE("describe names every parameter", "[dcqcn-params]") {
  CcConfig c;
  std::string err;
  CHECK(describe(c).rfind("none", 0) == 0);
  REQUIRE(parse_cc("dcqcn-paper", c, err));
  const std::string d = describe(c);
  CHECK(d.find("rpg_time_reset=55") != std::string::npos);
  CHECK(d.find("dce_tcp_g=1020") != std::string::npos);
  CHECK(d.find("min_time_between_cnps=50") != std::string::npos);
}

namespace {

std::string write_temp(const std::string& text) {
  const std::string path = "/tmp/uroce_cc_test_" + std::to_string(::getpid()) + ".conf";
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("load_cc_file: a preset line, then parameters; errors name the line", "[dcqcn-params]") {
  CcConfig c;
  std::string err;
  std::string path = write_temp("# comment\n\ncc = dcqcn-paper   # preset\n rpg_ai_rate = 80\nline_rate_mbps=25000\n");
  REQUIRE(load_cc_file(path, c, err));
  CHECK(c.algo == CcAlgo::dcqcn);
  CHECK(c.dcqcn.rpg_ai_rate == 80);
  CHECK(c.dcqcn.rpg_time_reset == 55);  // the rest is the paper's
  CHECK(c.line_rate_mbps == 25000);

  struct Bad {
    const char* text;
    const char* says;
  };
  for (const Bad& b : {Bad{"cc = dcqcn\nrpg_ai_rat = 3\n", ":2: unknown"}, Bad{"cc = fast\n", ":1: unknown congestion"},
                       Bad{"rpg_ai_rate = 3\ncc = dcqcn\n", ":2: cc = NAME must come before"},
                       Bad{"cc = dcqcn\n\nrpg_ai_rate\n", ":3: "}}) {
    INFO(b.text);
    path = write_temp(b.text);
    err.clear();
    CHECK_FALSE(load_cc_file(path, c, err));
    CHECK(err.find(path + b.says) != std::string::npos);
  }
  std::remove(path.c_str());
  CHECK_FALSE(load_cc_file("/nonexistent/cc.conf", c, err));
  CHECK(err.find("/nonexistent/cc.conf") != std::string::npos);
}
