// SPDX-License-Identifier: BSD-3-Clause
// The fixed part of every ICRC: the masked IP/UDP/BTH copy and its CRC.
// For a header-only packet (ACK) this is most of the ICRC cost.
#include "bench.h"
#include "sample_frames.h"
#include "uroce/wire/icrc.h"
#include "uroce/wire/parser.h"

using namespace uroce;

TEST_CASE("icrc_masked_headers", "[bench][crc]") {
  const bench::SampleFrame ack = bench::make_ack();
  wire::PacketView v;
  REQUIRE(wire::parse_frame(ack.bytes, v) == wire::ParseError::ok);
  const uint8_t* l3 = v.headers + v.l3_off;
  const size_t ip_len = v.l4_off - v.l3_off;
  // The header state continued over the AETH with plain zlib must give
  // the ICRC on the wire: the seeded-continuation contract of icrc.h.
  const uint8_t* aeth = v.headers + v.bth_off + wire::kBthLen;
  const uint32_t head = wire::icrc_masked_headers(l3, ip_len, false);
  REQUIRE(wire::crc32_with(wire::CrcImpl::zlib, head, aeth, v.payload_off - (v.bth_off + wire::kBthLen)) ==
          v.icrc_wire);
  BENCHMARK("icrc_masked_headers IPv4 (48 B)") { return wire::icrc_masked_headers(l3, ip_len, false); };
  // What an ACK is hashed as on both ends: the AETH in the same call.
  BENCHMARK("icrc_masked_headers IPv4 + AETH (52 B, an ACK)") { return wire::icrc_masked_headers(l3, ip_len, false, 4); };
}

TEST_CASE("icrc_masked_headers with a small payload", "[bench][crc]") {
  // A SEND ONLY of 20 bytes: headers and payload in one call (kIcrcSmallBody).
  const bench::SampleFrame send = bench::make_send_only(20);
  wire::PacketView v;
  REQUIRE(wire::parse_frame(send.bytes, v) == wire::ParseError::ok);
  const uint8_t* l3 = v.headers + v.l3_off;
  const size_t ip_len = v.l4_off - v.l3_off;
  REQUIRE(wire::icrc_masked_headers(l3, ip_len, false, v.payload_len + v.pad) == v.icrc_wire);
  BENCHMARK("icrc_masked_headers IPv4 + 20 B payload (68 B, a SEND ONLY)") {
    return wire::icrc_masked_headers(l3, ip_len, false, v.payload_len + v.pad);
  };
}
