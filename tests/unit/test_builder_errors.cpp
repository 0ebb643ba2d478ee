// SPDX-License-Identifier: BSD-3-Clause
// Every way build_frame() / build_headers() refuse to build.
#include <vector>

#include "catch_printers.h"
#include "test_support.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/parser.h"

using namespace uroce::wire;
using uroce::test::pattern_bytes;
using uroce::test::sample_fields;

namespace {

BuildError try_build(const PacketFields& f, std::span<const uint8_t> payload, size_t out_len = 8192) {
  std::vector<uint8_t> out(out_len);
  FrameLayout lay;
  return build_frame(f, payload, out, lay);
}

}  // namespace

TEST_CASE("reserved opcodes and TVer != 0 are refused", "[builder]") {
  for (int code : {0x15, 0x18, 0x1F, 0x2C, 0x63, 0x66, 0x80, 0x82, 0xFF}) {
    INFO("opcode " << code);
    PacketFields f = sample_fields(op::RC_SEND_ONLY, false, false, 0);
    f.bth.opcode = uint8_t(code);
    CHECK(try_build(f, {}) == BuildError::bad_opcode);
  }
  for (uint8_t tver : {1, 2, 15}) {
    PacketFields f = sample_fields(op::RC_SEND_ONLY, false, false, 0);
    f.bth.tver = tver;
    CHECK(try_build(f, {}) == BuildError::bad_opcode);
  }
}

TEST_CASE("payload on an opcode without payload is refused", "[builder]") {
  for (uint8_t code : {op::RC_ACKNOWLEDGE, op::RC_ATOMIC_ACKNOWLEDGE, op::RC_RDMA_READ_REQUEST,
                       op::RC_COMPARE_SWAP, op::RC_FETCH_ADD, op::CNP}) {
    INFO("opcode " << int(code));
    const auto payload = pattern_bytes(4, 1);
    CHECK(try_build(sample_fields(code, false, false, 4), payload) == BuildError::payload_not_allowed);
    CHECK(try_build(sample_fields(code, true, true, 0), {}) == BuildError::ok);
  }
}

TEST_CASE("payload over 4096 bytes is refused", "[builder]") {
  const auto payload = pattern_bytes(4097, 2);
  CHECK(try_build(sample_fields(op::RC_SEND_ONLY, false, false, 4097), payload) == BuildError::payload_too_long);
  CHECK(try_build(sample_fields(op::RC_SEND_ONLY, true, false, 4096), std::span(payload).first(4096)) ==
        BuildError::ok);
}

TEST_CASE("payload span size must equal payload_len", "[builder]") {
  const auto payload = pattern_bytes(100, 3);
  CHECK(try_build(sample_fields(op::RC_SEND_ONLY, false, false, 99), payload) == BuildError::payload_mismatch);
  CHECK(try_build(sample_fields(op::RC_SEND_ONLY, false, false, 101), payload) == BuildError::payload_mismatch);
  CHECK(try_build(sample_fields(op::RC_SEND_ONLY, false, false, 100), payload) == BuildError::ok);
}

TEST_CASE("an output buffer one byte short is refused", "[builder]") {
  const auto payload = pattern_bytes(61, 4);
  for (bool ipv6 : {false, true})
    for (bool vlan : {false, true}) {
      INFO("ipv6 " << ipv6 << " vlan " << vlan);
      const PacketFields f = sample_fields(op::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, ipv6, vlan, 61);
      const size_t frame_len = uroce::test::build_or_throw(f, payload).size();
      CHECK(try_build(f, payload, frame_len) == BuildError::ok);
      CHECK(try_build(f, payload, frame_len - 1) == BuildError::no_room);
      CHECK(try_build(f, payload, 10) == BuildError::no_room);

      std::vector<uint8_t> hdr(kMaxHeaderLen);
      FrameLayout lay;
      REQUIRE(build_headers(f, hdr, lay) == BuildError::ok);
      std::vector<uint8_t> short_hdr(lay.payload_off - 1);
      CHECK(build_headers(f, short_hdr, lay) == BuildError::no_room);
    }
}

TEST_CASE("an IPv4 frame needs v4-mapped addresses", "[builder]") {
  IpAddr v6;
  REQUIRE(IpAddr::parse("fd00::1", v6));
  PacketFields f = sample_fields(op::RC_SEND_ONLY, false, false, 0);
  f.ip.src = v6;
  CHECK(try_build(f, {}) == BuildError::bad_address);
  f = sample_fields(op::RC_SEND_ONLY, false, false, 0);
  f.ip.dst = v6;
  CHECK(try_build(f, {}) == BuildError::bad_address);
  // The same addresses are fine in an IPv6 frame.
  f.ip.ipv6 = true;
  f.ip.df = false;
  f.ip.id = 0;
  CHECK(try_build(f, {}) == BuildError::ok);
}

TEST_CASE("every BuildError has a message", "[builder]") {
  for (BuildError e : {BuildError::ok, BuildError::bad_opcode, BuildError::payload_not_allowed,
                       BuildError::payload_too_long, BuildError::payload_mismatch, BuildError::no_room,
                       BuildError::bad_address}) {
    CHECK(std::string(to_string(e)).size() > 1);
  }
}
