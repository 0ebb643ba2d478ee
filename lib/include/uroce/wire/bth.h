// SPDX-License-Identifier: BSD-3-Clause
// InfiniBand Base Transport Header (IBA 9.2), 12 bytes.
//
//   byte 0   opcode
//   byte 1   SE | MigReq | PadCnt(2) | TVer(4)
//   2..3     P_Key
//   byte 4   FECN | BECN | resv6        (masked in the ICRC)
//   5..7     DestQP
//   byte 8   AckReq | resv7
//   9..11    PSN
#pragma once

#include <cstddef>
#include <cstdint>

#include "uroce/wire/header_ref.h"

namespace uroce::wire {

inline constexpr size_t kBthLen = 12;
inline constexpr uint16_t kDefaultPkey = 0xFFFF;
inline constexpr uint32_t kQpnMask = 0xFFFFFF;
inline constexpr uint32_t kPsnMask = 0xFFFFFF;

template <class Byte>
class BthT : public HeaderRef<Byte> {
  using HeaderRef<Byte>::p_;
  static constexpr bool W = HeaderRef<Byte>::kWritable;

 public:
  using HeaderRef<Byte>::HeaderRef;

  uint8_t opcode() const { return p_[0]; }
  bool se() const { return p_[1] & 0x80; }
  bool migreq() const { return p_[1] & 0x40; }
  uint8_t pad_count() const { return (p_[1] >> 4) & 0x03; }
  uint8_t tver() const { return p_[1] & 0x0F; }
  uint16_t pkey() const { return load_be16(p_ + 2); }
  bool fecn() const { return p_[4] & 0x80; }
  bool becn() const { return p_[4] & 0x40; }
  uint8_t resv6() const { return p_[4] & 0x3F; }
  uint32_t dest_qp() const { return load_be24(p_ + 5); }
  bool ack_req() const { return p_[8] & 0x80; }
  uint8_t resv7() const { return p_[8] & 0x7F; }
  uint32_t psn() const { return load_be24(p_ + 9); }

  void set_opcode(uint8_t v) requires W { p_[0] = v; }
  void set_flags(bool se, bool migreq, uint8_t pad, uint8_t tver) requires W {
    p_[1] = uint8_t((se ? 0x80 : 0) | (migreq ? 0x40 : 0) | (pad & 3) << 4 | (tver & 0x0F));
  }
  void set_pkey(uint16_t v) requires W { store_be16(p_ + 2, v); }
  void set_congestion(bool fecn, bool becn, uint8_t resv6) requires W {
    p_[4] = uint8_t((fecn ? 0x80 : 0) | (becn ? 0x40 : 0) | (resv6 & 0x3F));
  }
  void set_dest_qp(uint32_t v) requires W { store_be24(p_ + 5, v); }
  void set_ack_req_psn(bool ack_req, uint8_t resv7, uint32_t psn) requires W {
    p_[8] = uint8_t((ack_req ? 0x80 : 0) | (resv7 & 0x7F));
    store_be24(p_ + 9, psn);
  }
};

using BthView = BthT<const uint8_t>;
using BthRef = BthT<uint8_t>;

}  // namespace uroce::wire
