// SPDX-License-Identifier: BSD-3-Clause
// RoCEv2 Invariant CRC.
//
// CRC-32 with the Ethernet polynomial (zlib's crc32, not CRC32C) over
// 8 x 0xFF (the absent LRH) + IP + UDP + BTH with the variant fields set to
// ones + extension headers + payload + pad; stored least-significant byte
// first. The CRC is seeded, so the small masked header copy and the payload
// (which may sit in other mbuf segments) are hashed in place, one after
// the other, without gathering the packet into one buffer.
#pragma once

#include "uroce/api.h"

#include <cstddef>
#include <cstdint>

namespace uroce::wire {

// zlib-compatible CRC-32 continuation: crc32(crc32(0, a), b) == crc32(0, a+b).
// Dispatches to ISA-L's crc32_gzip_refl (VPCLMULQDQ/PCLMULQDQ, chosen at run
// time by ISA-L) when the build found ISA-L, to zlib otherwise.
UROCE_API uint32_t crc32(uint32_t crc, const uint8_t* p, size_t n);

enum class CrcImpl : uint8_t { isal, zlib };
UROCE_API bool crc32_impl_available(CrcImpl impl);
UROCE_API uint32_t crc32_with(CrcImpl impl, uint32_t crc, const uint8_t* p, size_t n);
UROCE_API const char* crc32_impl_name();  // the one crc32() uses

// CRC state after the 8 bytes of 0xFF. (rxe starts from 0xDEBB20E3, the
// same state before zlib's final inversion.)
inline constexpr uint32_t kIcrcSeed = 0x2144DF1C;

// Largest header span icrc_masked_headers() accepts: IPv4 with options,
// UDP, BTH and the longest extension headers.
inline constexpr size_t kIcrcMaxHeaderLen = 60 + 8 + 12 + 28;
// A payload up to this size that sits right after the headers is hashed in
// the same call: a CRC call of a few bytes costs as much as one of 100.
inline constexpr size_t kIcrcSmallBody = 64;
inline constexpr size_t kIcrcMaxMaskedLen = kIcrcMaxHeaderLen + kIcrcSmallBody;

// CRC state after LRH stand-in + IP + UDP + BTH (+ `ext_len` bytes of
// extension headers), with TOS/TTL/IPv4 checksum (or IPv6 TC/flow
// label/hop limit), UDP checksum and BTH byte 4 masked. `l3` points at the
// IP header, `ip_hdr_len` is 20..60 or 40 for IPv6; UDP, BTH and the
// extension headers follow contiguously. Hashing the extension headers in
// the same call saves a short CRC call, which is slow for a few bytes; for
// the same reason `ext_len` may also take in up to kIcrcSmallBody bytes of
// payload that follow the extension headers in memory (never masked).
UROCE_API uint32_t icrc_masked_headers(const uint8_t* l3, size_t ip_hdr_len, bool ipv6, size_t ext_len = 0);

}  // namespace uroce::wire
