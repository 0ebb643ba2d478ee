// SPDX-License-Identifier: BSD-3-Clause
// Requester: turns send WQEs into request packets (IBA 9.7 "requester
// behaviour"), segmenting by path MTU, setting AckReq, and rewinding for
// go-back-N retransmission.
#include "services.h"
#include "../memory/access.h"
#include "../memory/sge_copy.h"
#include "cc.h"
#include "psn.h"
#include "transport.h"

namespace uroce::transport {
namespace {

using namespace wire;

// RC opcode for a SEND or WRITE packet at this place in its message.
uint8_t data_opcode(ibv_wr_opcode wr, bool first, bool last) {
  const bool write = wr == IBV_WR_RDMA_WRITE || wr == IBV_WR_RDMA_WRITE_WITH_IMM;
  if (first && last) {
    switch (wr) {
      case IBV_WR_SEND_WITH_IMM: return op::RC_SEND_ONLY_WITH_IMMEDIATE;
      case IBV_WR_SEND_WITH_INV: return op::RC_SEND_ONLY_WITH_INVALIDATE;
      case IBV_WR_RDMA_WRITE: return op::RC_RDMA_WRITE_ONLY;
      case IBV_WR_RDMA_WRITE_WITH_IMM: return op::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
      default: return op::RC_SEND_ONLY;
    }
  }
  if (first) return write ? op::RC_RDMA_WRITE_FIRST : op::RC_SEND_FIRST;
  if (!last) return write ? op::RC_RDMA_WRITE_MIDDLE : op::RC_SEND_MIDDLE;
  switch (wr) {
    case IBV_WR_SEND_WITH_IMM: return op::RC_SEND_LAST_WITH_IMMEDIATE;
    case IBV_WR_SEND_WITH_INV: return op::RC_SEND_LAST_WITH_INVALIDATE;
    case IBV_WR_RDMA_WRITE: return op::RC_RDMA_WRITE_LAST;
    case IBV_WR_RDMA_WRITE_WITH_IMM: return op::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE;
    default: return op::RC_SEND_LAST;
  }
}

uint32_t read_packets(uint64_t len, uint32_t pmtu) { return len == 0 ? 1 : uint32_t((len + pmtu - 1) / pmtu); }

// Counts the PSN as a retransmission if it was sent before.
void advance_psn(Qp& qp, uint32_t n) {
  if (psn_lt(qp.req.psn, qp.req.max_psn)) ++qp.counters.retransmitted_pkts;
  qp.req.psn = psn_add(qp.req.psn, n);
  if (psn_lt(qp.req.max_psn, qp.req.psn)) qp.req.max_psn = qp.req.psn;
}

void arm_ack_timer(Qp& qp) {
  if (qp.comp.deadline != kNever) return;
  qp.comp.deadline = qp.eng->now() + ack_timeout_ns(qp.attr.timeout);
  if (qp.comp.deadline < qp.eng->now()) qp.comp.deadline = kNever;  // timeout 0: never
  qp.eng->watch_timer(&qp);
}

// A local protection error: the requester stops here (nothing after it may
// reach the responder) and the WQE completes with the error once
// everything before it has completed; then the QP enters the error state.
void fail_wqe(Qp& qp, SendWqe& w, ibv_wc_status status) {
  w.state = WqeState::failed;
  w.error = status;
  qp.req.offset = 0;
}

// A bind or local invalidate, run when the requester reaches it: it sends
// nothing and takes no PSN. A failure completes it with an error, and the
// QP enters the error state (as rxe: IBV_WC_MW_BIND_ERR for a bind,
// IBV_WC_LOC_QP_OP_ERR for an invalidate).
void run_local_op(Qp& qp, SendWqe& w) {
  if (w.state == WqeState::sent) {  // ran before a rewind: never twice
    ++qp.req.wqe;
    return;
  }
  bool ok;
  if (w.opcode == IBV_WR_BIND_MW) {
    const memory::BindRequest req{w.rkey, w.imm, w.remote_addr, w.compare_add, int(w.swap)};
    ok = memory::bind_window(qp.eng->mrs(), qp.pd, qp.qpn, req);
  } else {
    ok = memory::invalidate(qp.eng->mrs(), qp.pd, w.imm);
  }
  if (!ok) return fail_wqe(qp, w, w.opcode == IBV_WR_BIND_MW ? IBV_WC_MW_BIND_ERR : IBV_WC_LOC_QP_OP_ERR);
  w.state = WqeState::sent;
  ++qp.req.wqe;
}

// A data packet of `len` bytes went out: move the WQE and the PSN on.
bool advance_data(Qp& qp, SendWqe& w, uint32_t len, bool last) {
  w.state = WqeState::in_progress;
  if (last) w.last_psn = qp.req.psn;
  advance_psn(qp, 1);
  qp.req.offset += len;
  if (last) {
    w.state = WqeState::sent;
    ++qp.req.wqe;
    qp.req.offset = 0;
    ++qp.counters.rdma_sends;
  }
  return true;
}

// UC's SEND and WRITE opcodes are RC's with the transport bits 001.
constexpr uint8_t kUcOpcodeBase = op::UC_SEND_FIRST - op::RC_SEND_FIRST;
static_assert(op::UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE == (op::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE | kUcOpcodeBase));

// One SEND or WRITE packet; kUc: UC's opcodes and no AckReq (nothing is
// acknowledged on UC). A template so RC's packet path has no test for it.
template <bool kUc>
bool send_data_packet(Qp& qp, SendWqe& w) {
  const uint32_t pmtu = qp.attr.pmtu;
  const uint64_t left = w.length - qp.req.offset;
  const uint32_t len = uint32_t(left < pmtu ? left : pmtu);
  const bool first = qp.req.offset == 0, last = left <= pmtu;
  PacketSpec spec{uint8_t(data_opcode(w.opcode, first, last) | (kUc ? kUcOpcodeBase : 0)), qp.req.psn, len};
  const OpcodeInfo& info = opcode_info(spec.opcode);
  if constexpr (!kUc) {
    spec.ack_req = cc_ackreq_due(qp, last || ++qp.req.since_ackreq >= qp.eng->config().ack_req_every);
    if (spec.ack_req) qp.req.since_ackreq = 0;
  }
  spec.se = last && (w.flags & IBV_SEND_SOLICITED);
  ExtFields ext;
  ext.reth_va = w.remote_addr;
  ext.reth_rkey = w.rkey;
  ext.reth_dma_len = uint32_t(w.length);
  ext.imm = info.has_ext(Ext::imm_dt) ? w.imm : 0;
  ext.ieth_rkey = info.has_ext(Ext::ieth) ? w.imm : 0;
  if (first) w.first_psn = qp.req.psn;
  // A UC send completes as it leaves, when the buffer is the caller's
  // again: its payload is copied, as UD's is, never sent from the region.
  const uint32_t zc = kUc ? 0 : qp.eng->zero_copy_min();
  uint8_t* src = nullptr;
  memory::Region* mr = zc && len >= zc && !(w.flags & IBV_SEND_INLINE)
                         ? memory::locate(qp.eng->mrs(), qp.pd, qp.sq.sgl(w), qp.req.offset, len, src)
                         : nullptr;
  if (mr != nullptr && qp.eng->zero_copy_from(*mr)) {
    if (!send_zero_copy(qp, spec, ext, *mr, src)) return false;
    return advance_data(qp, w, len, last);
  }
  OutPacket out;
  if (!start_rc_packet(qp, spec, ext, out)) return false;
  if (w.flags & IBV_SEND_INLINE) {
    std::memcpy(out.payload, qp.sq.inline_bytes(w) + qp.req.offset, len);
  } else if (!memory::gather(qp.eng->mrs(), qp.pd, qp.sq.sgl(w), qp.req.offset, out.payload, len)) {
    rte_pktmbuf_free(out.m);
    fail_wqe(qp, w, IBV_WC_LOC_PROT_ERR);
    return true;
  }
  finish_packet(qp, out);
  return advance_data(qp, w, len, last);
}

bool send_read_request(Qp& qp, SendWqe& w) {
  if (w.state == WqeState::posted) {
    w.first_psn = qp.req.psn;
    w.last_psn = psn_add(w.first_psn, read_packets(w.length, qp.attr.pmtu) - 1);
    w.read_received = 0;
  } else {
    // Responses may have arrived since the rewind: start after them.
    qp.req.psn = psn_add(w.first_psn, uint32_t(w.read_received / qp.attr.pmtu));
  }
  // A retry asks only for what has not arrived (rxe does the same).
  const uint64_t left = w.length - w.read_received;
  const PacketSpec spec{op::RC_RDMA_READ_REQUEST, qp.req.psn, 0, /*ack_req=*/true};
  ExtFields ext;
  ext.reth_va = w.remote_addr + w.read_received;
  ext.reth_rkey = w.rkey;
  ext.reth_dma_len = uint32_t(left);
  OutPacket out;
  if (!start_rc_packet(qp, spec, ext, out)) return false;
  finish_packet(qp, out);
  advance_psn(qp, read_packets(left, qp.attr.pmtu));
  w.state = WqeState::sent;
  ++qp.req.wqe;
  return true;
}

bool send_atomic_request(Qp& qp, SendWqe& w) {
  const bool cas = w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP;
  const PacketSpec spec{cas ? op::RC_COMPARE_SWAP : op::RC_FETCH_ADD, qp.req.psn, 0, /*ack_req=*/true};
  ExtFields ext;
  ext.atomic_va = w.remote_addr;
  ext.atomic_rkey = w.rkey;
  ext.atomic_swap_add = cas ? w.swap : w.compare_add;
  ext.atomic_compare = cas ? w.compare_add : 0;
  OutPacket out;
  if (!start_rc_packet(qp, spec, ext, out)) return false;
  w.first_psn = w.last_psn = qp.req.psn;
  finish_packet(qp, out);
  advance_psn(qp, 1);
  w.state = WqeState::sent;
  ++qp.req.wqe;
  return true;
}

// Fence: is a READ or ATOMIC queued before WQE `index` still incomplete?
// (Completed WQEs have left the queue, so any one found is outstanding.)
bool earlier_rd_atomic(const Qp& qp, uint32_t index) {
  for (uint32_t i = qp.sq.tail(); i != index; ++i)
    if (is_rd_atomic(qp.sq.at(i).opcode)) return true;
  return false;
}

// May this WQE start (or continue) now?
bool may_send(Qp& qp, SendWqe& w) {
  if (psn_diff(qp.req.psn, qp.comp.una) >= int32_t(qp.eng->config().max_unacked_psns)) return false;
  if (w.state != WqeState::posted || qp.req.offset != 0) return true;
  if (qp.state == IBV_QPS_SQD) return false;  // draining: finish started work only
  // Fence: wait for the READ/ATOMICs posted before this WQE (credits held
  // by later WQEs that a rewind sent back do not count).
  if ((w.flags & IBV_SEND_FENCE) && earlier_rd_atomic(qp, qp.req.wqe)) return false;
  if (is_rd_atomic(w.opcode) && !w.rd_counted) {
    if (qp.req.rd_atomic >= qp.attr.max_rd_atomic) return false;
    w.rd_counted = true;
    ++qp.req.rd_atomic;
  }
  return true;
}

bool send_one(Qp& qp, SendWqe& w) {
  switch (w.opcode) {
    case IBV_WR_RDMA_READ: return send_read_request(qp, w);
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD: return send_atomic_request(qp, w);
    default: return send_data_packet<false>(qp, w);
  }
}

// UC: packets go out as the TX queue and the pacing gate allow, with no
// window (nothing acknowledges them), and a WQE completes as its last
// packet leaves: UC never retransmits.
void uc_send(Qp& qp) {
  while (qp.req.wqe != qp.sq.head() && qp.eng->tx_has_room()) {
    SendWqe& w = qp.sq.at(qp.req.wqe);
    if (w.state == WqeState::failed) {
      complete_send(qp, w, w.error);
      return move_to_error(qp);
    }
    if (w.state == WqeState::posted && qp.req.offset == 0 && qp.state == IBV_QPS_SQD) break;
    if (is_local_op(w.opcode)) {
      run_local_op(qp, w);
      if (w.state == WqeState::sent) complete_send(qp, w, IBV_WC_SUCCESS);
      continue;
    }
    if (!cc_gate(qp) || !send_data_packet<true>(qp, w)) break;
    if (w.state == WqeState::sent) complete_send(qp, w, IBV_WC_SUCCESS);
  }
}

}  // namespace

void requester_tx(Qp& qp) {
  if (qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) return;
  if (!qp.is_rc()) return qp.is_ud() ? ud_send(qp) : uc_send(qp);
  if (qp.req.rnr_until > qp.eng->now()) return;
  while (qp.req.wqe != qp.sq.head() && qp.eng->tx_has_room()) {
    SendWqe& w = qp.sq.at(qp.req.wqe);
    if (w.state == WqeState::failed || !may_send(qp, w)) break;
    if (is_local_op(w.opcode)) {
      run_local_op(qp, w);
      continue;
    }
    if (!cc_gate(qp) || !send_one(qp, w)) break;
    arm_ack_timer(qp);
  }
  // Window operations with nothing unacknowledged before them complete now.
  complete_local_ops(qp);
  // A failed WQE at the front completes now (nothing before it waits).
  if (!qp.sq.empty() && qp.sq.front().state == WqeState::failed) completer_timer(qp);
}

void requester_rewind(Qp& qp, uint32_t psn) {
  // Only PSNs unacknowledged and already sent in this pass can be sent
  // again; anything else comes from a stale NAK or response.
  if (psn_lt(psn, qp.comp.una) || !psn_lt(psn, qp.req.psn)) return;
  uint32_t i = qp.sq.tail();
  for (; i != qp.req.wqe; ++i) {
    const SendWqe& w = qp.sq.at(i);
    if (is_local_op(w.opcode)) continue;  // sent nothing: nothing to resend
    if (w.state == WqeState::sent && psn_le(psn, w.last_psn)) break;
    if (w.state == WqeState::in_progress && psn_le(w.first_psn, psn)) break;
  }
  // Everything after i is sent again from its start, with the same PSNs.
  const uint32_t end = qp.req.wqe == qp.sq.head() ? qp.req.wqe : qp.req.wqe + 1;
  for (uint32_t j = i + 1; j != end; ++j)
    if (qp.sq.at(j).state != WqeState::failed && !is_local_op(qp.sq.at(j).opcode))
      qp.sq.at(j).state = WqeState::posted;
  SendWqe& w = qp.sq.at(i);
  qp.req.wqe = i;
  qp.req.psn = psn;
  qp.req.since_ackreq = 0;
  qp.req.offset = 0;
  if (is_local_op(w.opcode)) {
    // Not run yet (the requester had stopped at it): it runs in its turn.
  } else if (w.opcode == IBV_WR_RDMA_READ) {
    w.state = WqeState::in_progress;  // keeps first_psn; resends the rest
  } else if (is_rd_atomic(w.opcode)) {
    w.state = WqeState::posted;
  } else {
    qp.req.offset = uint64_t(psn_diff(psn, w.first_psn)) * qp.attr.pmtu;
    w.state = qp.req.offset ? WqeState::in_progress : WqeState::posted;
  }
  qp.eng->schedule(&qp);
}

}  // namespace uroce::transport
