// SPDX-License-Identifier: BSD-3-Clause
// Unreliable datagram: one packet per message, no ACKs. Sends complete as
// soon as they are on the wire; receives carry the 40-byte GRH slot.
#include <cstring>

#include "services.h"
#include "../memory/sge_copy.h"
#include "psn.h"
#include "transport.h"

namespace uroce::transport {
namespace {

using namespace wire;

constexpr uint32_t kGrhLen = 40;
// verbs: a remote Q_Key with the high bit set means "use the QP's own".
constexpr uint32_t kQkeyUseQp = 0x80000000u;

bool send_datagram(Qp& qp, SendWqe& w) {
  const bool imm = w.opcode == IBV_WR_SEND_WITH_IMM;
  const UdDest& d = qp.sq.ud(w);
  PacketFields f = packet_fields(qp, imm ? op::UD_SEND_ONLY_WITH_IMMEDIATE : op::UD_SEND_ONLY, qp.req.psn,
                                 uint32_t(w.length));
  // Each datagram is addressed by its own address handle, source included
  // (create_ah made sure both GIDs are of one IP version).
  f.eth.dst = d.mac;
  f.ip.src = d.sgid;
  f.ip.dst = d.gid;
  f.ip.ipv6 = !d.gid.is_v4_mapped();
  f.ip.df = !f.ip.ipv6;
  f.ip.ttl = d.ttl;
  f.ip.dscp = d.dscp;
  f.eth.vlan_tci = vlan_tci_for(qp.eng->config(), d.sl);
  f.bth.dest_qp = d.qpn;
  f.bth.se = w.flags & IBV_SEND_SOLICITED;
  f.ext.deth_qkey = (d.qkey & kQkeyUseQp) ? qp.attr.qkey : d.qkey;
  f.ext.deth_src_qp = qp.qpn;
  f.ext.imm = imm ? w.imm : 0;
  OutPacket out;
  if (!start_packet(qp, f, out)) return false;
  out.to_self = d.to_self;
  if (w.flags & IBV_SEND_INLINE) {
    std::memcpy(out.payload, qp.sq.inline_bytes(w), w.length);
  } else if (!memory::gather(qp.eng->mrs(), qp.pd, qp.sq.sgl(w), 0, out.payload, w.length)) {
    rte_pktmbuf_free(out.m);
    ++qp.req.wqe;
    complete_send(qp, w, IBV_WC_LOC_PROT_ERR);
    return true;
  }
  finish_packet(qp, out);
  qp.req.psn = psn_add(qp.req.psn, 1);
  ++qp.req.wqe;
  ++qp.counters.rdma_sends;
  complete_send(qp, w, IBV_WC_SUCCESS);
  return true;
}

// The GRH slot: the IPv6 header, or for IPv4 20 zero bytes then the IPv4
// header (verbs convention for RoCEv2).
void write_grh(const PacketView& pkt, uint8_t grh[kGrhLen]) {
  std::memset(grh, 0, kGrhLen);
  if (pkt.ipv6)
    std::memcpy(grh, pkt.headers + pkt.l3_off, kGrhLen);
  else
    std::memcpy(grh + 20, pkt.headers + pkt.l3_off, 20);
}

}  // namespace

void ud_send(Qp& qp) {
  while (qp.req.wqe != qp.sq.head() && qp.eng->tx_has_room())
    if (!send_datagram(qp, qp.sq.at(qp.req.wqe))) break;
}

void ud_rx(Qp& qp, const PacketView& pkt) {
  if (qp.state != IBV_QPS_RTR && qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) return;
  if (pkt.op->transport != Transport::ud || pkt.deth().qkey() != qp.attr.qkey) return;
  // A datagram is one packet: never longer than the largest path MTU.
  if (pkt.payload_len > kMaxPayloadLen) return;
  ++qp.counters.rcvd_pkts;
  RecvQueue& rq = qp.recv_queue();
  if (rq.wq.empty()) return;  // UD has no RNR: the datagram is dropped
  // Used in place and popped at the end: nothing is posted meanwhile.
  const RecvWqe& wqe = rq.wq.front();
  const SgeList sgl = rq.sgl(wqe);
  ibv_wc wc{};
  wc.wr_id = wqe.wr_id;
  wc.opcode = IBV_WC_RECV;
  wc.qp_num = qp.qpn;
  wc.src_qp = pkt.deth().src_qp();
  wc.wc_flags = IBV_WC_GRH;
  wc.byte_len = kGrhLen + pkt.payload_len;
  if (pkt.op->has_ext(Ext::imm_dt)) {
    wc.wc_flags |= IBV_WC_WITH_IMM;
    wc.imm_data = __builtin_bswap32(pkt.imm().value());
  }
  uint8_t grh[kGrhLen];
  write_grh(pkt, grh);
  const auto& mrs = qp.eng->mrs();
  if (kGrhLen + pkt.payload_len > wqe.total)
    wc.status = IBV_WC_LOC_LEN_ERR;
  else if (!memory::scatter(mrs, qp.pd, sgl, 0, grh, kGrhLen) ||
           !memory::scatter(mrs, qp.pd, sgl, kGrhLen, pkt.payload, pkt.payload_len))
    wc.status = IBV_WC_LOC_PROT_ERR;
  complete_recv(qp, wc, pkt.bth().se());
  release_sges(qp, sgl);
  rq.wq.pop();
  recv_taken(qp);
  if (wc.status == IBV_WC_SUCCESS) ++qp.counters.rdma_recvs;
}

}  // namespace uroce::transport
