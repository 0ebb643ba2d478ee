// SPDX-License-Identifier: BSD-3-Clause
// Responder: executes incoming requests in PSN order (IBA 9.7.4 "responder
// behaviour"). Every check runs before memory is touched: QP state, PSN,
// opcode sequence, the QP's access rights, the opcode-level packet checks,
// then key, PD, access flags and bounds of the target.
#include <cstring>

#include "services.h"
#include "../memory/sge_copy.h"
#include "psn.h"
#include "responder_out.h"
#include "transport.h"

namespace uroce::transport {
namespace {

using namespace wire;

// The requester is told, then this QP stops (IBA class C/D errors).
void fatal(Qp& qp, NakCode code, uint32_t psn) {
  send_nak_now(qp, make_aeth_syndrome(AethType::nak, uint8_t(code)), psn);
  fail_qp(qp);
}

// Completes the receive WQE the responder holds with `status` and gives it up.
void fail_held_recv(Qp& qp, ibv_wc_status status) {
  ibv_wc wc{};
  wc.wr_id = qp.resp.recv.wr_id;
  wc.status = status;
  wc.opcode = IBV_WC_RECV;
  wc.qp_num = qp.qpn;
  complete_recv(qp, wc);
  release_sges(qp, qp.recv_queue().sgl(qp.resp.recv));
  qp.resp.have_recv = false;
}

void fatal_recv(Qp& qp, NakCode code, uint32_t psn, ibv_wc_status status) {
  if (qp.resp.have_recv) fail_held_recv(qp, status);
  fatal(qp, code, psn);
}

bool take_recv(Qp& qp) {
  if (qp.resp.have_recv) return true;
  RecvQueue& rq = qp.recv_queue();
  if (rq.wq.empty()) return false;
  rq.take(qp.resp.recv);
  recv_taken(qp);
  qp.resp.have_recv = true;
  qp.resp.recv_off = 0;
  return true;
}

void rnr(Qp& qp, uint32_t psn) {
  ++qp.counters.send_rnr_err;
  queue_ack(qp, make_aeth_syndrome(AethType::rnr_nak, qp.attr.min_rnr_timer), psn);
}

// Right opcode for where we are in a message, and allowed on this QP?
bool valid_for_qp(const Qp& qp, const OpcodeInfo& op) {
  const uint32_t cls = op.flags & (opf::send | opf::write);
  if (qp.resp.msg_class != 0) {
    if (!(op.is_middle() || op.is_last()) || cls != qp.resp.msg_class) return false;
  } else if (op.is_middle() || op.is_last()) {
    return false;
  }
  const int acc = qp.attr.access_flags;
  if (op.has(opf::write) && !(acc & IBV_ACCESS_REMOTE_WRITE)) return false;
  if (op.has(opf::read) && !(acc & IBV_ACCESS_REMOTE_READ)) return false;
  if (op.has(opf::atomic) && !(acc & IBV_ACCESS_REMOTE_ATOMIC)) return false;
  if (op.has(opf::read) || op.has(opf::atomic)) return qp.attr.max_dest_rd_atomic > 0;
  return true;
}

// rxe's check_length beyond the path MTU rule: a LAST packet carries at
// least one byte (a message of whole PMTUs ends with a full LAST), and no
// READ or WRITE asks for more than 2^31 bytes, the largest message.
bool length_ok(const PacketView& pkt) {
  if (pkt.op->is_last() && pkt.payload_len == 0) return false;
  if (pkt.op->has_ext(Ext::reth) && pkt.reth().dma_len() > (1u << 31)) return false;
  return true;
}

void finish_message(Qp& qp, const PacketView& pkt) {
  ++qp.resp.msn;
  qp.resp.msg_class = 0;
  if (pkt.bth().ack_req()) queue_ack(qp, kAethAckNoCredit, pkt.bth().psn());
}

void complete_incoming(Qp& qp, const PacketView& pkt, ibv_wc_opcode opcode, uint32_t byte_len) {
  ibv_wc wc{};
  wc.wr_id = qp.resp.recv.wr_id;
  wc.status = IBV_WC_SUCCESS;
  wc.opcode = opcode;
  wc.byte_len = byte_len;
  wc.qp_num = qp.qpn;
  wc.src_qp = qp.attr.dest_qpn;
  if (pkt.op->has_ext(Ext::imm_dt)) {
    wc.wc_flags |= IBV_WC_WITH_IMM;
    wc.imm_data = __builtin_bswap32(pkt.imm().value());  // verbs keeps it in network order
  }
  if (pkt.op->has_ext(Ext::ieth)) {
    wc.wc_flags |= IBV_WC_WITH_INV;
    wc.invalidated_rkey = pkt.ieth().value();
  }
  complete_recv(qp, wc, pkt.bth().se());
  release_sges(qp, qp.recv_queue().sgl(qp.resp.recv));
  qp.resp.have_recv = false;
  ++qp.counters.rdma_recvs;
}

void on_send(Qp& qp, const PacketView& pkt) {
  const uint32_t psn = pkt.bth().psn();
  if (pkt.op->is_first() || pkt.op->is_only()) {
    if (!take_recv(qp)) return rnr(qp, psn);
    qp.resp.msg_class = opf::send;
  }
  if (qp.resp.recv_off + pkt.payload_len > qp.resp.recv.total)
    return fatal_recv(qp, NakCode::invalid_request, psn, IBV_WC_LOC_LEN_ERR);
  // The key to invalidate is checked before the last packet's bytes land
  // (IBA's class J error): only a bound type 2 memory window of this QP's
  // PD qualifies (a region from reg_mr never does: uroce has no fast
  // registration). It is invalidated once the bytes are in.
  const bool inv = pkt.op->has_ext(Ext::ieth);
  if (inv && !memory::can_invalidate(qp.eng->mrs(), qp.pd, pkt.ieth().value()))
    return fatal_recv(qp, NakCode::invalid_request, psn, IBV_WC_REM_INV_REQ_ERR);
  const SgeList sgl = qp.recv_queue().sgl(qp.resp.recv);
  if (!memory::scatter(qp.eng->mrs(), qp.pd, sgl, qp.resp.recv_off, pkt.payload, pkt.payload_len))
    return fatal_recv(qp, NakCode::remote_operational_error, psn, IBV_WC_LOC_PROT_ERR);
  if (inv) memory::invalidate(qp.eng->mrs(), qp.pd, pkt.ieth().value());
  qp.resp.recv_off += pkt.payload_len;
  qp.resp.epsn = psn_add(psn, 1);
  if (pkt.op->is_last() || pkt.op->is_only()) {
    complete_incoming(qp, pkt, IBV_WC_RECV, uint32_t(qp.resp.recv_off));
    finish_message(qp, pkt);
  } else if (pkt.bth().ack_req()) {
    queue_ack(qp, kAethAckNoCredit, psn);
  }
}

void on_write(Qp& qp, const PacketView& pkt) {
  const uint32_t psn = pkt.bth().psn();
  const bool ends = pkt.op->is_last() || pkt.op->is_only();
  if (ends && pkt.op->has_ext(Ext::imm_dt) && !take_recv(qp)) return rnr(qp, psn);
  uint8_t* dst = nullptr;
  if (pkt.op->is_first() || pkt.op->is_only()) {
    memory::AccessError err;
    const RethView reth = pkt.reth();
    // The whole message's target, which starts with this packet's.
    dst = memory::resolve_remote(qp.eng->mrs(), qp.pd, qp.qpn, reth.rkey(), reth.va(), reth.dma_len(),
                                 IBV_ACCESS_REMOTE_WRITE, err);
    if (dst == nullptr) return fatal_recv(qp, NakCode::remote_access_error, psn, IBV_WC_REM_ACCESS_ERR);
    qp.resp.write_va = reth.va();
    qp.resp.write_rkey = reth.rkey();
    qp.resp.write_left = reth.dma_len();
    qp.resp.msg_bytes = 0;
    qp.resp.msg_class = opf::write;
  }
  if (pkt.payload_len > qp.resp.write_left || (ends && pkt.payload_len != qp.resp.write_left))
    return fatal_recv(qp, NakCode::invalid_request, psn, IBV_WC_REM_INV_REQ_ERR);
  // Resolved again for every later packet: the region may have gone
  // since the message's first.
  if (dst == nullptr) {
    memory::AccessError err;
    dst = memory::resolve_remote(qp.eng->mrs(), qp.pd, qp.qpn, qp.resp.write_rkey, qp.resp.write_va, pkt.payload_len,
                                 IBV_ACCESS_REMOTE_WRITE, err);
    if (dst == nullptr) return fatal_recv(qp, NakCode::remote_access_error, psn, IBV_WC_REM_ACCESS_ERR);
  }
  if (pkt.payload_len) std::memcpy(dst, pkt.payload, pkt.payload_len);
  qp.resp.write_va += pkt.payload_len;
  qp.resp.write_left -= pkt.payload_len;
  qp.resp.msg_bytes += pkt.payload_len;
  qp.resp.epsn = psn_add(psn, 1);
  if (!ends) {
    if (pkt.bth().ack_req()) queue_ack(qp, kAethAckNoCredit, psn);
    return;
  }
  if (pkt.op->has_ext(Ext::imm_dt)) complete_incoming(qp, pkt, IBV_WC_RECV_RDMA_WITH_IMM, uint32_t(qp.resp.msg_bytes));
  finish_message(qp, pkt);
}

void on_read(Qp& qp, const PacketView& pkt) {
  const uint32_t psn = pkt.bth().psn();
  const RethView reth = pkt.reth();
  memory::AccessError err;
  if (!memory::resolve_remote(qp.eng->mrs(), qp.pd, qp.qpn, reth.rkey(), reth.va(), reth.dma_len(),
                              IBV_ACCESS_REMOTE_READ, err))
    return fatal(qp, NakCode::remote_access_error, psn);
  const uint32_t pmtu = qp.attr.pmtu;
  const uint32_t count = reth.dma_len() == 0 ? 1 : (reth.dma_len() + pmtu - 1) / pmtu;
  RdAtomicResource& r = new_resource(qp);
  r.kind = RdAtomicResource::read;
  r.first_psn = psn;
  r.last_psn = psn_add(psn, count - 1);
  r.va = reth.va();
  r.rkey = reth.rkey();
  r.length = reth.dma_len();
  r.msn = ++qp.resp.msn;
  qp.resp.epsn = psn_add(psn, count);
  queue_response(qp, r, psn);
}

void on_atomic(Qp& qp, const PacketView& pkt) {
  const uint32_t psn = pkt.bth().psn();
  const AtomicEthView a = pkt.atomic_eth();
  memory::AccessError err;
  uint8_t* p = memory::resolve_remote(qp.eng->mrs(), qp.pd, qp.qpn, a.rkey(), a.va(), 8, IBV_ACCESS_REMOTE_ATOMIC, err);
  if (p == nullptr) return fatal(qp, NakCode::remote_access_error, psn);
  // The VA was checked aligned, but a region's IOVA need not share its
  // address's alignment (reg_mr_iova): a locked operation across cache lines
  // is a split lock (or a fault, off x86), so the host address is checked too.
  if ((reinterpret_cast<uintptr_t>(p) & 7) != 0) return fatal(qp, NakCode::invalid_request, psn);
  auto* word = reinterpret_cast<uint64_t*>(p);
  uint64_t orig;
  if (pkt.bth().opcode() == op::RC_COMPARE_SWAP) {
    orig = a.compare();
    __atomic_compare_exchange_n(word, &orig, a.swap_add(), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  } else {
    orig = __atomic_fetch_add(word, a.swap_add(), __ATOMIC_SEQ_CST);
  }
  RdAtomicResource& r = new_resource(qp);
  r.kind = RdAtomicResource::atomic;
  r.first_psn = r.last_psn = psn;
  r.orig = orig;
  r.msn = ++qp.resp.msn;
  qp.resp.epsn = psn_add(psn, 1);
  queue_response(qp, r, psn);
}

// A request we executed before: answer it again, never execute it again
// (except a READ, which is idempotent and re-read from memory).
void on_duplicate(Qp& qp, const PacketView& pkt) {
  ++qp.counters.duplicate_request;
  const uint32_t psn = pkt.bth().psn();
  if (pkt.op->has(opf::read | opf::request) || pkt.op->has(opf::atomic | opf::request)) {
    if (RdAtomicResource* r = find_resource(qp, psn)) queue_response(qp, *r, psn);
    return;
  }
  queue_ack(qp, kAethAckNoCredit, psn_add(qp.resp.epsn, kPsnMask));
}

// UC (IBA's unreliable connected service): nothing is acknowledged, so
// nothing is NAKed either. A message that cannot be taken whole (a packet
// lost, no receive WQE, a bad key or length) is dropped silently and the
// QP stays up; the responder then waits for the next FIRST or ONLY.

// The open message will not complete. Its receive WQE starts over for the
// next SEND; an SRQ's completes with `status` instead (rxe's class D/E:
// the QP may not keep a WQE that other QPs could use).
void uc_abandon(Qp& qp, ibv_wc_status status) {
  qp.resp.msg_class = 0;
  if (!qp.resp.have_recv) return;
  qp.resp.recv_off = 0;
  if (qp.srq == nullptr) return;
  fail_held_recv(qp, status);
}

// Drops this packet and the rest of its message, counted once per message.
void uc_drop(Qp& qp, ibv_wc_status status) {
  if (!qp.resp.drop_msg) ++qp.counters.uc_msg_dropped;
  qp.resp.drop_msg = true;
  uc_abandon(qp, status);
}

void uc_message_done(Qp& qp) {
  ++qp.resp.msn;
  qp.resp.msg_class = 0;
}

void uc_on_send(Qp& qp, const PacketView& pkt) {
  if (pkt.op->has(opf::first)) {
    if (!take_recv(qp)) return uc_drop(qp, IBV_WC_SUCCESS);  // no RNR on UC
    qp.resp.recv_off = 0;
    qp.resp.msg_class = opf::send;
  }
  if (qp.resp.recv_off + pkt.payload_len > qp.resp.recv.total) return uc_drop(qp, IBV_WC_LOC_LEN_ERR);
  const SgeList sgl = qp.recv_queue().sgl(qp.resp.recv);
  if (!memory::scatter(qp.eng->mrs(), qp.pd, sgl, qp.resp.recv_off, pkt.payload, pkt.payload_len))
    return uc_drop(qp, IBV_WC_LOC_PROT_ERR);
  qp.resp.recv_off += pkt.payload_len;
  qp.resp.epsn = psn_add(pkt.bth().psn(), 1);
  if (!pkt.op->has(opf::last)) return;
  complete_incoming(qp, pkt, IBV_WC_RECV, uint32_t(qp.resp.recv_off));
  uc_message_done(qp);
}

void uc_on_write(Qp& qp, const PacketView& pkt) {
  const bool ends = pkt.op->has(opf::last);
  memory::AccessError err;
  uint8_t* dst = nullptr;
  if (pkt.op->has(opf::first)) {
    const RethView reth = pkt.reth();
    dst = memory::resolve_remote(qp.eng->mrs(), qp.pd, qp.qpn, reth.rkey(), reth.va(), reth.dma_len(),
                                 IBV_ACCESS_REMOTE_WRITE, err);
    if (dst == nullptr) return uc_drop(qp, IBV_WC_REM_ACCESS_ERR);
    qp.resp.write_va = reth.va();
    qp.resp.write_rkey = reth.rkey();
    qp.resp.write_left = reth.dma_len();
    qp.resp.msg_bytes = 0;
    qp.resp.msg_class = opf::write;
  }
  if (pkt.payload_len > qp.resp.write_left || (ends && pkt.payload_len != qp.resp.write_left))
    return uc_drop(qp, IBV_WC_REM_INV_REQ_ERR);
  if (ends && pkt.op->has_ext(Ext::imm_dt) && !take_recv(qp)) return uc_drop(qp, IBV_WC_SUCCESS);
  if (dst == nullptr) {
    dst = memory::resolve_remote(qp.eng->mrs(), qp.pd, qp.qpn, qp.resp.write_rkey, qp.resp.write_va, pkt.payload_len,
                                 IBV_ACCESS_REMOTE_WRITE, err);
    if (dst == nullptr) return uc_drop(qp, IBV_WC_REM_ACCESS_ERR);
  }
  if (pkt.payload_len) std::memcpy(dst, pkt.payload, pkt.payload_len);
  qp.resp.write_va += pkt.payload_len;
  qp.resp.write_left -= pkt.payload_len;
  qp.resp.msg_bytes += pkt.payload_len;
  qp.resp.epsn = psn_add(pkt.bth().psn(), 1);
  if (!ends) return;
  if (pkt.op->has_ext(Ext::imm_dt)) complete_incoming(qp, pkt, IBV_WC_RECV_RDMA_WITH_IMM, uint32_t(qp.resp.msg_bytes));
  uc_message_done(qp);
}

// Where a UC packet stands in its message: the PSN rule (a packet after a
// gap is taken only if it starts a message) and the opcode sequence.
bool uc_in_sequence(Qp& qp, const OpcodeInfo& op, uint32_t psn) {
  const bool starts = op.has(opf::first);
  // Counted where the gap shows, not again for the rest of a dropped message.
  if (psn != qp.resp.epsn && !qp.resp.drop_msg) ++qp.counters.out_of_seq_request;
  if ((psn != qp.resp.epsn || qp.resp.drop_msg) && !starts) {
    uc_drop(qp, IBV_WC_REM_INV_REQ_ERR);
    return false;
  }
  qp.resp.drop_msg = false;
  if (starts) {
    // A message still open lost its end: it is dropped, this one starts.
    if (qp.resp.msg_class != 0) {
      ++qp.counters.uc_msg_dropped;
      uc_abandon(qp, IBV_WC_REM_INV_REQ_ERR);
    }
    return true;
  }
  if (qp.resp.msg_class == (op.flags & (opf::send | opf::write))) return true;
  uc_drop(qp, IBV_WC_REM_INV_REQ_ERR);
  return false;
}

}  // namespace

void responder_rx(Qp& qp, const PacketView& pkt) {
  if (qp.state != IBV_QPS_RTR && qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) return;
  // A UC or UD opcode is not this QP's traffic at all (rxe's QP type
  // check): dropped before its PSN could draw a NAK or an ACK.
  if (pkt.op->transport != Transport::rc) return;
  ++qp.counters.rcvd_pkts;
  const uint32_t psn = pkt.bth().psn();
  const int32_t d = psn_diff(psn, qp.resp.epsn);
  if (d < 0) return on_duplicate(qp, pkt);
  if (d > 0) {
    ++qp.counters.out_of_seq_request;
    if (!qp.resp.nak_sent) {
      qp.resp.nak_sent = true;
      queue_ack(qp, make_aeth_syndrome(AethType::nak, uint8_t(NakCode::psn_sequence_error)), qp.resp.epsn);
    }
    return;
  }
  qp.resp.nak_sent = false;
  if (!valid_for_qp(qp, *pkt.op) || check_semantics(pkt, qp.attr.pmtu) != ParseError::ok || !length_ok(pkt))
    return fatal_recv(qp, NakCode::invalid_request, psn, IBV_WC_REM_INV_REQ_ERR);
  if (pkt.op->has(opf::send)) return on_send(qp, pkt);
  if (pkt.op->has(opf::write)) return on_write(qp, pkt);
  if (pkt.op->has(opf::read)) return on_read(qp, pkt);
  return on_atomic(qp, pkt);
}

void uc_rx(Qp& qp, const PacketView& pkt) {
  if (qp.state != IBV_QPS_RTR && qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) return;
  ++qp.counters.rcvd_pkts;
  const OpcodeInfo& op = *pkt.op;
  if (op.transport != Transport::uc) return;  // RC/UD opcode on a UC QP: drop
  if (!uc_in_sequence(qp, op, pkt.bth().psn())) return;
  if (check_semantics(pkt, qp.attr.pmtu) != ParseError::ok || !length_ok(pkt))
    return uc_drop(qp, IBV_WC_REM_INV_REQ_ERR);
  if (op.has(opf::send)) return uc_on_send(qp, pkt);
  if (!(qp.attr.access_flags & IBV_ACCESS_REMOTE_WRITE)) return uc_drop(qp, IBV_WC_REM_ACCESS_ERR);
  uc_on_write(qp, pkt);
}

}  // namespace uroce::transport
