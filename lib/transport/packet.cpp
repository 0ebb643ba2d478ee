// SPDX-License-Identifier: BSD-3-Clause
#include <rte_mbuf.h>

#include <cstring>

#include "services.h"
#include "../memory/tx_extbuf.h"
#include "cc.h"
#include "psn.h"
#include "transport.h"

namespace uroce::transport {

wire::PacketFields packet_fields(const Qp& qp, uint8_t opcode, uint32_t psn, uint32_t payload_len) {
  wire::PacketFields f = qp.hdr;
  f.bth.opcode = opcode;
  f.bth.psn = psn & kPsnMask;
  f.payload_len = payload_len;
  return f;
}

bool from_peer(const Qp& qp, const wire::PacketView& pkt) {
  const wire::IpAddr& peer = qp.hdr.ip.dst;
  if (pkt.ipv6) return std::memcmp(pkt.ipv6_hdr().src(), peer.bytes.data(), 16) == 0;
  return peer.is_v4_mapped() && std::memcmp(pkt.ipv4().src(), peer.v4_bytes(), 4) == 0;
}

namespace {

// A fresh mbuf with headers from `build(data, room, layout)`.
template <class Build>
bool start_with(Qp& qp, OutPacket& out, Build&& build) {
  rte_mbuf* m = qp.eng->alloc_mbuf();
  if (m == nullptr) return false;
  uint8_t* data = rte_pktmbuf_mtod(m, uint8_t*);
  const size_t room = rte_pktmbuf_tailroom(m);
  if (build(std::span<uint8_t>(data, room), out.lay) != wire::BuildError::ok || out.lay.frame_len > room) {
    rte_pktmbuf_free(m);
    ++qp.counters.send_err;
    return false;
  }
  m->data_len = m->pkt_len = out.lay.frame_len;
  if (qp.eng->ipv4_checksum() == wire::Ipv4Checksum::offloaded && !out.lay.ipv6) {
    m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
    m->l2_len = out.lay.l3_off;
    m->l3_len = uint16_t(out.lay.l4_off - out.lay.l3_off);
  }
  out.m = m;
  out.payload = data + out.lay.payload_off;
  out.to_self = qp.to_self;
  return true;
}

}  // namespace

bool start_packet(Qp& qp, const wire::PacketFields& f, OutPacket& out) {
  return start_with(qp, out, [&](std::span<uint8_t> room, wire::FrameLayout& lay) {
    return wire::build_headers(f, room, lay, qp.eng->ipv4_checksum());
  });
}

bool start_rc_packet(Qp& qp, const wire::PacketSpec& p, const wire::ExtFields& ext, OutPacket& out) {
  if (!qp.tmpl.ready()) {  // not connected yet (or its addresses are unusable): say why the long way
    wire::PacketFields f = packet_fields(qp, p.opcode, p.psn, p.payload_len);
    f.bth.ack_req = p.ack_req;
    f.bth.se = p.se;
    f.ext = ext;
    return start_packet(qp, f, out);
  }
  return start_with(qp, out, [&](std::span<uint8_t> room, wire::FrameLayout& lay) {
    return qp.tmpl.write(p, ext, room, lay);
  });
}

void finish_packet(Qp& qp, OutPacket& out, bool paced) {
  uint8_t* data = rte_pktmbuf_mtod(out.m, uint8_t*);
  std::memset(out.payload + out.lay.payload_len, 0, out.lay.pad);
  const std::span<const uint8_t> piece[] = {{out.payload, out.lay.payload_len}};
  wire::store_le32(data + out.lay.frame_len - 4, wire::compute_icrc(data, out.lay, piece));
  ++qp.counters.sent_pkts;
  if (paced) cc_sent(qp, out.lay.frame_len);
  qp.eng->transmit(out.m, out.to_self);
  out.m = nullptr;
}

bool send_zero_copy(Qp& qp, const wire::PacketSpec& spec, const wire::ExtFields& ext, memory::Region& mr,
                    uint8_t* p) {
  OutPacket out;
  if (!start_rc_packet(qp, spec, ext, out)) return false;
  rte_mbuf* body = memory::attach_tx_payload(qp.eng->ext_pool(), mr, p, spec.payload_len);
  rte_mbuf* tail = body ? qp.eng->alloc_mbuf() : nullptr;
  if (tail == nullptr) {
    rte_pktmbuf_free(body);
    rte_pktmbuf_free(out.m);
    return false;
  }
  const uint16_t trailer = uint16_t(out.lay.pad + 4);
  uint8_t* t = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(tail, trailer));
  std::memset(t, 0, out.lay.pad);
  const std::span<const uint8_t> piece[] = {{p, spec.payload_len}};
  wire::store_le32(t + out.lay.pad, wire::compute_icrc(rte_pktmbuf_mtod(out.m, uint8_t*), out.lay, piece));
  rte_mbuf* m = out.m;
  m->data_len = out.lay.payload_off;  // the headers; the rest follows in segments
  m->next = body;
  body->next = tail;
  m->nb_segs = 3;
  m->pkt_len = out.lay.frame_len;
  ++qp.counters.sent_pkts;
  ++qp.counters.zero_copy_pkts;
  cc_sent(qp, out.lay.frame_len);
  qp.eng->transmit(m, out.to_self);
  return true;
}

}  // namespace uroce::transport
