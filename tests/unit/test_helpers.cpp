// SPDX-License-Identifier: BSD-3-Clause
// Address text, the IPv4 header checksum and the RoCE UDP source port.
#include <random>
#include <string>
#include <vector>

#include "catch_printers.h"
#include "test_support.h"
#include "uroce/wire/eth.h"
#include "uroce/wire/ip_addr.h"
#include "uroce/wire/ipv4.h"
#include "uroce/wire/udp.h"

using namespace uroce::wire;

TEST_CASE("MacAddr parses colon-separated hex and prints lower case", "[helpers]") {
  MacAddr m;
  REQUIRE(MacAddr::parse("02:00:00:99:00:10", m));
  CHECK(m.bytes == std::array<uint8_t, 6>{0x02, 0x00, 0x00, 0x99, 0x00, 0x10});
  CHECK(m.to_string() == "02:00:00:99:00:10");
  REQUIRE(MacAddr::parse("AA:bb:CC:dd:EE:ff", m));
  CHECK(m.to_string() == "aa:bb:cc:dd:ee:ff");
}

TEST_CASE("MacAddr rejects malformed text and leaves the output alone", "[helpers]") {
  const char* bad[] = {"",
                       "aa:bb:cc:dd:ee",
                       "aa:bb:cc:dd:ee:ff:00",
                       "aa-bb-cc-dd-ee-ff",
                       "aabb.ccdd.eeff",
                       "aa:bb:cc:dd:ee:fg",
                       "aaa:bb:cc:dd:ee:ff",
                       "aa:bb:cc:dd:ee:ff ",
                       "aa:bb:cc:dd:ee:ff\n",
                       "gg:bb:cc:dd:ee:ff",
                       "aa:bb:cc:dd:ee:",
                       // sscanf("%2x") took these before the parser was made strict
                       "-1:bb:cc:dd:ee:ff",
                       "0x:bb:cc:dd:ee:ff",
                       "+a:bb:cc:dd:ee:ff",
                       "aa:bb:cc:dd:ee:f",
                       " aa:bb:cc:dd:ee:f",
                       "aa: b:cc:dd:ee:ff"};
  for (const char* text : bad) {
    INFO("text '" << text << "'");
    MacAddr m;
    m.bytes.fill(0x5A);
    CHECK_FALSE(MacAddr::parse(text, m));
    CHECK(m.bytes == std::array<uint8_t, 6>{0x5A, 0x5A, 0x5A, 0x5A, 0x5A, 0x5A});
  }
}

TEST_CASE("IpAddr holds IPv4 as v4-mapped and prints both forms", "[helpers]") {
  IpAddr a;
  REQUIRE(IpAddr::parse("10.99.0.2", a));
  CHECK(a.is_v4_mapped());
  const std::array<uint8_t, 16> mapped = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 99, 0, 2};
  CHECK(a.bytes == mapped);
  CHECK(a.to_string() == "10.99.0.2");
  // The GID form of the same address is the same object.
  IpAddr gid;
  REQUIRE(IpAddr::parse("::ffff:10.99.0.2", gid));
  CHECK(gid == a);

  REQUIRE(IpAddr::parse("FD00:100:0:0:0:0:0:1", a));
  CHECK_FALSE(a.is_v4_mapped());
  CHECK(a.bytes[0] == 0xFD);
  CHECK(a.bytes[3] == 0x00);
  CHECK(a.bytes[15] == 0x01);
  CHECK(a.to_string() == "fd00:100::1");  // RFC 5952: lower case, longest zero run
  REQUIRE(IpAddr::parse("::", a));
  CHECK(a.to_string() == "::");
}

TEST_CASE("IpAddr rejects malformed text", "[helpers]") {
  const char* bad[] = {"", "10.0.0", "10.0.0.256", "1.2.3.4.5", " 10.0.0.1", "10.0.0.1 ",
                       "fd00:::1", "1:2:3:4:5:6:7:8:9", "hello", "10.0.0.1/24", "gggg::1"};
  for (const char* text : bad) {
    INFO("text '" << text << "'");
    IpAddr a;
    CHECK_FALSE(IpAddr::parse(text, a));
  }
}

TEST_CASE("ipv4_header_checksum of a known header", "[helpers]") {
  // The textbook example header (RFC 1071 style), checksum 0xB861.
  auto hdr = uroce::test::from_hex("450000730000400040110000c0a80001c0a800c7");
  CHECK(ipv4_header_checksum(hdr.data(), hdr.size()) == 0xB861);
  hdr[10] = 0xB8;
  hdr[11] = 0x61;
  CHECK(ipv4_header_checksum(hdr.data(), hdr.size()) == 0);
  // The first synthetic vector's header, checksum 0xf16b per the oracle.
  const auto v = uroce::test::from_hex("4500002c000140004011f16bc0a86401c0a86402");
  CHECK(ipv4_header_checksum(v.data(), v.size()) == 0);
}

TEST_CASE("ipv4_header_checksum equals RFC 1071's 16-bit big-endian sum for every length", "[helpers]") {
  std::mt19937 rng(1071);
  for (size_t len = 0; len <= 61; ++len)
    for (int round = 0; round < 20; ++round) {
      std::vector<uint8_t> b(len);
      for (auto& x : b) x = round == 0 ? 0xFF : uint8_t(rng());  // all-ones: the most carries
      uint32_t acc = 0;
      for (size_t i = 0; i < len; i += 2) acc += uint32_t(b[i]) << 8 | (i + 1 < len ? b[i + 1] : 0);
      while (acc >> 16) acc = (acc & 0xFFFF) + (acc >> 16);
      INFO("len " << len << " round " << round);
      CHECK(ipv4_header_checksum(b.data(), len) == uint16_t(~acc));
    }
}

TEST_CASE("roce_udp_sport follows the kernel's rdma_get_udp_sport", "[helpers]") {
  // Values seen in the rxe captures (tests/data/rxe/README.md).
  CHECK(roce_udp_sport(0, 0x11, 0x11) == 49441);
  CHECK(roce_udp_sport(0, 0x11, 0x123) == 54099);
  CHECK(roce_udp_sport(0, 0x123, 0x11) == 54099);
  // A non-zero flow label replaces the QPN hash: 0xABCDE gives
  // (0x3CDE ^ (0xABCDE >> 14 = 0x2A)) | 0xC000 = 0xFCF4, whatever the QPNs.
  CHECK(roce_udp_sport(0xABCDE, 0x11, 0x11) == 0xFCF4);
  CHECK(roce_udp_sport(0xABCDE, 0x1, 0xFFFFFF) == 0xFCF4);
  // 0xFFFFF: 0x3FFF ^ 0x3F = 0x3FC0.
  CHECK(roce_udp_sport(0xFFFFF, 0, 0) == 0xFFC0);
  // Flow label 1 (low bits only) -> 0xC001.
  CHECK(roce_udp_sport(1, 0x11, 0x11) == 0xC001);
  for (uint32_t fl = 1; fl < 0x100000; fl += 4099) {
    INFO("flow label " << fl);
    CHECK(roce_udp_sport(fl, 5, 7) >= 0xC000);
  }
}
