// SPDX-License-Identifier: BSD-3-Clause
// Why a frame was not accepted as a valid RoCEv2 packet.
//
// The short names match the error codes of the independent packet oracle
// (shared/tools/oracle), so a test can compare verdicts one to one.
#pragma once

#include "uroce/api.h"

#include <cstdint>

namespace uroce::wire {

enum class ParseError : uint8_t {
  ok = 0,
  // Not for us: the frame is not IP/UDP to port 4791. Not an error for a
  // port that also carries ARP and other traffic.
  not_roce,
  truncated,           // the frame ends before a header it announces
  ip_version,          // IPv4 header with a version other than 4, or bad IHL
  ipv4_checksum,
  ip_fragment,         // RoCEv2 is never fragmented
  ip_length,           // IP length fields disagree with the frame
  udp_length,          // UDP length disagrees with the IP payload length
  udp_checksum,        // non-zero UDP checksum that is wrong
  bth_tver,            // BTH transport version is not 0
  bth_opcode,          // reserved or unsupported opcode
  ext_truncated,       // too short for the extension headers of its opcode
  alignment,           // BTH .. pad is not a multiple of 4 bytes
  padcount,            // pad count larger than what follows, or pad on FIRST/MIDDLE
  unexpected_payload,  // payload on an opcode that carries none (or a CNP)
  payload_too_long,    // more than 4096 payload bytes
  icrc,                // ICRC mismatch
  // Checks that need the opcode's meaning (check_semantics()).
  pmtu,                // FIRST/MIDDLE payload != PMTU, or LAST/ONLY > PMTU
  reth_dma_len,        // RETH length inconsistent with a WRITE's payload
  atomic_align,        // atomic VA not 8-byte aligned
  aeth_syndrome,       // reserved syndrome, unknown NAK code, or NAK where an ACK must be
};

// Short code, e.g. "icrc".
UROCE_API const char* to_string(ParseError e);
// One-line explanation for users, e.g. "ICRC mismatch".
UROCE_API const char* describe(ParseError e);

}  // namespace uroce::wire
