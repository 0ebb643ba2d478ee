// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/wire/parse_error.h"

#include <cstddef>
#include <iterator>

namespace uroce::wire {
namespace {

struct ErrorText {
  const char* code;
  const char* text;
};

// Indexed by ParseError.
constexpr ErrorText kText[] = {
    {"ok", "valid RoCEv2 packet"},
    {"not_roce", "not a RoCEv2 packet (not IP/UDP to port 4791)"},
    {"truncated", "frame ends before the headers it announces"},
    {"ip_version", "bad IP version or IPv4 header length"},
    {"ipv4_checksum", "IPv4 header checksum is wrong"},
    {"ip_fragment", "IP fragment (RoCEv2 is never fragmented)"},
    {"ip_length", "IP length field is inconsistent"},
    {"udp_length", "UDP length does not match the IP payload length"},
    {"udp_checksum", "non-zero UDP checksum is wrong"},
    {"bth_tver", "BTH transport version is not 0"},
    {"bth_opcode", "reserved or unsupported BTH opcode"},
    {"ext_truncated", "packet too short for its opcode's extension headers"},
    {"alignment", "BTH to end of pad is not a multiple of 4 bytes"},
    {"padcount", "bad pad count"},
    {"unexpected_payload", "payload on an opcode that carries none"},
    {"payload_too_long", "payload longer than 4096 bytes"},
    {"icrc", "ICRC mismatch"},
    {"pmtu", "payload length does not fit the path MTU"},
    {"reth_dma_len", "RETH DMA length inconsistent with the payload"},
    {"atomic_align", "atomic target address is not 8-byte aligned"},
    {"aeth_syndrome", "invalid AETH syndrome for this opcode"},
};

}  // namespace

const char* to_string(ParseError e) {
  auto i = size_t(e);
  return i < std::size(kText) ? kText[i].code : "unknown";
}

const char* describe(ParseError e) {
  auto i = size_t(e);
  return i < std::size(kText) ? kText[i].text : "unknown error";
}

}  // namespace uroce::wire
