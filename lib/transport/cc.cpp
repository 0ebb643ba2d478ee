// SPDX-License-Identifier: BSD-3-Clause
// Congestion control hooks of the transport: DCQCN's NP (CNPs for CE
// marks), its RP (CNPs in, rate out) and the pacing of request packets.
#include "cc.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <cmath>

#include "services.h"
#include "transport.h"

namespace uroce::transport {
namespace {

// Idle credit: a paced QP may fall behind its schedule by this much and
// catch up back to back, so that a poll loop slower than a packet time
// still holds the rate (at least two packets, at least this long).
constexpr double kCreditPackets = 2.0;
constexpr double kCreditNs = 8000.0;

// CNP (RoCEv2 Annex A17): P_Key 0xFFFF, BECN, DestQP = the QP whose packets
// were marked, PSN 0, 16 reserved zero bytes; DSCP and PCP of their own.
bool send_cnp(Qp& qp) {
  wire::PacketFields f = qp.hdr;
  f.bth = wire::BthFields{};
  f.bth.opcode = wire::op::CNP;
  f.bth.pkey = 0xFFFF;
  f.bth.becn = true;
  f.bth.dest_qp = qp.attr.dest_qpn;
  f.ext = wire::ExtFields{};
  f.payload_len = 0;
  f.ip.dscp = qp.cc.cnp_dscp;
  f.ip.ecn = 0;
  if (f.eth.has_vlan) f.eth.vlan_tci = uint16_t((f.eth.vlan_tci & 0x1FFF) | (qp.cc.cnp_prio << 13));
  OutPacket out;
  if (!start_packet(qp, f, out)) return false;
  uint8_t* data = rte_pktmbuf_mtod(out.m, uint8_t*);
  wire::store_le32(data + out.lay.frame_len - 4, wire::compute_icrc(data, out.lay, {}));
  qp.eng->transmit(out.m, out.to_self);
  return true;
}

// `now` in ns since the QP's pacing epoch, which moves up to now every 2^32
// ns so that slot and next_send stay small enough for a sub-ns step. The
// shift is an integer below 2^53: exact in doubles.
double since_epoch(cc::QpCc& c, uint64_t now) {
  if (now - c.epoch >= (uint64_t(1) << 32)) {
    const uint64_t shift = now - c.epoch;
    c.epoch = now;
    c.slot -= double(shift);
    c.next_send -= double(shift);
  }
  return double(now - c.epoch);
}

}  // namespace

void cc_setup(Qp& qp, const cc::CcConfig& cfg) {
  cc::QpCc& c = qp.cc;
  c.algo = cfg.algo;
  c.cnp_dscp = uint8_t(cfg.dcqcn.cnp_dscp & 0x3F);
  c.cnp_prio = uint8_t(cfg.dcqcn.cnp_802p_prio & 7);
  c.rp.configure(cfg.dcqcn, cfg.line_rate_mbps);
  c.np.configure(cfg.dcqcn);
  qp.hdr.ip.ecn = uint8_t(cfg.dcqcn.data_ecn & 3);
  qp.hdr.ip.dscp = uint8_t(cfg.dcqcn.data_dscp & 0x3F);
}

void cc_reset(Qp& qp) {
  qp.cc.rp.restart();
  qp.cc.np.restart();
  qp.cc.slot = qp.cc.next_send = 0;
  qp.cc.epoch = 0;
  qp.cc.last_len = 0;
  qp.cc.ackreq_at = 0;
}

bool cc_gate_slow(Qp& qp) {
  cc::QpCc& c = qp.cc;
  const uint64_t now = qp.eng->now();
  c.rp.advance(now);
  const double t = since_epoch(c, now);
  c.next_send = std::min(c.next_send, c.slot + double(c.last_len) * c.rp.ns_per_byte());
  if (t >= c.next_send) return true;
  ++c.paced_waits;
  const uint64_t wake = std::min(c.epoch + uint64_t(std::ceil(c.next_send)), c.rp.next_event());
  qp.eng->pace(&qp, std::max(wake, now + 1));
  return false;
}

void cc_sent_slow(Qp& qp, uint32_t frame_len) {
  cc::QpCc& c = qp.cc;
  c.rp.on_sent(frame_len);
  const double t = double(frame_len) * c.rp.ns_per_byte();
  const double credit = std::max(kCreditPackets * t, kCreditNs);
  c.slot = std::max(c.next_send, since_epoch(c, qp.eng->now()) - credit);
  c.last_len = frame_len;
  c.next_send = c.slot + t;
}

bool cc_ackreq_due_slow(Qp& qp, bool ack_req) {
  cc::QpCc& c = qp.cc;
  const uint64_t now = qp.eng->now();
  if (!ack_req && c.rp.limited() && qp.attr.timeout != 0)
    ack_req = now - c.ackreq_at >= ack_timeout_ns(qp.attr.timeout) / 4;
  if (ack_req) c.ackreq_at = now;
  return ack_req;
}

// A connected QP's packets all come from its peer here (the engine drops
// the others): a spoofed marked packet cannot make us slow the peer down.
void cc_ce_slow(Qp& qp) {
  cc::QpCc& c = qp.cc;
  ++c.ecn_marks;
  // Only a connected QP knows where the marked packets came from.
  if (c.algo != cc::CcAlgo::dcqcn || !qp.is_connected() || qp.state < IBV_QPS_RTR || qp.state == IBV_QPS_ERR) return;
  const uint64_t now = qp.eng->now();
  if (!c.np.may_send(now) || !send_cnp(qp)) return;
  c.np.sent(now);
  ++c.cnps_sent;
}

void cc_cnp_rx(Qp& qp) {
  cc::QpCc& c = qp.cc;
  // A CNP carries no PSN: only the connected peer's count (the engine has
  // checked the source), and only once the QP is connected.
  if (!qp.is_connected() || qp.state < IBV_QPS_RTR || qp.state == IBV_QPS_ERR) return;
  ++c.cnps_received;
  if (c.algo != cc::CcAlgo::dcqcn) return;
  c.rp.on_cnp(qp.eng->now());
}

cc::CcStats cc_stats(const Qp& qp) {
  const cc::QpCc& c = qp.cc;
  cc::CcStats s;
  s.algo = c.algo;
  s.limited = c.algo == cc::CcAlgo::dcqcn && c.rp.limited();
  s.rate_mbps = c.rp.rate_mbps();
  s.target_mbps = c.rp.target_mbps();
  s.alpha = c.rp.alpha();
  s.cnps_sent = c.cnps_sent;
  s.cnps_received = c.cnps_received;
  s.ecn_marks = c.ecn_marks;
  s.rate_decreases = c.rp.decreases();
  s.rate_increases = c.rp.increases();
  s.paced_waits = c.paced_waits;
  return s;
}

}  // namespace uroce::transport
