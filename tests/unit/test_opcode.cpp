// SPDX-License-Identifier: BSD-3-Clause
// The opcode table against IBA table 38 (and RoCEv2 Annex A17 for CNP):
// which opcodes exist, which extension headers each carries, in what order,
// and so how long its transport headers are.
#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "catch_printers.h"
#include "test_support.h"
#include "uroce/wire/opcode.h"

using namespace uroce::wire;

namespace {

// Extension header sizes from the IBA (shared/reference.md); the CNP's 16
// reserved bytes from Annex A17.
size_t iba_len(Ext e) {
  switch (e) {
    case Ext::deth: return 8;
    case Ext::reth: return 16;
    case Ext::atomic_eth: return 28;
    case Ext::aeth: return 4;
    case Ext::atomic_ack_eth: return 8;
    case Ext::imm_dt: return 4;
    case Ext::ieth: return 4;
    case Ext::cnp_reserved: return 16;
  }
  return 0;
}

enum class Pos { first, middle, last, only, unspecified };

struct Expected {
  uint8_t code;
  std::string name;
  Transport transport;
  std::vector<Ext> exts;  // in wire order
  bool payload;
  Pos pos;
};

using E = Ext;
using P = Pos;
using T = Transport;

// The RC and UC SEND/WRITE rows are the same but for the transport.
std::vector<Expected> send_write_rows(uint8_t base, T t, const std::string& prefix) {
  struct Row {
    uint8_t off;
    std::string name;
    std::vector<Ext> exts;
    Pos pos;
  };
  const std::vector<Row> rows = {
      {0x0, "SEND_FIRST", {}, P::first},
      {0x1, "SEND_MIDDLE", {}, P::middle},
      {0x2, "SEND_LAST", {}, P::last},
      {0x3, "SEND_LAST_WITH_IMMEDIATE", {E::imm_dt}, P::last},
      {0x4, "SEND_ONLY", {}, P::only},
      {0x5, "SEND_ONLY_WITH_IMMEDIATE", {E::imm_dt}, P::only},
      {0x6, "RDMA_WRITE_FIRST", {E::reth}, P::first},
      {0x7, "RDMA_WRITE_MIDDLE", {}, P::middle},
      {0x8, "RDMA_WRITE_LAST", {}, P::last},
      {0x9, "RDMA_WRITE_LAST_WITH_IMMEDIATE", {E::imm_dt}, P::last},
      {0xA, "RDMA_WRITE_ONLY", {E::reth}, P::only},
      {0xB, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", {E::reth, E::imm_dt}, P::only},
  };
  std::vector<Expected> out;
  for (const Row& r : rows) out.push_back({uint8_t(base + r.off), prefix + r.name, t, r.exts, true, r.pos});
  return out;
}

std::vector<Expected> expected_table() {
  std::vector<Expected> t = send_write_rows(0x00, T::rc, "RC_");
  const std::vector<Expected> rc_rest = {
      {0x0C, "RC_RDMA_READ_REQUEST", T::rc, {E::reth}, false, P::only},
      {0x0D, "RC_RDMA_READ_RESPONSE_FIRST", T::rc, {E::aeth}, true, P::first},
      {0x0E, "RC_RDMA_READ_RESPONSE_MIDDLE", T::rc, {}, true, P::middle},
      {0x0F, "RC_RDMA_READ_RESPONSE_LAST", T::rc, {E::aeth}, true, P::last},
      {0x10, "RC_RDMA_READ_RESPONSE_ONLY", T::rc, {E::aeth}, true, P::only},
      {0x11, "RC_ACKNOWLEDGE", T::rc, {E::aeth}, false, P::only},
      {0x12, "RC_ATOMIC_ACKNOWLEDGE", T::rc, {E::aeth, E::atomic_ack_eth}, false, P::only},
      {0x13, "RC_COMPARE_SWAP", T::rc, {E::atomic_eth}, false, P::only},
      {0x14, "RC_FETCH_ADD", T::rc, {E::atomic_eth}, false, P::only},
      {0x16, "RC_SEND_LAST_WITH_INVALIDATE", T::rc, {E::ieth}, true, P::last},
      {0x17, "RC_SEND_ONLY_WITH_INVALIDATE", T::rc, {E::ieth}, true, P::only},
      {0x64, "UD_SEND_ONLY", T::ud, {E::deth}, true, P::only},
      {0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", T::ud, {E::deth, E::imm_dt}, true, P::only},
      {0x81, "CNP", T::cnp, {E::cnp_reserved}, false, P::unspecified},
  };
  t.insert(t.end(), rc_rest.begin(), rc_rest.end());
  const std::vector<Expected> uc = send_write_rows(0x20, T::uc, "UC_");
  t.insert(t.end(), uc.begin(), uc.end());
  return t;
}

void check_position(const OpcodeInfo& info, Pos pos) {
  switch (pos) {
    case Pos::first: CHECK((info.is_first() && !info.is_middle() && !info.is_last() && !info.is_only())); break;
    case Pos::middle: CHECK((info.is_middle() && !info.is_first() && !info.is_last() && !info.is_only())); break;
    case Pos::last: CHECK((info.is_last() && !info.is_first() && !info.is_middle() && !info.is_only())); break;
    case Pos::only: CHECK((info.is_only() && !info.is_first() && !info.is_middle() && !info.is_last())); break;
    case Pos::unspecified: break;
  }
}

void check_entry(const Expected& x) {
  INFO("opcode " << int(x.code) << " " << x.name);
  const OpcodeInfo& info = opcode_info(x.code);
  REQUIRE(info.valid());
  CHECK(info.name == x.name);
  CHECK(info.transport == x.transport);
  CHECK(info.has(opf::payload) == x.payload);
  check_position(info, x.pos);
  size_t off = 12;  // extension headers follow the 12-byte BTH back to back
  for (Ext e : x.exts) {
    CHECK(info.has_ext(e));
    CHECK(info.offset(e) == off);
    off += iba_len(e);
  }
  CHECK(info.header_len == off);
  for (int i = 0; i < kExtCount; ++i) {
    const bool listed = std::find(x.exts.begin(), x.exts.end(), Ext(i)) != x.exts.end();
    CHECK(info.has_ext(Ext(i)) == listed);
  }
}

}  // namespace

TEST_CASE("extension header lengths are the IBA sizes", "[opcode]") {
  for (int i = 0; i < kExtCount; ++i) {
    INFO("ext " << i);
    CHECK(kExtLen[i] == iba_len(Ext(i)));
  }
}

TEST_CASE("exactly the IBA RC/UC/UD opcodes and CNP are valid", "[opcode]") {
  std::set<int> expected;
  for (int c = 0x00; c <= 0x14; ++c) expected.insert(c);
  expected.insert({0x16, 0x17});
  for (int c = 0x20; c <= 0x2B; ++c) expected.insert(c);
  expected.insert({0x64, 0x65, 0x81});
  REQUIRE(expected.size() == 38);
  for (int c = 0; c < 256; ++c) {
    INFO("opcode " << c);
    CHECK(kOpcodeTable[c].valid() == (expected.count(c) == 1));
  }
}

TEST_CASE("every opcode carries the IBA extension headers in order", "[opcode]") {
  const auto table = expected_table();
  REQUIRE(table.size() == 38);
  for (const Expected& x : table) check_entry(x);
}

TEST_CASE("header lengths of opcodes with several extension headers", "[opcode]") {
  CHECK(opcode_info(op::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE).header_len == 12 + 16 + 4);
  CHECK(opcode_info(op::RC_ATOMIC_ACKNOWLEDGE).header_len == 12 + 4 + 8);
  CHECK(opcode_info(op::CNP).header_len == 12 + 16);
  CHECK(opcode_info(op::UD_SEND_ONLY_WITH_IMMEDIATE).header_len == 12 + 8 + 4);
  CHECK(opcode_info(op::RC_COMPARE_SWAP).header_len == 12 + 28);
  CHECK(opcode_info(op::UD_SEND_ONLY_WITH_IMMEDIATE).offset(Ext::imm_dt) == 12 + 8);
  CHECK(opcode_info(op::RC_ATOMIC_ACKNOWLEDGE).offset(Ext::atomic_ack_eth) == 12 + 4);
}

TEST_CASE("opcode names match the oracle's names in the synthetic vectors", "[opcode]") {
  std::ifstream in(uroce::test::data_path("synthetic/roce_vectors.json"));
  REQUIRE(in.good());
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::map<int, std::string> seen;
  for (const auto& v : doc.at("vectors")) {
    const int code = v.at("bth").at("opcode").get<int>();
    const std::string name = v.at("bth").at("opcode_name").get<std::string>();
    INFO(v.at("name").get<std::string>());
    REQUIRE(opcode_info(uint8_t(code)).valid());
    CHECK(std::string(opcode_info(uint8_t(code)).name) == name);
    seen[code] = name;
  }
  // The vectors must exercise a good part of the table for this to mean much.
  CHECK(seen.size() >= 20);
}
