// SPDX-License-Identifier: BSD-3-Clause
// UDP header and the RoCEv2 UDP source-port rule.
#pragma once

#include "uroce/api.h"

#include <cstddef>
#include <cstdint>

#include "uroce/wire/header_ref.h"

namespace uroce::wire {

inline constexpr size_t kUdpHeaderLen = 8;
inline constexpr uint16_t kRoceV2Port = 4791;
inline constexpr uint16_t kRoceSportMin = 0xC000;

template <class Byte>
class UdpT : public HeaderRef<Byte> {
  using HeaderRef<Byte>::p_;
  static constexpr bool W = HeaderRef<Byte>::kWritable;

 public:
  using HeaderRef<Byte>::HeaderRef;

  uint16_t sport() const { return load_be16(p_); }
  uint16_t dport() const { return load_be16(p_ + 2); }
  uint16_t length() const { return load_be16(p_ + 4); }
  uint16_t checksum() const { return load_be16(p_ + 6); }

  void set_sport(uint16_t v) requires W { store_be16(p_, v); }
  void set_dport(uint16_t v) requires W { store_be16(p_ + 2, v); }
  void set_length(uint16_t v) requires W { store_be16(p_ + 4, v); }
  void set_checksum(uint16_t v) requires W { store_be16(p_ + 6, v); }
};

using UdpView = UdpT<const uint8_t>;
using UdpRef = UdpT<uint8_t>;

// The kernel's rdma_calc_flow_label(): folds both QPNs into 20 bits.
constexpr uint32_t roce_flow_label(uint32_t local_qpn, uint32_t remote_qpn) {
  uint64_t v = uint64_t(local_qpn) * remote_qpn;
  v ^= v >> 20;
  v ^= v >> 40;
  return uint32_t(v & 0xFFFFF);
}

// The kernel's rdma_get_udp_sport(), which rxe applies when a QP gets its
// address vector: a port in 0xC000..0xFFFF that is constant per QP pair, so
// ECMP and RSS keep a QP's packets on one path. A non-zero flow label (from
// the GRH) takes precedence over the QPN hash. QPN 0x11 <-> 0x11 gives
// 0xC121, as in the rxe captures.
constexpr uint16_t roce_udp_sport(uint32_t flow_label, uint32_t local_qpn, uint32_t remote_qpn) {
  uint32_t fl = flow_label ? flow_label : roce_flow_label(local_qpn, remote_qpn);
  uint32_t low = (fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14);
  return uint16_t(low | kRoceSportMin);
}

// rxe's port for a QP that has no connected address vector (UD QPs, and
// RC QPs before RTR): 0xC000 | hash_32(qpn, 14), the kernel's golden-ratio
// hash. The UD captures show it: QPN 0x11 sends from 0xDF94 (57236).
constexpr uint16_t roce_udp_sport_unconnected(uint32_t qpn) {
  return uint16_t(kRoceSportMin | ((qpn * 0x61C88647u) >> 18));
}

// RFC 768/8200 UDP checksum over the pseudo header and the datagram (whose
// checksum field is included as it stands). 0 means the checksum is right.
UROCE_API uint16_t udp_checksum_ipv4(const uint8_t* ip_hdr, const uint8_t* udp, size_t udp_len);
UROCE_API uint16_t udp_checksum_ipv6(const uint8_t* ip_hdr, const uint8_t* udp, size_t udp_len);

}  // namespace uroce::wire
