// SPDX-License-Identifier: BSD-3-Clause
// perftest's 108-byte QP record against the bytes real perftest sent.
#include <catch2/catch.hpp>
#include <cstring>

#include "capture_script.h"
#include "uroce/exchange/perftest.h"

using namespace uroce::exchange;
using uroce::test::perftest_capture;

namespace {

PerftestRecord record_of(const std::vector<uint8_t>& bytes) {
  REQUIRE(bytes.size() == kPerftestRecordSize);
  PerftestRecord r;
  std::memcpy(r.data(), bytes.data(), r.size());
  return r;
}

uroce::wire::IpAddr v4(const char* text) {
  uroce::wire::IpAddr a;
  REQUIRE(uroce::wire::IpAddr::parse(text, a));
  return a;
}

PerftestRecord valid_record() {
  PerftestDest d;
  d.out_reads = 1;
  d.qpn = 0x11;
  d.psn = 0x2abb6d;
  d.rkey = 0x201;
  d.vaddr = 0x0000558695865000;
  d.gid = v4("10.99.0.3");
  PerftestRecord r;
  std::string error;
  REQUIRE(encode_perftest_dest(d, r, error));
  return r;
}

}  // namespace

TEST_CASE("every captured perftest record decodes and re-encodes byte for byte", "[perftest-dest]") {
  int records = 0;
  for (const char* name : {"write_bw", "read_bw", "send_bw", "atomic_bw", "write_lat", "read_lat"}) {
    for (const auto& p : perftest_capture(name)) {
      if (p.bytes.size() != kPerftestRecordSize) continue;
      INFO(name << " frame " << p.frame);
      PerftestDest d;
      std::string error;
      REQUIRE(decode_perftest_dest(record_of(p.bytes), d, error));
      CHECK(d.lid == 0);
      CHECK(d.qpn == 0x11);  // first user QP of a freshly booted VM
      CHECK(d.srqn == 0);
      CHECK(d.gid == v4(p.from_client ? "10.99.0.3" : "10.99.0.2"));
      PerftestRecord again;
      REQUIRE(encode_perftest_dest(d, again, error));
      CHECK(again == record_of(p.bytes));
      ++records;
    }
  }
  CHECK(records == 58);
}

TEST_CASE("the captured write_bw and read_bw records carry perftest's values", "[perftest-dest]") {
  std::string error;
  PerftestDest c;
  REQUIRE(decode_perftest_dest(record_of(perftest_capture("write_bw")[8].bytes), c, error));  // frame 14
  CHECK(c.out_reads == 1);
  CHECK(c.psn == 0x2abb6d);
  CHECK(c.rkey == 0x201);
  CHECK(c.vaddr == 0x0000558695865000ull);

  PerftestDest s;
  REQUIRE(decode_perftest_dest(record_of(perftest_capture("write_bw")[9].bytes), s, error));  // frame 15
  CHECK(s.psn == 0xa519b2);
  CHECK(s.rkey == 0x2d6);
  CHECK(s.vaddr == 0x000055776b030000ull);

  PerftestDest r;
  REQUIRE(decode_perftest_dest(record_of(perftest_capture("read_bw")[8].bytes), r, error));  // frame 15
  CHECK(r.out_reads == 0x80);  // READ: the device's max_qp_rd_atom
  CHECK(r.psn == 0x4a1a18);
}

TEST_CASE("the encoding is perftest's text, 107 characters and a NUL", "[perftest-dest]") {
  PerftestRecord r = valid_record();
  const char expected[] =
      "0000:0001:000011:2abb6d:00000201:0000558695865000:"
      "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:63:00:03:00000000:";
  static_assert(sizeof expected == kPerftestRecordSize);
  CHECK(std::string(r.data(), r.size()) == std::string(expected, sizeof expected));

  PerftestDest big;
  big.lid = 0xffff;
  big.out_reads = 0xffff;
  big.qpn = 0xffffff;
  big.psn = 0xffffff;
  big.rkey = 0xffffffff;
  big.srqn = 0xffffffff;
  big.vaddr = ~0ull;
  big.gid.bytes.fill(0xfe);
  std::string error;
  REQUIRE(encode_perftest_dest(big, r, error));
  PerftestDest back;
  REQUIRE(decode_perftest_dest(r, back, error));
  CHECK(back == big);
}

TEST_CASE("fields wider than perftest prints them are refused", "[perftest-dest]") {
  PerftestRecord r;
  std::string error;
  for (int which = 0; which < 4; ++which) {
    PerftestDest d;
    (which == 0 ? d.lid : which == 1 ? d.out_reads : which == 2 ? d.qpn : d.psn) =
        which < 2 ? 0x10000 : 0x1000000;
    CHECK_FALSE(encode_perftest_dest(d, r, error));
    CHECK_THAT(error, Catch::Contains("exceeds its width"));
  }
}

TEST_CASE("uppercase hex digits are accepted", "[perftest-dest]") {
  PerftestRecord r = valid_record();
  for (char& c : r) c = char(std::toupper(uint8_t(c)));
  PerftestDest d;
  std::string error;
  REQUIRE(decode_perftest_dest(r, d, error));
  CHECK(d.psn == 0x2abb6d);
  CHECK(d.gid.bytes[10] == 0xff);
}

TEST_CASE("malformed records are rejected with the offending byte", "[perftest-dest]") {
  const PerftestRecord good = valid_record();
  PerftestDest d;
  std::string error;

  SECTION("wrong length") {
    CHECK_FALSE(decode_perftest_dest(good.data(), 107, d, error));
    CHECK(error == "perftest record: 107 bytes instead of 108");
    char longer[109] = {};
    std::memcpy(longer, good.data(), good.size());
    CHECK_FALSE(decode_perftest_dest(longer, sizeof longer, d, error));
    CHECK(error == "perftest record: 109 bytes instead of 108");
  }
  SECTION("every digit replaced by a non-hex character") {
    for (size_t i = 0; i + 1 < good.size(); ++i) {
      if (good[i] == ':') continue;
      PerftestRecord bad = good;
      bad[i] = 'g';
      INFO("byte " << i);
      CHECK_FALSE(decode_perftest_dest(bad, d, error));
      CHECK_THAT(error, Catch::StartsWith("perftest record byte " + std::to_string(i) + ": 'g' is not a hex digit"));
    }
  }
  SECTION("every separator replaced") {
    int separators = 0;
    for (size_t i = 0; i < good.size(); ++i) {
      if (good[i] != ':') continue;
      PerftestRecord bad = good;
      bad[i] = ';';
      INFO("byte " << i);
      CHECK_FALSE(decode_perftest_dest(bad, d, error));
      CHECK_THAT(error, Catch::StartsWith("perftest record byte " + std::to_string(i) + ": expected ':' after"));
      ++separators;
    }
    CHECK(separators == 23);
  }
  SECTION("no terminating NUL") {
    PerftestRecord bad = good;
    bad[107] = 'x';
    CHECK_FALSE(decode_perftest_dest(bad, d, error));
    CHECK(error == "perftest record byte 107: expected the terminating NUL, got 'x'");
  }
  SECTION("a field one digit short (what sscanf would take)") {
    // "0000:01:..." shifts every later field; the first ':' out of place is reported.
    std::string text = "0000:001:000011:2abb6d:00000201:0000558695865000:"
                       "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:63:00:03:00000000:";
    text.resize(kPerftestRecordSize, '\0');
    CHECK_FALSE(decode_perftest_dest(text.data(), text.size(), d, error));
    CHECK_THAT(error, Catch::StartsWith("perftest record byte 8: ':' is not a hex digit (OUT_READS has 4)"));
  }
  SECTION("the pingpong record is not a perftest record") {
    std::string pingpong = "0000:000011:c3ae30:00000000000000000000ffff0a630002";
    pingpong.resize(kPerftestRecordSize, '\0');
    CHECK_FALSE(decode_perftest_dest(pingpong.data(), pingpong.size(), d, error));
    CHECK(error == "perftest record byte 9: expected ':' after OUT_READS, got '1'");
  }
  SECTION("a binary NUL inside a field") {
    PerftestRecord bad = good;
    bad[20] = '\0';
    CHECK_FALSE(decode_perftest_dest(bad, d, error));
    CHECK(error == "perftest record byte 20: 0x00 is not a hex digit (PSN has 6)");
  }
}

namespace {
PerftestDest qp(uint32_t qpn, uint32_t psn) {
  PerftestDest d;
  d.qpn = qpn;
  d.psn = psn;
  return d;
}
}  // namespace

// A client with -q 4 against a server with -q 1: the server's round-2 and
// barrier records arrive where the client expects its QPs 1 and 2.
TEST_CASE("perftest QP count mismatch: a peer with fewer QPs repeats a QPN", "[perftest-dest]") {
  const std::vector<PerftestDest> first{qp(0x11, 0xaaa), qp(0x11, 0xaaa)};
  const std::string why = perftest_qp_mismatch(first, nullptr, 4, "server");
  CHECK(why.find("the server sent QP 0x000011 twice") != std::string::npos);
  CHECK(why.find("it likely runs 1 QP (-q), this side 4 QPs") != std::string::npos);
  CHECK(perftest_qp_mismatch({qp(0x11, 1), qp(0x12, 2)}, nullptr, 2, "server").empty());
}

// The server of that run: the client's QP 1 arrives as the second round.
TEST_CASE("perftest QP count mismatch: a peer with more QPs does not repeat its records", "[perftest-dest]") {
  const std::vector<PerftestDest> first{qp(0x11, 0xaaa)};
  const std::vector<PerftestDest> again{qp(0x12, 0xbbb)};
  const std::string why = perftest_qp_mismatch(first, &again, 1, "client");
  CHECK(why.find("likely runs more QPs (-q) than this side's 1 QP") != std::string::npos);
  const std::vector<PerftestDest> same{qp(0x11, 0xaaa)};
  CHECK(perftest_qp_mismatch(first, &same, 1, "client").empty());
}

// perftest -R's binary record (rdma_write_keys): the payload of the SEND
// that carried ib_send_bw -R's client's QP record in
// tests/data/rxe/send_bw_rdmacm.pcap (frame 31), with its uninitialised
// padding (0x747f0000) as it was sent.
TEST_CASE("perftest binary record: rxe's ib_send_bw -R record decodes field by field", "[exchange][perftest]") {
  const char* hex =
      "00000000000000010000001200369d1d00000000747f0000000055ca9437700000000000000000000000ffff0a6300030000000000000001";
  std::vector<uint8_t> b;
  for (size_t i = 0; hex[i]; i += 2) b.push_back(uint8_t(std::stoul(std::string(hex + i, 2), nullptr, 16)));
  REQUIRE(b.size() == kPerftestBinaryRecordSize);
  PerftestDest d;
  std::string error;
  REQUIRE(decode_perftest_dest_binary(b.data(), b.size(), d, error));
  CHECK(d.lid == 0);
  CHECK(d.out_reads == 1);
  CHECK(d.qpn == 0x12);
  CHECK(d.psn == 0x369d1d);
  CHECK(d.rkey == 0);
  CHECK(d.vaddr == 0x000055ca94377000ull);
  CHECK(d.gid == v4("10.99.0.3"));
  CHECK(d.srqn == 0);
  CHECK(d.gid_index == 1);

  // Encoding gives the same bytes, except the padding, sent as zeros.
  PerftestBinaryRecord out;
  encode_perftest_dest_binary(d, out);
  std::vector<uint8_t> expect = b;
  std::fill(expect.begin() + 20, expect.begin() + 24, 0);
  CHECK(std::vector<uint8_t>(out.begin(), out.end()) == expect);

  // Another size is not this record (the text record is 108 bytes).
  CHECK_FALSE(decode_perftest_dest_binary(b.data(), 55, d, error));
  CHECK(error.find("56") != std::string::npos);
  PerftestRecord text = valid_record();
  CHECK_FALSE(decode_perftest_dest_binary(reinterpret_cast<const uint8_t*>(text.data()), text.size(), d, error));

  // A QP number or PSN past 24 bits is no QP's.
  for (size_t at : {size_t(8), size_t(12)}) {
    std::vector<uint8_t> bad = b;
    bad[at] = 0x01;
    CHECK_FALSE(decode_perftest_dest_binary(bad.data(), bad.size(), d, error));
    CHECK(error.find("past 24 bits") != std::string::npos);
  }
}
