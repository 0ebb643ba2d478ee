// SPDX-License-Identifier: BSD-3-Clause
// IPv4 header (RFC 791).
#pragma once

#include "uroce/api.h"

#include <cstddef>
#include <cstdint>

#include "uroce/wire/header_ref.h"

namespace uroce::wire {

inline constexpr size_t kIpv4MinHeaderLen = 20;
inline constexpr uint8_t kIpProtoUdp = 17;

template <class Byte>
class Ipv4T : public HeaderRef<Byte> {
  using HeaderRef<Byte>::p_;
  static constexpr bool W = HeaderRef<Byte>::kWritable;

 public:
  using HeaderRef<Byte>::HeaderRef;

  uint8_t version() const { return p_[0] >> 4; }
  size_t header_len() const { return size_t(p_[0] & 0x0F) * 4; }
  uint8_t dscp() const { return p_[1] >> 2; }
  uint8_t ecn() const { return p_[1] & 0x03; }
  uint16_t total_len() const { return load_be16(p_ + 2); }
  uint16_t id() const { return load_be16(p_ + 4); }
  bool df() const { return p_[6] & 0x40; }
  bool mf() const { return p_[6] & 0x20; }
  uint16_t frag_offset() const { return load_be16(p_ + 6) & 0x1FFF; }
  uint8_t ttl() const { return p_[8]; }
  uint8_t protocol() const { return p_[9]; }
  uint16_t checksum() const { return load_be16(p_ + 10); }
  const uint8_t* src() const { return p_ + 12; }
  const uint8_t* dst() const { return p_ + 16; }

  // Writes version 4, IHL 5 (no options).
  void set_version_ihl() requires W { p_[0] = 0x45; }
  void set_tos(uint8_t dscp, uint8_t ecn) requires W { p_[1] = uint8_t(dscp << 2 | (ecn & 3)); }
  void set_total_len(uint16_t v) requires W { store_be16(p_ + 2, v); }
  void set_id(uint16_t v) requires W { store_be16(p_ + 4, v); }
  void set_flags_frag(bool df) requires W { store_be16(p_ + 6, df ? 0x4000 : 0); }
  void set_ttl(uint8_t v) requires W { p_[8] = v; }
  void set_protocol(uint8_t v) requires W { p_[9] = v; }
  void set_checksum(uint16_t v) requires W { store_be16(p_ + 10, v); }
  Byte* src_ptr() const { return p_ + 12; }
  Byte* dst_ptr() const { return p_ + 16; }
};

using Ipv4View = Ipv4T<const uint8_t>;
using Ipv4Ref = Ipv4T<uint8_t>;

// RFC 1071 ones'-complement sum of a header, folded and inverted. Over a
// header whose checksum field is correct the result is 0.
UROCE_API uint16_t ipv4_header_checksum(const uint8_t* hdr, size_t len);

}  // namespace uroce::wire
