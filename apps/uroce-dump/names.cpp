// SPDX-License-Identifier: BSD-3-Clause
#include <cstdio>
#include <iterator>

#include "dump.h"

namespace uroce::dump {

const char* aeth_type_name(uint8_t syndrome) {
  switch (wire::aeth_type(syndrome)) {
    case wire::AethType::ack: return "ACK";
    case wire::AethType::rnr_nak: return "RNR_NAK";
    case wire::AethType::nak: return "NAK";
    case wire::AethType::reserved: break;
  }
  return "RESERVED";
}

const char* nak_code_name(uint8_t code) {
  // Indexed by wire::NakCode (IBA table 45).
  static constexpr const char* kNames[] = {"PSN_SEQUENCE_ERROR", "INVALID_REQUEST", "REMOTE_ACCESS_ERROR",
                                           "REMOTE_OPERATIONAL_ERROR", "INVALID_RD_REQUEST"};
  return code < std::size(kNames) ? kNames[code] : "RESERVED";
}

std::string opcode_name(uint8_t opcode) {
  const wire::OpcodeInfo& info = wire::opcode_info(opcode);
  if (info.valid()) return info.name;
  char buf[16];
  std::snprintf(buf, sizeof buf, "UNKNOWN_0x%02x", opcode);
  return buf;
}

}  // namespace uroce::dump
