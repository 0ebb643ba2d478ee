// SPDX-License-Identifier: BSD-3-Clause
// The parser on damaged frames: every truncation fails, the ICRC covers
// exactly the invariant fields, and random damage never yields a view that
// points outside the frame.
#include <random>
#include <vector>

#include "catch_printers.h"
#include "robustness_frames.h"
#include "uroce/wire/ipv4.h"
#include "uroce/wire/parser.h"

using namespace uroce::wire;

namespace {

void fix_ipv4_checksum(std::vector<uint8_t>& f, size_t l3) {
  f[l3 + 10] = f[l3 + 11] = 0;
  const uint16_t sum = ipv4_header_checksum(f.data() + l3, 20);
  f[l3 + 10] = uint8_t(sum >> 8);
  f[l3 + 11] = uint8_t(sum);
}

// XORs one byte (fixing the IPv4 header checksum afterwards) and parses.
ParseError parse_mutated(std::vector<uint8_t> f, const PacketView& orig, size_t off, uint8_t mask) {
  f[off] ^= mask;
  if (!orig.ipv6) fix_ipv4_checksum(f, orig.l3_off);
  PacketView v;
  return parse_frame(f, v);
}

void expect_verdict(const std::vector<uint8_t>& f, const PacketView& orig, const std::vector<size_t>& offsets,
                    std::initializer_list<uint8_t> masks, ParseError want) {
  for (size_t off : offsets)
    for (uint8_t mask : masks) {
      INFO("offset " << off << " mask " << int(mask));
      CHECK(parse_mutated(f, orig, off, mask) == want);
    }
}

std::vector<size_t> span_of(size_t from, size_t n) {
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i) out.push_back(from + i);
  return out;
}

}  // namespace

TEST_CASE("every truncation of a valid frame is rejected as truncated", "[robustness]") {
  ParseOptions no_icrc;
  no_icrc.verify_icrc = false;
  for (const auto& nf : uroce::test::robustness_frames()) {
    INFO(nf.name);
    PacketView v;
    REQUIRE(parse_frame(nf.bytes, v) == ParseError::ok);
    for (size_t n = 0; n < nf.bytes.size(); ++n) {
      INFO("length " << n);
      // Exactly n bytes on the heap, so a sanitizer sees any over-read.
      const std::vector<uint8_t> cut(nf.bytes.begin(), nf.bytes.begin() + long(n));
      CHECK(parse_frame(cut, v) == ParseError::truncated);
      CHECK(parse_frame(cut, v, no_icrc) == ParseError::truncated);
    }
  }
}

TEST_CASE("Ethernet padding after the datagram is ignored", "[robustness]") {
  for (const auto& nf : uroce::test::robustness_frames()) {
    INFO(nf.name);
    PacketView ref;
    REQUIRE(parse_frame(nf.bytes, ref) == ParseError::ok);
    std::vector<uint8_t> padded = nf.bytes;
    padded.resize(padded.size() + 7, 0xEE);
    PacketView v;
    REQUIRE(parse_frame(padded, v) == ParseError::ok);
    CHECK(v.frame_len == padded.size());
    CHECK(v.end_off == nf.bytes.size());
    CHECK(decode_fields(v) == decode_fields(ref));
  }
}

TEST_CASE("changing a field the ICRC masks keeps the ICRC valid", "[robustness]") {
  for (const auto& nf : uroce::test::robustness_frames()) {
    INFO(nf.name);
    PacketView v;
    REQUIRE(parse_frame(nf.bytes, v) == ParseError::ok);
    const std::vector<size_t> udp_csum = {v.l4_off + 6u, v.l4_off + 7u};
    expect_verdict(nf.bytes, v, udp_csum, {0x01, 0x80, 0xFF}, ParseError::ok);
    expect_verdict(nf.bytes, v, {v.bth_off + 4u}, {0x80, 0x40, 0x3F, 0xFF}, ParseError::ok);  // FECN/BECN/resv6
    if (v.ipv6) {
      expect_verdict(nf.bytes, v, {v.l3_off + 0u}, {0x01, 0x0F}, ParseError::ok);  // traffic class, high half
      expect_verdict(nf.bytes, v, span_of(v.l3_off + 1, 3), {0x01, 0x80, 0xFF}, ParseError::ok);
      expect_verdict(nf.bytes, v, {v.l3_off + 7u}, {0x01, 0xFF}, ParseError::ok);  // hop limit
    } else {
      expect_verdict(nf.bytes, v, {v.l3_off + 1u, v.l3_off + 8u}, {0x01, 0x80, 0xFF}, ParseError::ok);  // TOS, TTL
    }
    // Ethernet and VLAN headers are outside the ICRC altogether.
    expect_verdict(nf.bytes, v, span_of(0, 12), {0x01, 0xFF}, ParseError::ok);
    if (v.vlan) expect_verdict(nf.bytes, v, span_of(14, 2), {0x01, 0xFF}, ParseError::ok);
  }
}

TEST_CASE("changing an invariant field breaks the ICRC", "[robustness]") {
  for (const auto& nf : uroce::test::robustness_frames()) {
    INFO(nf.name);
    PacketView v;
    REQUIRE(parse_frame(nf.bytes, v) == ParseError::ok);
    const std::initializer_list<uint8_t> masks = {0x01, 0x10, 0x80};
    expect_verdict(nf.bytes, v, span_of(v.bth_off + 9, 3), masks, ParseError::icrc);  // PSN
    expect_verdict(nf.bytes, v, span_of(v.bth_off + 5, 3), masks, ParseError::icrc);  // DestQP
    expect_verdict(nf.bytes, v, span_of(v.bth_off + 2, 2), masks, ParseError::icrc);  // P_Key
    expect_verdict(nf.bytes, v, {v.bth_off + 8u}, masks, ParseError::icrc);           // AckReq, resv7
    expect_verdict(nf.bytes, v, {v.bth_off + 1u}, {0x80, 0x40}, ParseError::icrc);     // SE, MigReq
    expect_verdict(nf.bytes, v, span_of(v.bth_off + 12, v.payload_off - v.bth_off - 12u), masks,
                   ParseError::icrc);  // extension headers
    expect_verdict(nf.bytes, v, span_of(v.payload_off, std::min<uint32_t>(v.payload_len, 40)), masks,
                   ParseError::icrc);
    expect_verdict(nf.bytes, v, span_of(v.payload_off + v.payload_len, v.pad), masks, ParseError::icrc);
    expect_verdict(nf.bytes, v, span_of(v.end_off - 4, 4), masks, ParseError::icrc);  // the ICRC itself
    expect_verdict(nf.bytes, v, {v.l4_off + 0u, v.l4_off + 1u}, masks, ParseError::icrc);  // UDP source port
    if (v.ipv6) {
      expect_verdict(nf.bytes, v, span_of(v.l3_off + 8, 32), {0x01}, ParseError::icrc);  // addresses
    } else {
      // The IP ID is not masked: a retransmission has a new ICRC.
      expect_verdict(nf.bytes, v, {v.l3_off + 4u, v.l3_off + 5u}, masks, ParseError::icrc);
      expect_verdict(nf.bytes, v, span_of(v.l3_off + 12, 8), {0x01}, ParseError::icrc);  // addresses
    }
  }
}

TEST_CASE("an IPv4 header change without a new checksum is an ipv4_checksum error", "[robustness]") {
  for (const auto& nf : uroce::test::robustness_frames()) {
    PacketView v;
    REQUIRE(parse_frame(nf.bytes, v) == ParseError::ok);
    if (v.ipv6) continue;
    INFO(nf.name);
    auto f = nf.bytes;
    f[v.l3_off + 8] ^= 0x01;  // TTL
    CHECK(parse_frame(f, v) == ParseError::ipv4_checksum);
  }
}

TEST_CASE("random damage never yields a view outside the frame", "[robustness]") {
  std::mt19937 rng(4791);
  // Without the checksums more damaged frames get through to the later checks.
  ParseOptions lax;
  lax.verify_icrc = false;
  lax.verify_ipv4_checksum = false;
  for (const auto& nf : uroce::test::robustness_frames()) {
    INFO(nf.name);
    for (int iter = 0; iter < 3000; ++iter) {
      std::vector<uint8_t> f = nf.bytes;
      const int hits = 1 + int(rng() % 4);
      for (int h = 0; h < hits; ++h) f[rng() % f.size()] = uint8_t(rng());
      f.resize(f.size() - rng() % 3 * (rng() % 8));  // sometimes also cut the tail
      PacketView v;
      if (parse_frame(f, v, lax) != ParseError::ok) continue;
      INFO("iteration " << iter);
      CHECK(v.payload_off + v.payload_len + v.pad + 4u == v.end_off);
      CHECK(v.end_off <= f.size());
      CHECK(v.payload == f.data() + v.payload_off);
      CHECK(v.payload_len <= kMaxPayloadLen);
      CHECK(v.bth_off + v.op->header_len == v.payload_off);
    }
  }
}
