// SPDX-License-Identifier: BSD-3-Clause
// RFC 1071's last step, shared by the checksum code, the frame builder and
// the header template: a 32-bit sum of 16-bit words, folded to 16 bits
// (twice is enough for any 32-bit sum) and inverted.
#pragma once

#include <cstdint>

namespace uroce::wire::detail {

inline uint16_t fold_complement(uint32_t sum) {
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  return uint16_t(~sum);
}

}  // namespace uroce::wire::detail
