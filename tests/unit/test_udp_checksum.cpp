// SPDX-License-Identifier: BSD-3-Clause
// BuildOptions::compute_udp_checksum and the parser's optional check.
#include <vector>

#include "catch_printers.h"
#include "test_support.h"
#include "uroce/wire/parser.h"

using namespace uroce::wire;

namespace {

// RFC 768 / RFC 8200 checksum written out independently of the library:
// the ones'-complement sum over pseudo header + datagram must be 0xFFFF.
uint32_t add16(uint32_t acc, const uint8_t* p, size_t n) {
  for (size_t i = 0; i + 1 < n; i += 2) acc += uint32_t(p[i]) << 8 | p[i + 1];
  if (n % 2) acc += uint32_t(p[n - 1]) << 8;
  return acc;
}

bool udp_sum_ok(const std::vector<uint8_t>& frame, const PacketView& v) {
  const uint8_t* ip = frame.data() + v.l3_off;
  const size_t udp_len = size_t(frame[v.l4_off + 4]) << 8 | frame[v.l4_off + 5];
  uint32_t acc = v.ipv6 ? add16(0, ip + 8, 32) : add16(0, ip + 12, 8);
  acc += 17 + uint32_t(udp_len);
  acc = add16(acc, frame.data() + v.l4_off, udp_len);
  while (acc >> 16) acc = (acc & 0xFFFF) + (acc >> 16);
  return acc == 0xFFFF;
}

}  // namespace

TEST_CASE("a computed UDP checksum verifies, a flipped byte does not", "[udp-checksum]") {
  ParseOptions strict;
  strict.verify_udp_checksum = true;
  for (bool ipv6 : {false, true})
    for (uint32_t len : {0u, 1u, 2u, 3u, 1000u, 4096u}) {
      INFO("ipv6 " << ipv6 << " len " << len);
      const auto payload = uroce::test::pattern_bytes(len, 9);
      const PacketFields f = uroce::test::sample_fields(op::RC_SEND_ONLY, ipv6, len == 3, len);
      auto frame = uroce::test::build_or_throw(f, payload, true);
      PacketView v;
      REQUIRE(parse_frame(frame, v, strict) == ParseError::ok);
      CHECK(v.udp().checksum() != 0);
      CHECK(udp_sum_ok(frame, v));
      // The ICRC masks the UDP checksum, so the unchecked parse still agrees.
      CHECK(parse_frame(frame, v) == ParseError::ok);
      frame[v.l4_off + 7] ^= 0x01;
      CHECK(parse_frame(frame, v, strict) == ParseError::udp_checksum);
      CHECK(parse_frame(frame, v) == ParseError::ok);
    }
}

TEST_CASE("a zero UDP checksum is accepted even when checking", "[udp-checksum]") {
  ParseOptions strict;
  strict.verify_udp_checksum = true;
  const auto payload = uroce::test::pattern_bytes(17, 1);
  const auto frame = uroce::test::build_or_throw(uroce::test::sample_fields(op::RC_SEND_ONLY, false, false, 17),
                                                 payload);
  PacketView v;
  REQUIRE(parse_frame(frame, v, strict) == ParseError::ok);
  CHECK(v.udp().checksum() == 0);
}

TEST_CASE("a payload byte change fails both checks", "[udp-checksum]") {
  ParseOptions strict;
  strict.verify_udp_checksum = true;
  const auto payload = uroce::test::pattern_bytes(64, 5);
  auto frame = uroce::test::build_or_throw(uroce::test::sample_fields(op::RC_SEND_ONLY, true, false, 64),
                                           payload, true);
  PacketView v;
  REQUIRE(parse_frame(frame, v, strict) == ParseError::ok);
  frame[v.payload_off + 10] ^= 0x40;
  const ParseError e = parse_frame(frame, v, strict);
  CHECK((e == ParseError::udp_checksum || e == ParseError::icrc));
  CHECK(parse_frame(frame, v) == ParseError::icrc);
}
