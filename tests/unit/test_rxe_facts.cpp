// SPDX-License-Identifier: BSD-3-Clause
// What tests/data/rxe/README.md says about the captures, checked on the raw
// bytes (rxe_capture.cpp reads them without the library). These pin down
// what a peer really sends, which the stack's own tests build on.
#include <vector>

#include "catch_printers.h"
#include "rxe_capture.h"
#include "uroce/wire/udp.h"

using uroce::test::kVmA;
using uroce::test::kVmB;
using uroce::test::RawRoce;
using uroce::test::rxe_capture;

namespace {

std::vector<const RawRoce*> sent_by(const std::string& file, uint32_t ip_src) {
  std::vector<const RawRoce*> out;
  for (const auto& r : rxe_capture(file).roce)
    if (r.ip_src == ip_src) out.push_back(&r);
  return out;
}

std::vector<int> opcodes(const std::vector<const RawRoce*>& pkts) {
  std::vector<int> out;
  for (auto* p : pkts) out.push_back(p->opcode);
  return out;
}

std::vector<int> repeat(const std::vector<int>& unit, int times) {
  std::vector<int> out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), unit.begin(), unit.end());
  return out;
}

// Payload bytes of a packet whose transport headers are `hdr_len` long.
int payload_len(const RawRoce& r, int hdr_len) {
  const int pad = ((*r.bytes)[r.bth + 1] >> 4) & 3;
  return r.udp_len - 8 - hdr_len - pad - 4;
}

uint32_t psn_add(uint32_t psn, uint32_t n) { return (psn + n) & 0xFFFFFF; }

// IBA opcodes that end an RC request message (README: AckReq is set there).
bool ends_rc_request(int op) {
  switch (op) {
    case 0x02: case 0x03: case 0x04: case 0x05:  // SEND LAST/ONLY (+IMM)
    case 0x08: case 0x09: case 0x0A: case 0x0B:  // WRITE LAST/ONLY (+IMM)
    case 0x0C:                                   // READ REQUEST
    case 0x13: case 0x14:                        // atomics
    case 0x16: case 0x17:                        // SEND with invalidate
      return true;
    default: return false;
  }
}

const char* const kRcPairFiles[] = {"rc_pingpong.pcap", "rc_pingpong_mtu4096.pcap", "rc_pingpong_small.pcap",
                                    "write_bw.pcap",    "write_lat.pcap",           "read_lat.pcap",
                                    "read_bw.pcap",     "send_bw.pcap",             "atomic_bw.pcap",
                                    "atomic_bw_cmp_swap.pcap", "srq_pingpong.pcap"};

}  // namespace

TEST_CASE("rxe's UDP source port for QPN 0x11 <-> 0x11 is 49441", "[rxe-facts]") {
  CHECK(uroce::wire::roce_udp_sport(0, 0x11, 0x11) == 49441);
  for (const char* file : kRcPairFiles) {
    INFO(file);
    int seen = 0;
    for (const auto& r : rxe_capture(file).roce) {
      if (r.dest_qp != 0x11) continue;
      CHECK(r.sport == 49441);
      ++seen;
    }
    CHECK(seen > 0);
  }
}

TEST_CASE("rxe's UDP source port for QPN 0x11 <-> 0x123 is 54099", "[rxe-facts]") {
  CHECK(uroce::wire::roce_udp_sport(0, 0x11, 0x123) == 54099);
  // The VM (QPN 0x11) sends to the host peer's QPN 0x123.
  const auto vm = sent_by("hostpeer_rc_pingpong.pcap", kVmA);
  REQUIRE(vm.size() == 10);
  for (auto* r : vm) {
    CHECK(r->dest_qp == 0x123);
    CHECK(r->sport == 54099);
  }
}

TEST_CASE("rxe's UDP source port for UD QPN 0x11 is 57236, whatever the destination", "[rxe-facts]") {
  // A UD QP has no peer: rxe hashes its own QPN only, as uroce's UD QPs do.
  CHECK(uroce::wire::roce_udp_sport_unconnected(0x11) == 57236);
  const auto& pkts = rxe_capture("ud_pingpong.pcap").roce;
  REQUIRE(pkts.size() == 10);
  for (const auto& r : pkts) CHECK(r.sport == 57236);
}

TEST_CASE("AckReq is set exactly on the packets that end an RC request", "[rxe-facts]") {
  for (const auto& c : uroce::test::rxe_captures()) {
    INFO(c.name);
    for (const auto& r : c.roce) {
      if (r.opcode >= 0x20) continue;  // RC opcodes only
      INFO("frame " << r.frame_no << " opcode " << int(r.opcode));
      CHECK(r.ack_req == ends_rc_request(r.opcode));
    }
  }
}

TEST_CASE("UD: AckReq on QP1 MADs but not on ud_pingpong's sends", "[rxe-facts]") {
  for (const auto& r : rxe_capture("ud_pingpong.pcap").roce) {
    CHECK(r.opcode == 0x64);
    CHECK_FALSE(r.ack_req);
    CHECK(r.be32_at(12) == 0x11111111);              // DETH Q_Key
    CHECK((r.be32_at(16) & 0xFFFFFF) == 0x11);       // DETH source QP
    CHECK(payload_len(r, 12 + 8) == 512);
  }
  int mads = 0;
  for (const auto& r : rxe_capture("send_bw_rdmacm.pcap").roce) {
    if (r.dest_qp != 1) continue;
    ++mads;
    CHECK(r.opcode == 0x64);
    CHECK(r.ack_req);
    CHECK(r.be32_at(12) == 0x80010000);
    CHECK(payload_len(r, 12 + 8) == 256);
  }
  CHECK(mads > 0);
}

TEST_CASE("write_bw: WRITE FIRST/MIDDLE/MIDDLE/LAST with RETH length 4096", "[rxe-facts]") {
  const auto req = sent_by("write_bw.pcap", kVmB);
  REQUIRE(opcodes(req) == repeat({0x06, 0x07, 0x07, 0x08}, 5));
  for (size_t i = 0; i < req.size(); ++i) {
    INFO("packet " << i);
    const bool first = req[i]->opcode == 0x06;
    if (first) CHECK(req[i]->be32_at(12 + 12) == 4096);  // RETH DMA length
    CHECK(payload_len(*req[i], first ? 12 + 16 : 12) == 1024);
    if (i > 0) CHECK(req[i]->psn == psn_add(req[i - 1]->psn, 1));
  }
  // One ACK per message, PSN of its last packet, syndrome 0x1f, MSN from 1.
  const auto acks = sent_by("write_bw.pcap", kVmA);
  REQUIRE(opcodes(acks) == repeat({0x11}, 5));
  for (size_t m = 0; m < 5; ++m) {
    INFO("message " << m);
    CHECK(acks[m]->psn == req[4 * m + 3]->psn);
    CHECK((*acks[m]->bytes)[acks[m]->bth + 12] == 0x1F);
    CHECK((acks[m]->be32_at(12) & 0xFFFFFF) == m + 1);
  }
}

TEST_CASE("read_bw: READ REQUEST, then RESPONSE FIRST/MIDDLE/MIDDLE/LAST", "[rxe-facts]") {
  const auto req = sent_by("read_bw.pcap", kVmB);
  REQUIRE(opcodes(req) == repeat({0x0C}, 5));
  for (size_t i = 0; i < req.size(); ++i) {
    CHECK(req[i]->be32_at(12 + 12) == 4096);
    CHECK(payload_len(*req[i], 12 + 16) == 0);
    // Each READ consumes ceil(4096 / 1024) PSNs.
    if (i > 0) CHECK(req[i]->psn == psn_add(req[i - 1]->psn, 4));
  }
  const auto resp = sent_by("read_bw.pcap", kVmA);
  REQUIRE(opcodes(resp) == repeat({0x0D, 0x0E, 0x0E, 0x0F}, 5));
  for (size_t i = 0; i < resp.size(); ++i) {
    INFO("response packet " << i);
    // FIRST and LAST carry an AETH, MIDDLE does not: the UDP length says so.
    const bool middle = resp[i]->opcode == 0x0E;
    CHECK(resp[i]->udp_len == 8 + 12 + (middle ? 0 : 4) + 1024 + 4);
    CHECK(resp[i]->psn == psn_add(req[i / 4]->psn, uint32_t(i % 4)));
  }
}

TEST_CASE("read_lat: READ of 2048 bytes answered by RESPONSE FIRST + LAST", "[rxe-facts]") {
  const auto req = sent_by("read_lat.pcap", kVmB);
  const auto resp = sent_by("read_lat.pcap", kVmA);
  REQUIRE(opcodes(req) == repeat({0x0C}, 5));
  REQUIRE(opcodes(resp) == repeat({0x0D, 0x0F}, 5));
  for (size_t i = 0; i < req.size(); ++i) {
    CHECK(req[i]->be32_at(12 + 12) == 2048);
    if (i > 0) CHECK(req[i]->psn == psn_add(req[i - 1]->psn, 2));
    CHECK(resp[2 * i]->psn == req[i]->psn);
    CHECK(resp[2 * i + 1]->psn == psn_add(req[i]->psn, 1));
    CHECK(resp[2 * i]->udp_len == 8 + 12 + 4 + 1024 + 4);
  }
}

TEST_CASE("atomics: FETCH_ADD(1) / COMPARE_SWAP answered by ATOMIC ACKNOWLEDGE", "[rxe-facts]") {
  for (auto [file, opcode] : {std::pair{"atomic_bw.pcap", 0x14}, std::pair{"atomic_bw_cmp_swap.pcap", 0x13}}) {
    INFO(file);
    const auto req = sent_by(file, kVmB);
    const auto resp = sent_by(file, kVmA);
    REQUIRE(opcodes(req) == repeat({opcode}, 5));
    REQUIRE(opcodes(resp) == repeat({0x12}, 5));
    for (size_t i = 0; i < 5; ++i) {
      CHECK(req[i]->udp_len == 8 + 12 + 28 + 4);
      CHECK(req[i]->be64_at(12) % 8 == 0);  // atomic VA alignment
      if (opcode == 0x14) CHECK(req[i]->be64_at(12 + 12) == 1);  // add = 1
      CHECK(resp[i]->udp_len == 8 + 12 + 4 + 8 + 4);  // AETH + AtomicAckETH
      CHECK(resp[i]->psn == req[i]->psn);
    }
  }
}

TEST_CASE("rc_pingpong: 4096-byte SENDs as FIRST/MIDDLE/MIDDLE/LAST at 1024", "[rxe-facts]") {
  for (uint32_t from : {kVmA, kVmB}) {
    std::vector<const RawRoce*> data;
    for (auto* r : sent_by("rc_pingpong.pcap", from))
      if (r->opcode != 0x11) data.push_back(r);
    REQUIRE(opcodes(data) == repeat({0x00, 0x01, 0x01, 0x02}, 5));
    for (auto* r : data) CHECK(payload_len(*r, 12) == 1024);
  }
}

TEST_CASE("every rxe packet: IPv4 TTL 64, DF, TOS 0, UDP checksum 0", "[rxe-facts]") {
  for (const auto& c : uroce::test::rxe_captures())
    for (const auto& r : c.roce) {
      INFO(c.name << " frame " << r.frame_no);
      const auto& f = *r.bytes;
      CHECK(f[14 + 1] == 0);              // TOS
      CHECK(f[14 + 8] == 64);             // TTL
      CHECK((f[14 + 6] & 0x40) != 0);     // DF
      CHECK(f[r.bth - 2] == 0);           // UDP checksum
      CHECK(f[r.bth - 1] == 0);
    }
}
