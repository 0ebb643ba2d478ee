// SPDX-License-Identifier: BSD-3-Clause
// The library on real Linux rxe traffic: every RoCE packet parses, its
// ICRC verifies (but for the one deliberately corrupted frame), it passes
// the semantic checks, and rebuilding it from its fields gives the same bytes.
#include <vector>

#include "catch_printers.h"
#include "rxe_capture.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/parser.h"

using namespace uroce::wire;
using uroce::test::rxe_captures;

namespace {

// README: "frame 13 has a deliberately wrong ICRC".
bool is_corrupted(const std::string& file, int frame_no) {
  return file == "hostpeer_rc_pingpong.pcap" && frame_no == 13;
}

// README: eth0 MTU 1500 gives path MTU 1024, except the MTU 9000 run.
uint32_t pmtu_of(const std::string& file) { return file == "rc_pingpong_mtu4096.pcap" ? 4096 : 1024; }

}  // namespace

TEST_CASE("README's per-file RoCE packet counts match the captures", "[rxe]") {
  const auto readme = uroce::test::readme_packet_counts();
  REQUIRE(readme.size() == rxe_captures().size());
  size_t total = 0;
  for (const auto& c : rxe_captures()) {
    INFO(c.name);
    REQUIRE(readme.count(c.name) == 1);
    CHECK(c.roce.size() == size_t(readme.at(c.name)));
    total += c.roce.size();
  }
  CHECK(total == 404);  // tests/data/PROVENANCE.md, and tshark agrees
}

TEST_CASE("every rxe RoCE packet parses and its ICRC verifies, but one", "[rxe]") {
  int bad = 0;
  for (const auto& c : rxe_captures()) {
    size_t next = 0;  // index into c.roce
    for (size_t i = 0; i < c.frames.size(); ++i) {
      const int frame_no = int(i + 1);
      INFO(c.name << " frame " << frame_no);
      const bool roce = next < c.roce.size() && c.roce[next].frame_no == frame_no;
      PacketView v;
      const ParseError e = parse_frame(c.frames[i], v);
      if (!roce) {
        CHECK(e == ParseError::not_roce);  // ARP and the TCP exchange
        continue;
      }
      ++next;
      if (!is_corrupted(c.name, frame_no)) {
        CHECK(e == ParseError::ok);
        CHECK(v.icrc_calc == v.icrc_wire);
        continue;
      }
      ++bad;
      CHECK(e == ParseError::icrc);
      // Nothing but the ICRC is wrong with it.
      ParseOptions no_icrc;
      no_icrc.verify_icrc = false;
      CHECK(parse_frame(c.frames[i], v, no_icrc) == ParseError::ok);
      CHECK(check_semantics(v, pmtu_of(c.name)) == ParseError::ok);
    }
  }
  CHECK(bad == 1);
}

TEST_CASE("rxe packets pass the semantic checks at the capture's path MTU", "[rxe]") {
  for (const auto& c : rxe_captures())
    for (const auto& r : c.roce) {
      if (is_corrupted(c.name, r.frame_no)) continue;
      INFO(c.name << " frame " << r.frame_no);
      PacketView v;
      REQUIRE(parse_frame(*r.bytes, v) == ParseError::ok);
      CHECK(check_semantics(v, pmtu_of(c.name)) == ParseError::ok);
    }
}

TEST_CASE("rebuilding every rxe packet from its fields gives the captured bytes", "[rxe]") {
  int rebuilt = 0;
  for (const auto& c : rxe_captures())
    for (const auto& r : c.roce) {
      if (is_corrupted(c.name, r.frame_no)) continue;
      INFO(c.name << " frame " << r.frame_no);
      PacketView v;
      REQUIRE(parse_frame(*r.bytes, v) == ParseError::ok);
      const PacketFields f = decode_fields(v);
      std::vector<uint8_t> out(r.bytes->size() + 64);
      FrameLayout lay;
      REQUIRE(build_frame(f, {v.payload, v.payload_len}, out, lay) == BuildError::ok);
      out.resize(lay.frame_len);
      CHECK(out == *r.bytes);
      ++rebuilt;
    }
  CHECK(rebuilt == 403);
}
