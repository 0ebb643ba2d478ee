// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/wire/opcode.h"

#include "uroce/wire/bth.h"

namespace uroce::wire {
namespace {

using namespace opf;

struct Entry {
  uint8_t code;
  const char* name;
  Transport transport;
  uint32_t flags;
};

constexpr uint32_t only = first | last;
constexpr uint32_t sendp = send | request | payload;
constexpr uint32_t writep = write | request | payload;
constexpr uint32_t rresp = read | response | payload;

// One line per opcode. Extension headers are listed by flag; their order
// and offsets follow from the Ext enumeration.
constexpr Entry kEntries[] = {
    {op::RC_SEND_FIRST, "RC_SEND_FIRST", Transport::rc, sendp | first},
    {op::RC_SEND_MIDDLE, "RC_SEND_MIDDLE", Transport::rc, sendp | middle},
    {op::RC_SEND_LAST, "RC_SEND_LAST", Transport::rc, sendp | last},
    {op::RC_SEND_LAST_WITH_IMMEDIATE, "RC_SEND_LAST_WITH_IMMEDIATE", Transport::rc, sendp | last | has_imm},
    {op::RC_SEND_ONLY, "RC_SEND_ONLY", Transport::rc, sendp | only},
    {op::RC_SEND_ONLY_WITH_IMMEDIATE, "RC_SEND_ONLY_WITH_IMMEDIATE", Transport::rc, sendp | only | has_imm},
    {op::RC_RDMA_WRITE_FIRST, "RC_RDMA_WRITE_FIRST", Transport::rc, writep | first | has_reth},
    {op::RC_RDMA_WRITE_MIDDLE, "RC_RDMA_WRITE_MIDDLE", Transport::rc, writep | middle},
    {op::RC_RDMA_WRITE_LAST, "RC_RDMA_WRITE_LAST", Transport::rc, writep | last},
    {op::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", Transport::rc,
     writep | last | has_imm},
    {op::RC_RDMA_WRITE_ONLY, "RC_RDMA_WRITE_ONLY", Transport::rc, writep | only | has_reth},
    {op::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", Transport::rc,
     writep | only | has_reth | has_imm},
    {op::RC_RDMA_READ_REQUEST, "RC_RDMA_READ_REQUEST", Transport::rc, read | request | only | has_reth},
    {op::RC_RDMA_READ_RESPONSE_FIRST, "RC_RDMA_READ_RESPONSE_FIRST", Transport::rc, rresp | first | has_aeth},
    {op::RC_RDMA_READ_RESPONSE_MIDDLE, "RC_RDMA_READ_RESPONSE_MIDDLE", Transport::rc, rresp | middle},
    {op::RC_RDMA_READ_RESPONSE_LAST, "RC_RDMA_READ_RESPONSE_LAST", Transport::rc, rresp | last | has_aeth},
    {op::RC_RDMA_READ_RESPONSE_ONLY, "RC_RDMA_READ_RESPONSE_ONLY", Transport::rc, rresp | only | has_aeth},
    {op::RC_ACKNOWLEDGE, "RC_ACKNOWLEDGE", Transport::rc, ack | response | only | has_aeth},
    {op::RC_ATOMIC_ACKNOWLEDGE, "RC_ATOMIC_ACKNOWLEDGE", Transport::rc,
     atomic | response | only | has_aeth | has_atomic_ack},
    {op::RC_COMPARE_SWAP, "RC_COMPARE_SWAP", Transport::rc, atomic | request | only | has_atomic_eth},
    {op::RC_FETCH_ADD, "RC_FETCH_ADD", Transport::rc, atomic | request | only | has_atomic_eth},
    {op::RC_SEND_LAST_WITH_INVALIDATE, "RC_SEND_LAST_WITH_INVALIDATE", Transport::rc, sendp | last | has_ieth},
    {op::RC_SEND_ONLY_WITH_INVALIDATE, "RC_SEND_ONLY_WITH_INVALIDATE", Transport::rc, sendp | only | has_ieth},
    {op::UC_SEND_FIRST, "UC_SEND_FIRST", Transport::uc, sendp | first},
    {op::UC_SEND_MIDDLE, "UC_SEND_MIDDLE", Transport::uc, sendp | middle},
    {op::UC_SEND_LAST, "UC_SEND_LAST", Transport::uc, sendp | last},
    {op::UC_SEND_LAST_WITH_IMMEDIATE, "UC_SEND_LAST_WITH_IMMEDIATE", Transport::uc, sendp | last | has_imm},
    {op::UC_SEND_ONLY, "UC_SEND_ONLY", Transport::uc, sendp | only},
    {op::UC_SEND_ONLY_WITH_IMMEDIATE, "UC_SEND_ONLY_WITH_IMMEDIATE", Transport::uc, sendp | only | has_imm},
    {op::UC_RDMA_WRITE_FIRST, "UC_RDMA_WRITE_FIRST", Transport::uc, writep | first | has_reth},
    {op::UC_RDMA_WRITE_MIDDLE, "UC_RDMA_WRITE_MIDDLE", Transport::uc, writep | middle},
    {op::UC_RDMA_WRITE_LAST, "UC_RDMA_WRITE_LAST", Transport::uc, writep | last},
    {op::UC_RDMA_WRITE_LAST_WITH_IMMEDIATE, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", Transport::uc,
     writep | last | has_imm},
    {op::UC_RDMA_WRITE_ONLY, "UC_RDMA_WRITE_ONLY", Transport::uc, writep | only | has_reth},
    {op::UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", Transport::uc,
     writep | only | has_reth | has_imm},
    {op::UD_SEND_ONLY, "UD_SEND_ONLY", Transport::ud, sendp | only | has_deth},
    {op::UD_SEND_ONLY_WITH_IMMEDIATE, "UD_SEND_ONLY_WITH_IMMEDIATE", Transport::ud,
     sendp | only | has_deth | has_imm},
    {op::CNP, "CNP", Transport::cnp, cnp | has_cnp_reserved},
};

constexpr OpcodeInfo make_info(const Entry& e) {
  OpcodeInfo info;
  info.name = e.name;
  info.flags = e.flags;
  info.transport = e.transport;
  unsigned off = kBthLen;
  for (int i = 0; i < kExtCount; ++i) {
    if (e.flags & (1u << i)) {
      info.ext_offset[i] = uint8_t(off);
      off += kExtLen[i];
    }
  }
  info.header_len = uint8_t(off);
  return info;
}

constexpr std::array<OpcodeInfo, 256> make_table() {
  std::array<OpcodeInfo, 256> t{};
  for (const Entry& e : kEntries) t[e.code] = make_info(e);
  return t;
}

}  // namespace

constinit const std::array<OpcodeInfo, 256> kOpcodeTable = make_table();

}  // namespace uroce::wire
