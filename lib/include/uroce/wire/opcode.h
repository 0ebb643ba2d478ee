// SPDX-License-Identifier: BSD-3-Clause
// The opcode table: for each of the 256 BTH opcodes, which extension
// headers follow the BTH, where, whether a payload may follow, and the
// opcode's place in a message. Parsing and building are driven by this one
// table (like rxe_opcode.c), so adding an opcode is one line in opcode.cpp.
#pragma once

#include "uroce/api.h"

#include <array>
#include <cstdint>

namespace uroce::wire {

// Extension headers in the order IBA puts them after the BTH.
enum class Ext : uint8_t { deth, reth, atomic_eth, aeth, atomic_ack_eth, imm_dt, ieth, cnp_reserved };
inline constexpr int kExtCount = 8;

enum class Transport : uint8_t { none, rc, uc, ud, cnp };

// Bit flags of an opcode. The has_* bits are (1 << Ext).
namespace opf {
inline constexpr uint32_t has_deth = 1u << 0;
inline constexpr uint32_t has_reth = 1u << 1;
inline constexpr uint32_t has_atomic_eth = 1u << 2;
inline constexpr uint32_t has_aeth = 1u << 3;
inline constexpr uint32_t has_atomic_ack = 1u << 4;
inline constexpr uint32_t has_imm = 1u << 5;
inline constexpr uint32_t has_ieth = 1u << 6;
inline constexpr uint32_t has_cnp_reserved = 1u << 7;
inline constexpr uint32_t ext_mask = 0xFF;
inline constexpr uint32_t payload = 1u << 8;  // may carry payload
inline constexpr uint32_t first = 1u << 9;
inline constexpr uint32_t middle = 1u << 10;
inline constexpr uint32_t last = 1u << 11;    // "only" is first | last
inline constexpr uint32_t request = 1u << 12;
inline constexpr uint32_t response = 1u << 13;
inline constexpr uint32_t send = 1u << 14;
inline constexpr uint32_t write = 1u << 15;
inline constexpr uint32_t read = 1u << 16;    // READ request or READ response
inline constexpr uint32_t atomic = 1u << 17;  // CMP_SWAP / FETCH_ADD request or atomic ACK
inline constexpr uint32_t ack = 1u << 18;     // ACKNOWLEDGE
inline constexpr uint32_t cnp = 1u << 19;
}  // namespace opf

// Opcode values (IBA table 38; CNP from RoCEv2 Annex A17).
namespace op {
inline constexpr uint8_t RC_SEND_FIRST = 0x00;
inline constexpr uint8_t RC_SEND_MIDDLE = 0x01;
inline constexpr uint8_t RC_SEND_LAST = 0x02;
inline constexpr uint8_t RC_SEND_LAST_WITH_IMMEDIATE = 0x03;
inline constexpr uint8_t RC_SEND_ONLY = 0x04;
inline constexpr uint8_t RC_SEND_ONLY_WITH_IMMEDIATE = 0x05;
inline constexpr uint8_t RC_RDMA_WRITE_FIRST = 0x06;
inline constexpr uint8_t RC_RDMA_WRITE_MIDDLE = 0x07;
inline constexpr uint8_t RC_RDMA_WRITE_LAST = 0x08;
inline constexpr uint8_t RC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09;
inline constexpr uint8_t RC_RDMA_WRITE_ONLY = 0x0A;
inline constexpr uint8_t RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0B;
inline constexpr uint8_t RC_RDMA_READ_REQUEST = 0x0C;
inline constexpr uint8_t RC_RDMA_READ_RESPONSE_FIRST = 0x0D;
inline constexpr uint8_t RC_RDMA_READ_RESPONSE_MIDDLE = 0x0E;
inline constexpr uint8_t RC_RDMA_READ_RESPONSE_LAST = 0x0F;
inline constexpr uint8_t RC_RDMA_READ_RESPONSE_ONLY = 0x10;
inline constexpr uint8_t RC_ACKNOWLEDGE = 0x11;
inline constexpr uint8_t RC_ATOMIC_ACKNOWLEDGE = 0x12;
inline constexpr uint8_t RC_COMPARE_SWAP = 0x13;
inline constexpr uint8_t RC_FETCH_ADD = 0x14;
inline constexpr uint8_t RC_SEND_LAST_WITH_INVALIDATE = 0x16;
inline constexpr uint8_t RC_SEND_ONLY_WITH_INVALIDATE = 0x17;
inline constexpr uint8_t UC_SEND_FIRST = 0x20;
inline constexpr uint8_t UC_SEND_MIDDLE = 0x21;
inline constexpr uint8_t UC_SEND_LAST = 0x22;
inline constexpr uint8_t UC_SEND_LAST_WITH_IMMEDIATE = 0x23;
inline constexpr uint8_t UC_SEND_ONLY = 0x24;
inline constexpr uint8_t UC_SEND_ONLY_WITH_IMMEDIATE = 0x25;
inline constexpr uint8_t UC_RDMA_WRITE_FIRST = 0x26;
inline constexpr uint8_t UC_RDMA_WRITE_MIDDLE = 0x27;
inline constexpr uint8_t UC_RDMA_WRITE_LAST = 0x28;
inline constexpr uint8_t UC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x29;
inline constexpr uint8_t UC_RDMA_WRITE_ONLY = 0x2A;
inline constexpr uint8_t UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x2B;
inline constexpr uint8_t UD_SEND_ONLY = 0x64;
inline constexpr uint8_t UD_SEND_ONLY_WITH_IMMEDIATE = 0x65;
inline constexpr uint8_t CNP = 0x81;
}  // namespace op

struct OpcodeInfo {
  const char* name = nullptr;  // nullptr: reserved / unsupported opcode
  uint32_t flags = 0;
  Transport transport = Transport::none;
  uint8_t header_len = 0;  // BTH plus all extension headers
  std::array<uint8_t, kExtCount> ext_offset{};  // from the BTH's first byte

  constexpr bool valid() const { return name != nullptr; }
  constexpr bool has(uint32_t f) const { return (flags & f) == f; }
  constexpr bool has_ext(Ext e) const { return flags & (1u << unsigned(e)); }
  constexpr uint8_t offset(Ext e) const { return ext_offset[unsigned(e)]; }
  constexpr bool is_first() const { return (flags & (opf::first | opf::last)) == opf::first; }
  constexpr bool is_middle() const { return flags & opf::middle; }
  constexpr bool is_last() const { return (flags & (opf::first | opf::last)) == opf::last; }
  constexpr bool is_only() const { return has(opf::first | opf::last); }
};

extern UROCE_API const std::array<OpcodeInfo, 256> kOpcodeTable;

inline const OpcodeInfo& opcode_info(uint8_t opcode) { return kOpcodeTable[opcode]; }

// Length of each extension header, indexed by Ext.
inline constexpr std::array<uint8_t, kExtCount> kExtLen = {8, 16, 28, 4, 8, 4, 4, 16};

}  // namespace uroce::wire
