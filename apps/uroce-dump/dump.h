// SPDX-License-Identifier: BSD-3-Clause
// uroce-dump: the types shared by the capture loop and the output formats.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "uroce/wire/parser.h"

namespace uroce::dump {

// Where a frame's headers start, as far as its captured bytes reach; 0 means
// absent. The parser stops at the first defect and leaves later offsets
// unset, yet the headers of a broken packet are what a user wants to see.
struct Layers {
  uint16_t ethertype = 0;  // the inner one of a VLAN-tagged frame
  bool vlan = false;
  uint16_t l3 = 0;   // IPv4 or IPv6 header
  bool ipv6 = false;
  uint8_t proto = 0;  // IPv4 protocol / IPv6 next header, when l3 is set
  uint16_t l4 = 0;    // UDP header (not in a non-first IPv4 fragment)
  uint16_t dport = 0;
  uint16_t bth = 0;   // only for UDP port 4791, when all 12 BTH bytes were captured
};

Layers locate_layers(std::span<const uint8_t> frame);

// One frame and the verdict on it.
struct Record {
  uint64_t frame = 0;  // 1-based, as Wireshark numbers frames
  std::span<const uint8_t> bytes;
  wire::ParseError error = wire::ParseError::not_roce;
  bool roce = false;          // counted as a RoCEv2 packet
  bool parsed = false;        // every header was parsed, so `view` is complete
  bool icrc_checked = false;  // view.icrc_calc is meaningful
  wire::PacketView view;
  Layers layers;
};

// Parses (ICRC and non-zero UDP checksums verified) and, if that passes,
// runs check_semantics() with `pmtu` (0: no MTU check).
Record examine(uint64_t frame, std::span<const uint8_t> bytes, uint32_t pmtu);

struct Summary {
  std::string file;
  uint32_t pmtu = 0;
  uint64_t frames = 0;
  uint64_t roce = 0;
  uint64_t valid = 0;
  uint64_t invalid = 0;
  uint64_t other = 0;
  std::map<wire::ParseError, uint64_t> errors;  // per error, over invalid RoCE packets

  void add(const Record& r);
};

class Formatter {
 public:
  virtual ~Formatter() = default;
  virtual void packet(const Record& r) = 0;
  virtual void other(const Record& r) = 0;  // a non-RoCE frame, printed only with --all
  virtual void summary(const Summary& s) = 0;
};

std::unique_ptr<Formatter> make_text_formatter();
std::unique_ptr<Formatter> make_json_formatter();

// Names shared by both formats (the spellings of IBA and of the oracle).
const char* aeth_type_name(uint8_t syndrome);  // ACK, RNR_NAK, NAK, RESERVED
const char* nak_code_name(uint8_t code);       // e.g. PSN_SEQUENCE_ERROR; RESERVED if unknown
std::string opcode_name(uint8_t opcode);       // UNKNOWN_0xNN for reserved opcodes

}  // namespace uroce::dump
