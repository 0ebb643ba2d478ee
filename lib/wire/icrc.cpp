#include "uroce/wire/icrc.h"

#include <zlib.h>

#include <cstring>

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

uint32_t icrc_masked_headers(const uint8_t* l3, size_t ip_hdr_len, bool ipv6) {
  uint8_t buf[kIcrcMaxMaskedLen];
  const size_t len = ip_hdr_len + kUdpHeaderLen + kBthLen;
  std::memcpy(buf, l3, len);
  if (ipv6) {
    // version stays; traffic class and flow label become ones.
    buf[0] |= 0x0F;
    buf[1] = buf[2] = buf[3] = 0xFF;
    buf[7] = 0xFF;  // hop limit
  } else {
    buf[1] = 0xFF;   // TOS (DSCP + ECN)
    buf[8] = 0xFF;   // TTL
    buf[10] = buf[11] = 0xFF;  // header checksum
  }
  uint8_t* udp = buf + ip_hdr_len;
  udp[6] = udp[7] = 0xFF;          // UDP checksum, even when it is 0
  udp[kUdpHeaderLen + 4] = 0xFF;   // BTH FECN | BECN | resv6
  return crc32(kIcrcSeed, buf, len);
}

}  // namespace uroce::wire
