// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/wire/icrc.h"

#include <zlib.h>

#include <cstring>

#include "crc_fold.h"
#include "uroce/wire/bth.h"
#include "uroce/wire/udp.h"

#if UROCE_HAVE_ISAL
#include <isa-l/crc.h>
#endif

namespace uroce::wire {

bool crc32_impl_available(CrcImpl impl) {
  return impl == CrcImpl::zlib || (impl == CrcImpl::isal && UROCE_HAVE_ISAL);
}

uint32_t crc32_with(CrcImpl impl, uint32_t crc, const uint8_t* p, size_t n) {
#if UROCE_HAVE_ISAL
  if (impl == CrcImpl::isal) return crc32_gzip_refl(crc, p, n);
#endif
  (void)impl;
  // zlib takes uInt lengths; chunk so a >4 GiB span stays correct.
  while (n > 0) {
    uInt chunk = n > (1u << 30) ? (1u << 30) : uInt(n);
    crc = uint32_t(::crc32(crc, p, chunk));
    p += chunk;
    n -= chunk;
  }
  return crc;
}

uint32_t crc32(uint32_t crc, const uint8_t* p, size_t n) {
#if UROCE_HAVE_ISAL
  return crc32_gzip_refl(crc, p, n);
#else
  return crc32_with(CrcImpl::zlib, crc, p, n);
#endif
}

const char* crc32_impl_name() { return UROCE_HAVE_ISAL ? "isa-l crc32_gzip_refl" : "zlib crc32"; }

namespace {

// OR-masks for the common layouts (IPv4 without options, IPv6): masking
// with one vectorisable OR instead of byte stores avoids a store-forwarding
// stall when the CRC then reads the copy with wide loads.
struct MaskTable {
  alignas(64) uint8_t bytes[kIcrcMaxMaskedLen];
};

constexpr MaskTable make_mask(bool ipv6) {
  MaskTable m{};
  const size_t ip = ipv6 ? 40 : 20;
  if (ipv6) {
    m.bytes[0] = 0x0F;  // traffic class (low nibble of byte 0) ...
    m.bytes[1] = m.bytes[2] = m.bytes[3] = 0xFF;  // ... and flow label
    m.bytes[7] = 0xFF;  // hop limit
  } else {
    m.bytes[1] = 0xFF;   // TOS (DSCP + ECN)
    m.bytes[8] = 0xFF;   // TTL
    m.bytes[10] = m.bytes[11] = 0xFF;  // header checksum
  }
  m.bytes[ip + 6] = m.bytes[ip + 7] = 0xFF;  // UDP checksum, even when 0
  m.bytes[ip + kUdpHeaderLen + 4] = 0xFF;    // BTH FECN | BECN | resv6
  return m;
}

constexpr MaskTable kMaskV4 = make_mask(false);
constexpr MaskTable kMaskV6 = make_mask(true);

// IPv4 with options: the same fields, at offsets that depend on the IHL.
void mask_bytes(uint8_t* buf, size_t ip_hdr_len) {
  buf[1] = 0xFF;
  buf[8] = 0xFF;
  buf[10] = buf[11] = 0xFF;
  uint8_t* udp = buf + ip_hdr_len;
  udp[6] = udp[7] = 0xFF;
  udp[kUdpHeaderLen + 4] = 0xFF;
}

}  // namespace

uint32_t icrc_masked_headers(const uint8_t* l3, size_t ip_hdr_len, bool ipv6, size_t ext_len) {
  alignas(64) uint8_t buf[kIcrcMaxMaskedLen];
  const size_t len = ip_hdr_len + kUdpHeaderLen + kBthLen + ext_len;
  if (ipv6 || ip_hdr_len == 20) {
    const uint8_t* mask = ipv6 ? kMaskV6.bytes : kMaskV4.bytes;
    if (len <= detail::kCrcFoldMax) return detail::crc32_fold(kIcrcSeed, l3, len, mask);
    for (size_t i = 0; i < len; ++i) buf[i] = l3[i] | mask[i];
  } else {
    std::memcpy(buf, l3, len);
    mask_bytes(buf, ip_hdr_len);
  }
  return crc32(kIcrcSeed, buf, len);
}

}  // namespace uroce::wire
