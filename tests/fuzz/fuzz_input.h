// SPDX-License-Identifier: BSD-3-Clause
// How a fuzz input is laid out: two control bytes, then the frame.
//
//   byte 0   first cut: offset from the frame start (clamped to its length)
//   byte 1   bit 7: three segments, cut 2 = (bits 0..6) bytes before the end
//            else bit 6: the single cut is (bits 0..5) bytes before the end
//                        instead of at byte 0's offset
//
// Cuts near the start split the headers (parse_mbuf then gathers them into
// its scratch); cuts near the end split the payload, pad and ICRC.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace uroce::fuzz {

inline constexpr size_t kControlBytes = 2;

struct FuzzInput {
  std::span<const uint8_t> frame;
  std::vector<uint32_t> cuts;
};

inline FuzzInput split_input(std::span<const uint8_t> data) {
  FuzzInput in;
  if (data.size() < kControlBytes) return in;
  const uint8_t c0 = data[0], c1 = data[1];
  in.frame = data.subspan(kControlBytes);
  const uint32_t len = uint32_t(in.frame.size());
  const auto from_end = [len](uint32_t back) { return len - std::min(back, len); };
  const uint32_t first = std::min<uint32_t>(c0, len);
  if (c1 & 0x80) {
    in.cuts = {first, std::max(first, from_end(c1 & 0x7F))};
  } else {
    in.cuts = {(c1 & 0x40) ? from_end(c1 & 0x3F) : first};
  }
  return in;
}

}  // namespace uroce::fuzz
