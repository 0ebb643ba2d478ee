#include <rte_mbuf.h>

#include <cstring>

#include "../engine/engine.h"
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

bool start_packet(Qp& qp, const wire::PacketFields& f, OutPacket& out) {
  rte_mbuf* m = qp.eng->alloc_mbuf();
  if (m == nullptr) return false;
  uint8_t* data = rte_pktmbuf_mtod(m, uint8_t*);
  const size_t room = rte_pktmbuf_tailroom(m);
  if (wire::build_headers(f, {data, room}, out.lay) != wire::BuildError::ok || out.lay.frame_len > room) {
    rte_pktmbuf_free(m);
    ++qp.counters.send_err;
    return false;
  }
  m->data_len = m->pkt_len = out.lay.frame_len;
  out.m = m;
  out.payload = data + out.lay.payload_off;
  return true;
}

void finish_packet(Qp& qp, OutPacket& out) {
  uint8_t* data = rte_pktmbuf_mtod(out.m, uint8_t*);
  std::memset(out.payload + out.lay.payload_len, 0, out.lay.pad);
  const std::span<const uint8_t> piece[] = {{out.payload, out.lay.payload_len}};
  wire::store_le32(data + out.lay.frame_len - 4, wire::compute_icrc(data, out.lay, piece));
  ++qp.counters.sent_pkts;
  qp.eng->transmit(out.m);
  out.m = nullptr;
}

}  // namespace uroce::transport
