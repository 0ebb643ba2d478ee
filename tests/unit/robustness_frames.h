// SPDX-License-Identifier: BSD-3-Clause
// A handful of valid frames that together cover IPv4/IPv6, VLAN, pad
// counts 0..3, empty and large payloads and the longest extension headers.
#pragma once

#include <string>
#include <vector>

#include "test_support.h"
#include "uroce/wire/opcode.h"

namespace uroce::test {

struct NamedFrame {
  std::string name;
  std::vector<uint8_t> bytes;
};

inline std::vector<NamedFrame> robustness_frames() {
  using namespace wire;
  struct Spec {
    const char* name;
    uint8_t opcode;
    bool ipv6;
    bool vlan;
    uint32_t len;
  };
  const Spec specs[] = {
      {"v4 send only 33", op::RC_SEND_ONLY, false, false, 33},
      {"v6 vlan write only imm 6", op::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, true, true, 6},
      {"v4 vlan ack", op::RC_ACKNOWLEDGE, false, true, 0},
      {"v6 atomic ack", op::RC_ATOMIC_ACKNOWLEDGE, true, false, 0},
      {"v4 cmp swap", op::RC_COMPARE_SWAP, false, false, 0},
      {"v6 ud send imm 1", op::UD_SEND_ONLY_WITH_IMMEDIATE, true, false, 1},
      {"v4 cnp", op::CNP, false, false, 0},
      {"v4 read resp middle 1024", op::RC_RDMA_READ_RESPONSE_MIDDLE, false, false, 1024},
      {"v6 send last inv 1023", op::RC_SEND_LAST_WITH_INVALIDATE, true, true, 1023},
  };
  std::vector<NamedFrame> out;
  for (const Spec& s : specs) {
    const auto payload = pattern_bytes(s.len, s.opcode);
    out.push_back({s.name, build_or_throw(sample_fields(s.opcode, s.ipv6, s.vlan, s.len), payload)});
  }
  return out;
}

}  // namespace uroce::test
