// SPDX-License-Identifier: BSD-3-Clause
// The 52-byte ibv_*_pingpong record: every record rdma-core sent in the
// rxe captures decodes to what the capture's decode says and re-encodes to
// the same bytes; malformed records fail with a message naming the byte.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "pingpong_data.h"
#include "uroce/exchange/pingpong.h"

namespace uroce::exchange {
namespace {

wire::IpAddr v4_gid(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  const uint8_t four[4] = {a, b, c, d};
  return wire::IpAddr::from_v4(four);
}

PingpongDest dest(uint32_t qpn, uint32_t psn, const wire::IpAddr& gid) {
  PingpongDest d;
  d.qpn = qpn;
  d.psn = psn;
  d.gid = gid;
  return d;
}

// Decodes the record at `offset` of a captured stream, checks it against
// `want` and that encoding `want` gives the captured bytes back.
void check_record(const std::string& stream, size_t offset, const PingpongDest& want) {
  INFO("record at byte " << offset);
  REQUIRE(stream.size() >= offset + kPingpongRecordSize);
  PingpongDest got;
  std::string error;
  REQUIRE(decode_pingpong(stream.data() + offset, kPingpongRecordSize, got, error));
  CHECK(error.empty());
  CHECK(got == want);
  PingpongRecord enc;
  REQUIRE(encode_pingpong(want, enc, error));
  CHECK(std::string(enc.data(), enc.size()) == stream.substr(offset, kPingpongRecordSize));
}

const wire::IpAddr kServerGid = v4_gid(10, 99, 0, 2);  // VM A
const wire::IpAddr kClientGid = v4_gid(10, 99, 0, 3);  // VM B

std::string good_record() { return test::read_stream("rc_pingpong", "server"); }

// decode_pingpong of `rec` must fail with a message containing `needle`.
void check_rejected(const std::string& rec, const std::string& needle) {
  INFO("record: " << rec);
  PingpongDest got = dest(1, 2, kServerGid);
  const PingpongDest before = got;
  std::string error;
  CHECK_FALSE(decode_pingpong(rec.data(), rec.size(), got, error));
  CHECK_THAT(error, Catch::Contains(needle));
  CHECK_THAT(error, Catch::Contains("malformed pingpong record"));
  CHECK(got == before);  // untouched on failure
}

}  // namespace

TEST_CASE("rc_pingpong records of the rxe captures", "[pingpong-record]") {
  struct Case {
    const char* name;
    uint32_t client_psn, server_psn;
  };
  for (const Case& c : {Case{"rc_pingpong", 0x00c364, 0xc3ae30}, Case{"rc_pingpong_small", 0x80c113, 0x30327c},
                        Case{"ud_pingpong", 0x67c301, 0x2a4dfd}}) {
    INFO(c.name);
    const std::string client = test::read_stream(c.name, "client");
    const std::string server = test::read_stream(c.name, "server");
    REQUIRE(client.size() == kPingpongRecordSize + sizeof kPingpongDone);
    REQUIRE(server.size() == kPingpongRecordSize);
    check_record(client, 0, dest(0x11, c.client_psn, kClientGid));
    check_record(server, 0, dest(0x11, c.server_psn, kServerGid));
    CHECK(client.substr(kPingpongRecordSize) == std::string(kPingpongDone, sizeof kPingpongDone));
  }
}

TEST_CASE("srq_pingpong sends one record per possible QP, zeros after the used ones", "[pingpong-record]") {
  const std::string client = test::read_stream("srq_pingpong", "client");
  const std::string server = test::read_stream("srq_pingpong", "server");
  constexpr size_t kMaxQp = 256;  // srq_pingpong's MAX_QP
  REQUIRE(client.size() == kMaxQp * kPingpongRecordSize + sizeof kPingpongDone);
  REQUIRE(server.size() == kMaxQp * kPingpongRecordSize);
  check_record(client, 0, dest(0x11, 0x86b43c, kClientGid));
  check_record(client, kPingpongRecordSize, dest(0x12, 0x600f76, kClientGid));
  check_record(server, 0, dest(0x11, 0xde6a98, kServerGid));
  check_record(server, kPingpongRecordSize, dest(0x12, 0xd5cfd9, kServerGid));
  for (size_t i = 2; i < kMaxQp; ++i) {
    check_record(client, i * kPingpongRecordSize, PingpongDest{});
    check_record(server, i * kPingpongRecordSize, PingpongDest{});
  }
}

TEST_CASE("encode writes the widths, lowercase hex and the GID in wire order", "[pingpong-record]") {
  PingpongDest d;
  d.lid = 0xBEEF;
  d.qpn = 0xABCDEF;
  d.psn = 0x000001;
  wire::IpAddr::parse("fe80::1:2:3:a4", d.gid);
  PingpongRecord r;
  std::string error;
  REQUIRE(encode_pingpong(d, r, error));
  CHECK(std::string(r.data()) == "beef:abcdef:000001:fe8000000000000000010002000300a4");
  CHECK(r.back() == '\0');
  PingpongDest back;
  REQUIRE(decode_pingpong(r, back, error));
  CHECK(back == d);
}

TEST_CASE("encode refuses fields that do not fit their width", "[pingpong-record]") {
  PingpongRecord r;
  std::string error;
  PingpongDest d = dest(0x1000000, 1, kServerGid);
  CHECK_FALSE(encode_pingpong(d, r, error));
  CHECK_THAT(error, Catch::Contains("QPN"));
  d = dest(1, 0x1000000, kServerGid);
  CHECK_FALSE(encode_pingpong(d, r, error));
  CHECK_THAT(error, Catch::Contains("PSN"));
  d = dest(1, 1, kServerGid);
  d.lid = 0x10000;
  CHECK_FALSE(encode_pingpong(d, r, error));
  CHECK_THAT(error, Catch::Contains("LID"));
  d.lid = 0xFFFF;
  d.qpn = d.psn = 0xFFFFFF;
  CHECK(encode_pingpong(d, r, error));  // the largest values fit
}

TEST_CASE("decode accepts uppercase hex (sscanf %x does)", "[pingpong-record]") {
  std::string rec = good_record();
  for (char& c : rec)
    if (c >= 'a' && c <= 'f') c = char(c - 'a' + 'A');
  PingpongDest d;
  std::string error;
  REQUIRE(decode_pingpong(rec.data(), rec.size(), d, error));
  CHECK(d == dest(0x11, 0xc3ae30, kServerGid));
}

TEST_CASE("malformed records are rejected with the byte at fault", "[pingpong-record]") {
  const std::string good = good_record();
  REQUIRE(good.size() == kPingpongRecordSize);

  SECTION("wrong length") {
    check_rejected(good.substr(0, 51), "51 bytes, expected 52");
    check_rejected(good + "x", "53 bytes, expected 52");
    check_rejected("", "0 bytes, expected 52");
  }
  SECTION("a separator missing or misplaced") {
    for (size_t at : {4, 11, 18}) {
      std::string r = good;
      r[at] = '0';
      check_rejected(r, "byte " + std::to_string(at) + " is '0', expected ':'");
    }
  }
  SECTION("a non-hex character in each field") {
    struct Bad {
      size_t at;
      const char* field;
    };
    for (Bad b : {Bad{0, "LID"}, Bad{3, "LID"}, Bad{5, "QPN"}, Bad{10, "QPN"}, Bad{12, "PSN"}, Bad{17, "PSN"},
                  Bad{19, "GID"}, Bad{50, "GID"}}) {
      std::string r = good;
      r[b.at] = 'g';
      check_rejected(r, "byte " + std::to_string(b.at) + " is 'g', expected a hex digit of the " + b.field);
    }
  }
  SECTION("sscanf leniencies are errors here: spaces, signs, 0x, short fields") {
    std::string r = good;
    r[5] = ' ';
    check_rejected(r, "byte 5 is ' '");
    r = good;
    r[12] = '+';
    check_rejected(r, "byte 12 is '+'");
    r = good;
    r[6] = 'x';
    check_rejected(r, "byte 6 is 'x'");
    // "0:11:..." shifted left: the first colon comes too early.
    r = "0000:11:c3ae30:00000000000000000000ffff0a630002";
    r.resize(kPingpongRecordSize, '\0');
    check_rejected(r, "byte 7 is ':'");
  }
  SECTION("no terminating NUL, or a NUL inside") {
    std::string r = good;
    r[51] = '0';
    check_rejected(r, "byte 51 is '0', expected the terminating NUL");
    r = good;
    r[30] = '\0';
    check_rejected(r, "byte 30 is 0x00");
  }
  SECTION("another tool's bytes: perftest opens with its version string") {
    std::string r = "6.06";
    r.resize(kPingpongRecordSize, '\0');
    check_rejected(r, "byte 1 is '.'");
  }
  SECTION("binary garbage is shown as hex") {
    std::string r = good;
    r[2] = char(0xC3);
    check_rejected(r, "byte 2 is 0xc3");
  }
}

}  // namespace uroce::exchange
