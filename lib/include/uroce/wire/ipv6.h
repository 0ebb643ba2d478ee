// SPDX-License-Identifier: BSD-3-Clause
// IPv6 fixed header (RFC 8200). Extension headers are not used by RoCEv2.
#pragma once

#include <cstddef>
#include <cstdint>

#include "uroce/wire/header_ref.h"

namespace uroce::wire {

inline constexpr size_t kIpv6HeaderLen = 40;

template <class Byte>
class Ipv6T : public HeaderRef<Byte> {
  using HeaderRef<Byte>::p_;
  static constexpr bool W = HeaderRef<Byte>::kWritable;

 public:
  using HeaderRef<Byte>::HeaderRef;

  uint8_t version() const { return p_[0] >> 4; }
  uint8_t traffic_class() const { return uint8_t((load_be16(p_) >> 4) & 0xFF); }
  uint8_t dscp() const { return traffic_class() >> 2; }
  uint8_t ecn() const { return traffic_class() & 0x03; }
  uint32_t flow_label() const { return load_be32(p_) & 0xFFFFF; }
  uint16_t payload_len() const { return load_be16(p_ + 4); }
  uint8_t next_header() const { return p_[6]; }
  uint8_t hop_limit() const { return p_[7]; }
  const uint8_t* src() const { return p_ + 8; }
  const uint8_t* dst() const { return p_ + 24; }

  void set_vtc_flow(uint8_t dscp, uint8_t ecn, uint32_t flow_label) requires W {
    uint32_t tc = uint32_t(dscp) << 2 | (ecn & 3);
    store_be32(p_, 6u << 28 | tc << 20 | (flow_label & 0xFFFFF));
  }
  void set_payload_len(uint16_t v) requires W { store_be16(p_ + 4, v); }
  void set_next_header(uint8_t v) requires W { p_[6] = v; }
  void set_hop_limit(uint8_t v) requires W { p_[7] = v; }
  Byte* src_ptr() const { return p_ + 8; }
  Byte* dst_ptr() const { return p_ + 24; }
};

using Ipv6View = Ipv6T<const uint8_t>;
using Ipv6Ref = Ipv6T<uint8_t>;

}  // namespace uroce::wire
