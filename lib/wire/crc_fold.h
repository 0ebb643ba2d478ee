// CRC-32 (zlib's polynomial) of a short span in one pass of parallel
// carry-less multiplies: the whole span is loaded into 16-byte lanes,
// every lane is folded to the end in the same step, then one reduction.
// ISA-L folds lane after lane, which for the 44..128 bytes of a small
// packet's ICRC input leaves it a chain of dependent multiplies (about 40
// cycles); this takes about 26. The fold is built only where the compiler
// targets AVX-512BW and VPCLMULQDQ (-march); elsewhere kCrcFoldAvailable is
// false, callers use crc32(), and crc32_fold is a masked copy + crc32().
#pragma once

#include <cstddef>
#include <cstdint>

namespace uroce::wire::detail {

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__VPCLMULQDQ__) && defined(__PCLMUL__)
inline constexpr bool kCrcFoldAvailable = true;
#else
inline constexpr bool kCrcFoldAvailable = false;
#endif

inline constexpr size_t kCrcFoldMin = 16;
inline constexpr size_t kCrcFoldMax = 128;

// zlib crc32(crc, p, n) of (p[i] | or_mask[i]) for n in [kCrcFoldMin,
// kCrcFoldMax]. `or_mask` (nullptr: none) has at least n bytes. Reads only
// p[0, n) and or_mask[0, n): the loads that start before them are masked.
uint32_t crc32_fold(uint32_t crc, const uint8_t* p, size_t n, const uint8_t* or_mask);

}  // namespace uroce::wire::detail
