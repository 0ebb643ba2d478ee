// SPDX-License-Identifier: BSD-3-Clause
#include "cm/cma_header.h"

#include <algorithm>

#include "uroce/wire/byte_order.h"

namespace uroce::cm {
namespace {

void put_addr(uint8_t* at, const wire::IpAddr& a) {
  std::fill(at, at + 16, 0);
  if (a.is_v4_mapped())
    std::copy(a.bytes.begin() + 12, a.bytes.end(), at + 12);
  else
    std::copy(a.bytes.begin(), a.bytes.end(), at);
}

wire::IpAddr get_addr(const uint8_t* at, bool v4) {
  wire::IpAddr a;
  if (v4) {
    a.bytes[10] = 0xff;
    a.bytes[11] = 0xff;
    std::copy(at + 12, at + 16, a.bytes.begin() + 12);
  } else {
    std::copy(at, at + 16, a.bytes.begin());
  }
  return a;
}

}  // namespace

bool service_port_space(uint64_t sid, PortSpace& ps) {
  if (sid >> 32 != 0) return false;
  switch (uint16_t(sid >> 16)) {
    case uint16_t(PortSpace::ipoib):
    case uint16_t(PortSpace::tcp):
    case uint16_t(PortSpace::udp):
    case uint16_t(PortSpace::ib):
      ps = PortSpace(uint16_t(sid >> 16));
      return true;
    default:
      return false;
  }
}

void encode_cma_header(const CmaHeader& h, uint8_t* out) {
  out[0] = kCmaVersion;
  out[1] = h.dst.is_v4_mapped() ? 0x40 : 0x60;
  wire::store_be16(out + 2, h.src_port);
  put_addr(out + 4, h.src);
  put_addr(out + 20, h.dst);
}

bool decode_cma_header(std::span<const uint8_t> in, CmaHeader& out) {
  if (in.size() < kCmaHeaderSize || in[0] != kCmaVersion) return false;
  const uint8_t ipv = in[1] >> 4;
  if (ipv != 4 && ipv != 6) return false;
  out.src_port = wire::load_be16(in.data() + 2);
  out.src = get_addr(in.data() + 4, ipv == 4);
  out.dst = get_addr(in.data() + 20, ipv == 4);
  return true;
}

}  // namespace uroce::cm
