// SPDX-License-Identifier: BSD-3-Clause
// An IP address held as the 16-byte IPv6 form, IPv4 as ::ffff:a.b.c.d.
//
// That is exactly the layout of a RoCEv2 GID, so an address, a GID table
// entry and the GID in an out-of-band exchange are the same object.
#pragma once

#include "uroce/api.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

namespace uroce::wire {

struct UROCE_API IpAddr {
  std::array<uint8_t, 16> bytes{};

  bool operator==(const IpAddr&) const = default;

  bool is_v4_mapped() const {
    static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    return std::memcmp(bytes.data(), kPrefix, 12) == 0;
  }
  const uint8_t* v4_bytes() const { return bytes.data() + 12; }

  static IpAddr from_v4(const uint8_t* four) {
    IpAddr a;
    a.bytes[10] = a.bytes[11] = 0xFF;
    std::memcpy(a.bytes.data() + 12, four, 4);
    return a;
  }
  static IpAddr from_v6(const uint8_t* sixteen) {
    IpAddr a;
    std::memcpy(a.bytes.data(), sixteen, 16);
    return a;
  }

  // Dotted quad for v4-mapped addresses, RFC 5952 text otherwise.
  std::string to_string() const;
  // Accepts IPv4 or IPv6 text; false if it is neither.
  static bool parse(const std::string& text, IpAddr& out);
};

}  // namespace uroce::wire
