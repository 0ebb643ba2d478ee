// SPDX-License-Identifier: BSD-3-Clause
// Ethernet II header with an optional 802.1Q tag.
#pragma once

#include "uroce/api.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "uroce/wire/header_ref.h"

namespace uroce::wire {

inline constexpr size_t kEthHeaderLen = 14;
inline constexpr size_t kVlanTagLen = 4;
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeArp = 0x0806;

struct UROCE_API MacAddr {
  std::array<uint8_t, 6> bytes{};

  bool operator==(const MacAddr&) const = default;
  std::string to_string() const;
  // Parses "aa:bb:cc:dd:ee:ff"; false on any other form.
  static bool parse(const std::string& text, MacAddr& out);
};

template <class Byte>
class EthT : public HeaderRef<Byte> {
  using HeaderRef<Byte>::p_;

 public:
  using HeaderRef<Byte>::HeaderRef;

  MacAddr dst() const { return mac_at(0); }
  MacAddr src() const { return mac_at(6); }
  // The type field right after the addresses (0x8100 when tagged).
  uint16_t ethertype() const { return load_be16(p_ + 12); }

  void set_dst(const MacAddr& m) requires HeaderRef<Byte>::kWritable { std::memcpy(p_, m.bytes.data(), 6); }
  void set_src(const MacAddr& m) requires HeaderRef<Byte>::kWritable { std::memcpy(p_ + 6, m.bytes.data(), 6); }
  void set_ethertype(uint16_t v) requires HeaderRef<Byte>::kWritable { store_be16(p_ + 12, v); }

 private:
  MacAddr mac_at(size_t off) const {
    MacAddr m;
    std::memcpy(m.bytes.data(), p_ + off, 6);
    return m;
  }
};

// The 4 bytes that follow the 0x8100 type: TCI, then the inner type.
template <class Byte>
class VlanT : public HeaderRef<Byte> {
  using HeaderRef<Byte>::p_;

 public:
  using HeaderRef<Byte>::HeaderRef;

  uint16_t tci() const { return load_be16(p_); }
  uint8_t pcp() const { return uint8_t(p_[0] >> 5); }
  uint16_t vid() const { return tci() & 0x0FFF; }
  uint16_t inner_ethertype() const { return load_be16(p_ + 2); }

  void set_tci(uint16_t v) requires HeaderRef<Byte>::kWritable { store_be16(p_, v); }
  void set_inner_ethertype(uint16_t v) requires HeaderRef<Byte>::kWritable { store_be16(p_ + 2, v); }
};

using EthView = EthT<const uint8_t>;
using EthRef = EthT<uint8_t>;
using VlanView = VlanT<const uint8_t>;
using VlanRef = VlanT<uint8_t>;

}  // namespace uroce::wire
