// SPDX-License-Identifier: BSD-3-Clause
#include "wire/header_template.h"

#include <cstring>

#include "uroce/wire/bth.h"
#include "uroce/wire/byte_order.h"
#include "uroce/wire/opcode.h"
#include "uroce/wire/parser.h"
#include "ones_complement.h"
#include "write_ext.h"

namespace uroce::wire {
namespace {

constexpr size_t kIcrcLen = 4;

}  // namespace

BuildError HeaderTemplate::prepare(const PacketFields& f, Ipv4Checksum ipv4_checksum) {
  len_ = 0;
  // The builder writes the shared part; the per-packet fields are left at
  // values that write() can overwrite (opcode, lengths, checksum, PSN word)
  // or OR into (SE and pad, both zero here).
  PacketFields g = f;
  g.bth.opcode = op::RC_SEND_ONLY;  // no extension headers
  g.bth.se = false;
  g.bth.ack_req = false;
  g.bth.psn = 0;
  g.payload_len = 0;
  FrameLayout lay;
  if (BuildError e = build_headers(g, {bytes_, kMaxLen}, lay, ipv4_checksum); e != BuildError::ok) return e;
  l3_off_ = lay.l3_off;
  l4_off_ = lay.l4_off;
  ipv6_ = lay.ipv6;
  ipv4_checksum_ = !ipv6_ && ipv4_checksum == Ipv4Checksum::compute;
  uint8_t* ip = bytes_ + l3_off_;
  if (!ipv6_) {
    store_be16(ip + 2, 0);   // total length: per packet
    store_be16(ip + 10, 0);  // checksum: per packet, from the sum of the rest
    ipv4_sum_ = 0;
    for (size_t i = 0; i < kIpv4MinHeaderLen; i += 2) ipv4_sum_ += load_be16(ip + i);
  }
  len_ = uint16_t(lay.bth_off + kBthLen);
  return BuildError::ok;
}

BuildError HeaderTemplate::write(const PacketSpec& p, const ExtFields& ext, std::span<uint8_t> out,
                                 FrameLayout& lay) const {
  const OpcodeInfo& op = opcode_info(p.opcode);
  if (!ready()) return BuildError::bad_address;
  if (!op.valid()) return BuildError::bad_opcode;
  if (p.payload_len > 0 && !op.has(opf::payload)) return BuildError::payload_not_allowed;
  if (p.payload_len > kMaxPayloadLen) return BuildError::payload_too_long;
  const uint16_t bth_off = uint16_t(len_ - kBthLen);
  lay.pad = uint8_t((4 - p.payload_len % 4) % 4);
  lay.payload_len = p.payload_len;
  lay.ipv6 = ipv6_;
  lay.l3_off = l3_off_;
  lay.l4_off = l4_off_;
  lay.bth_off = bth_off;
  lay.payload_off = uint16_t(bth_off + op.header_len);
  const uint32_t udp_len = uint32_t(kUdpHeaderLen + op.header_len + p.payload_len + lay.pad + kIcrcLen);
  lay.frame_len = l4_off_ + udp_len;
  if (out.size() < lay.payload_off) return BuildError::no_room;

  uint8_t* o = out.data();
  // A fixed-size copy is a couple of vector moves; the bytes past the BTH
  // are overwritten by the extension headers and payload, or not sent.
  if (out.size() >= kMaxLen) std::memcpy(o, bytes_, kMaxLen);
  else std::memcpy(o, bytes_, len_);
  uint8_t* ip = o + l3_off_;
  if (ipv6_) {
    store_be16(ip + 4, uint16_t(udp_len));
  } else {
    const uint16_t total = uint16_t(kIpv4MinHeaderLen + udp_len);
    store_be16(ip + 2, total);
    if (ipv4_checksum_) store_be16(ip + 10, detail::fold_complement(ipv4_sum_ + total));
  }
  store_be16(o + l4_off_ + 4, uint16_t(udp_len));
  uint8_t* bth = o + bth_off;
  bth[0] = p.opcode;
  bth[1] = uint8_t(bytes_[bth_off + 1] | (p.se ? 0x80 : 0) | lay.pad << 4);
  store_be32(bth + 8, (load_be32(bytes_ + bth_off + 8) & 0x7F000000u) | (p.ack_req ? 0x80000000u : 0) |
                          (p.psn & 0xFFFFFFu));
  detail::write_ext(op, ext, bth);
  return BuildError::ok;
}

}  // namespace uroce::wire
