// SPDX-License-Identifier: BSD-3-Clause
#include "ecn_mark.h"

#include <rte_mbuf.h>

#include "uroce/wire/byte_order.h"
#include "uroce/wire/eth.h"
#include "uroce/wire/ipv4.h"
#include "uroce/wire/ipv6.h"

namespace uroce::sim::detail {

EcnField read_ecn(const rte_mbuf* m) {
  EcnField f;
  const auto* p = rte_pktmbuf_mtod(m, const uint8_t*);
  const uint32_t len = m->data_len;
  if (len < wire::kEthHeaderLen) return f;
  uint32_t off = wire::kEthHeaderLen;
  uint16_t type = wire::EthView(p).ethertype();
  if (type == wire::kEtherTypeVlan) {
    if (len < off + wire::kVlanTagLen) return f;
    type = wire::VlanView(p + off).inner_ethertype();
    off += wire::kVlanTagLen;
  }
  if (type == wire::kEtherTypeIpv4 && len >= off + wire::kIpv4MinHeaderLen) {
    f.ecn = wire::Ipv4View(p + off).ecn();
  } else if (type == wire::kEtherTypeIpv6 && len >= off + wire::kIpv6HeaderLen) {
    f.ecn = wire::Ipv6View(p + off).ecn();
    f.v6 = true;
  } else {
    return f;
  }
  f.ip_off = off;
  return f;
}

void set_ce(rte_mbuf* m, const EcnField& f) {
  auto* ip = rte_pktmbuf_mtod_offset(m, uint8_t*, f.ip_off);
  if (f.v6) {
    // Traffic class spans bytes 0-1; its ECN bits are bits 4-5 of byte 1.
    ip[1] |= uint8_t(kEcnCe << 4);
    return;
  }
  const uint16_t old_word = wire::load_be16(ip);
  ip[1] |= kEcnCe;
  const uint16_t new_word = wire::load_be16(ip);
  // HC' = ~(~HC + ~m + m'), in ones'-complement arithmetic.
  uint32_t sum = uint16_t(~wire::load_be16(ip + 10)) + uint16_t(~old_word) + uint32_t(new_word);
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  wire::store_be16(ip + 10, uint16_t(~sum));
}

}  // namespace uroce::sim::detail
