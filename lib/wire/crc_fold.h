// SPDX-License-Identifier: BSD-3-Clause
// CRC-32 (zlib's polynomial) of a short span in one pass of parallel
// carry-less multiplies: the whole span is loaded into 16-byte lanes,
// every lane is folded to the end in the same step, then one reduction.
// ISA-L folds lane after lane, which for the 44..128 bytes of a small
// packet's ICRC input leaves it a chain of dependent multiplies (about 40
// cycles); this takes about 26.
//
// The fold needs AVX-512BW and VPCLMULQDQ, which the portable build does
// not assume: it is compiled for them with a function target attribute and
// chosen at load time when the CPU (and the OS, for the AVX-512 state) has
// them. The other implementation, `portable`, is a masked copy + crc32().
// The choice is one enum in memory, read by crc32_fold() on each call: a
// well-predicted branch, no indirect call. UROCE_CRC_IMPL=portable|avx512
// in the environment overrides the choice (docs/dependencies.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace uroce::wire::detail {

inline constexpr size_t kCrcFoldMin = 16;
inline constexpr size_t kCrcFoldMax = 128;

// portable is 0: a static initialiser that runs before the choice is made
// (zero-initialised) gets the path every x86-64 CPU runs.
enum class CrcFoldImpl : uint8_t { portable = 0, avx512 = 1 };
inline constexpr CrcFoldImpl kCrcFoldImpls[] = {CrcFoldImpl::portable, CrcFoldImpl::avx512};

const char* crc_fold_impl_name(CrcFoldImpl impl);
// Whether this build has the implementation and this CPU can run it.
bool crc_fold_supported(CrcFoldImpl impl);

// The choice made at load time for `env` (UROCE_CRC_IMPL's value, nullptr
// when unset): the named implementation when supported, else the fastest
// supported one. `note` (may be null) gets why a named one was not taken.
CrcFoldImpl choose_crc_fold_impl(const char* env, const char** note);

// The implementation crc32_fold() uses, and a way to change it (tests,
// benchmarks). set_crc_fold_impl() refuses an unsupported one; it is not
// meant to race with packet processing.
CrcFoldImpl crc_fold_impl();
bool set_crc_fold_impl(CrcFoldImpl impl);

// zlib crc32(crc, p, n) of (p[i] | or_mask[i]) for n in [kCrcFoldMin,
// kCrcFoldMax]. `or_mask` (nullptr: none) has at least n bytes. Reads only
// p[0, n) and or_mask[0, n): the loads that start before them are masked.
uint32_t crc32_fold(uint32_t crc, const uint8_t* p, size_t n, const uint8_t* or_mask);

// The same with a given implementation, which must be supported.
uint32_t crc32_fold_with(CrcFoldImpl impl, uint32_t crc, const uint8_t* p, size_t n, const uint8_t* or_mask);

}  // namespace uroce::wire::detail
