// SPDX-License-Identifier: BSD-3-Clause
// Completer: matches ACKs, NAKs, READ responses and atomic ACKs against the
// send queue (IBA 9.7.5), completes WQEs in order, and decides when the
// requester must go back: on a sequence NAK, on a response that shows a
// gap, on an ACK that passes a READ or ATOMIC still waiting for its
// response (an implied NAK), and on the local ACK timeout.
#include "services.h"
#include "../memory/sge_copy.h"
#include "psn.h"
#include "transport.h"

namespace uroce::transport {
namespace {

using namespace wire;

// The first PSN of the front WQE that has not been answered.
uint32_t resume_psn(const Qp& qp, const SendWqe& w) {
  if (w.opcode != IBV_WR_RDMA_READ) return w.first_psn;
  return psn_add(w.first_psn, uint32_t(w.read_received / qp.attr.pmtu));
}

void restart_timer(Qp& qp) {
  const bool outstanding = !qp.sq.empty() && qp.sq.front().state != WqeState::posted;
  qp.comp.deadline = outstanding ? qp.eng->now() + ack_timeout_ns(qp.attr.timeout) : kNever;
  if (qp.comp.deadline < qp.eng->now()) qp.comp.deadline = kNever;
  if (outstanding) qp.eng->watch_timer(&qp);
}

void progress(Qp& qp) {
  qp.comp.retry_left = qp.attr.retry_cnt;
  qp.comp.rnr_retry_left = qp.attr.rnr_retry;
  restart_timer(qp);
  // The window moved: a turn only for WQEs not yet sent (or a failed one
  // waiting to complete). With every posted WQE on the wire, as in a
  // stream that keeps the queue full, a turn would do nothing but read a
  // QP that thousands of others may have pushed out of the cache.
  if (qp.req.wqe != qp.sq.head()) qp.eng->schedule(&qp);
}

// Completes the front WQE with an error and flushes the rest.
void fail(Qp& qp, ibv_wc_status status) {
  if (!qp.sq.empty()) complete_send(qp, qp.sq.front(), status);
  fail_qp(qp);
}

// Completes SEND/WRITE WQEs whose last PSN is <= psn. Stops at a READ or
// ATOMIC (those complete only with their response) and returns false if a
// WQE that failed locally reached the front (the QP is then in error).
bool ack_through(Qp& qp, uint32_t psn) {
  bool advanced = false;
  while (!qp.sq.empty()) {
    SendWqe& w = qp.sq.front();
    if (w.state == WqeState::failed) {
      fail(qp, w.error);
      return false;
    }
    if (w.state == WqeState::sent && is_local_op(w.opcode)) {
      complete_send(qp, w, IBV_WC_SUCCESS);
      continue;
    }
    if (w.state != WqeState::sent || is_rd_atomic(w.opcode) || !psn_le(w.last_psn, psn)) break;
    qp.comp.una = psn_add(w.last_psn, 1);
    complete_send(qp, w, IBV_WC_SUCCESS);
    advanced = true;
  }
  // An ACK inside a multi-packet SEND/WRITE (AckReq every 64 packets)
  // acknowledges its first packets, sent in full or not yet.
  if (!qp.sq.empty()) {
    const SendWqe& w = qp.sq.front();
    const bool partly = w.state == WqeState::in_progress || w.state == WqeState::sent;
    if (partly && !is_rd_atomic(w.opcode) && psn_le(qp.comp.una, psn) && psn_le(w.first_psn, psn)) {
      qp.comp.una = psn_add(psn, 1);
      advanced = true;
    }
  }
  if (advanced) progress(qp);
  return true;
}

// Where to resend from when the responder says it expects `psn`: a
// READ/ATOMIC before it that is still unanswered lost its response.
uint32_t retry_point(const Qp& qp, uint32_t psn) {
  if (qp.sq.empty()) return psn;
  const SendWqe& w = qp.sq.front();
  if (is_rd_atomic(w.opcode) && w.state != WqeState::posted && psn_lt(resume_psn(qp, w), psn))
    return resume_psn(qp, w);
  return psn;
}

void go_back(Qp& qp, uint32_t psn) {
  ++qp.counters.completer_retry_err;
  requester_rewind(qp, psn);
}

void on_ack(Qp& qp, uint32_t psn) {
  if (!ack_through(qp, psn) || qp.sq.empty()) return;
  const SendWqe& w = qp.sq.front();
  // An ACK past a READ/ATOMIC whose response never came: it was lost.
  if (is_rd_atomic(w.opcode) && w.state != WqeState::posted && psn_le(w.first_psn, psn))
    go_back(qp, resume_psn(qp, w));
}

void on_nak(Qp& qp, uint32_t psn, uint8_t syndrome) {
  // A late copy of a NAK we already acted on (the network duplicated or
  // delayed it) names a PSN that is already acknowledged: ignore it.
  if (psn_lt(psn, qp.comp.una)) return;
  // A NAK acknowledges everything before its PSN.
  if (!ack_through(qp, psn_add(psn, kPsnMask)) || qp.sq.empty()) return;
  const uint8_t value = aeth_value(syndrome);
  if (aeth_type(syndrome) == AethType::rnr_nak) {
    ++qp.counters.rcvd_rnr_err;
    if (qp.comp.rnr_retry_left == 0) {
      ++qp.counters.retry_rnr_exceeded_err;
      return fail(qp, IBV_WC_RNR_RETRY_EXC_ERR);
    }
    if (qp.attr.rnr_retry != 7) --qp.comp.rnr_retry_left;  // 7 = retry forever
    qp.req.rnr_until = qp.eng->now() + rnr_timer_ns(value);
    qp.comp.deadline = kNever;
    qp.eng->watch_timer(&qp);
    return go_back(qp, retry_point(qp, psn));
  }
  switch (NakCode(value)) {
    case NakCode::psn_sequence_error:
      ++qp.counters.rcvd_seq_err;
      return go_back(qp, retry_point(qp, psn));
    case NakCode::invalid_request: ++qp.counters.rcvd_nak; return fail(qp, IBV_WC_REM_INV_REQ_ERR);
    case NakCode::remote_access_error: ++qp.counters.rcvd_nak; return fail(qp, IBV_WC_REM_ACCESS_ERR);
    case NakCode::remote_operational_error: ++qp.counters.rcvd_nak; return fail(qp, IBV_WC_REM_OP_ERR);
    // Invalid RD request (RD only) and the reserved codes: as rxe, an
    // operational error of the remote end.
    default: ++qp.counters.rcvd_nak; return fail(qp, IBV_WC_REM_OP_ERR);
  }
}

// An AETH syndrome of the reserved type 10b, or any but ACK on a READ
// response or atomic ACK, is neither an ACK nor a NAK, and never a reason
// to resend: as rxe, the WQE it answers fails and the QP with it (the
// status says the response was bad). Like any response it first
// acknowledges what was sent before its PSN.
void on_bad_syndrome(Qp& qp, uint32_t psn) {
  if (psn_lt(psn, qp.comp.una)) return;  // stale
  if (!ack_through(qp, psn_add(psn, kPsnMask)) || qp.sq.empty() || qp.sq.front().state == WqeState::posted) return;
  fail(qp, IBV_WC_BAD_RESP_ERR);
}

// Which READ response opcode packet `index` of `count` must carry.
uint8_t expected_read_opcode(uint32_t index, uint32_t count) {
  if (count == 1) return op::RC_RDMA_READ_RESPONSE_ONLY;
  if (index == 0) return op::RC_RDMA_READ_RESPONSE_FIRST;
  return index + 1 == count ? op::RC_RDMA_READ_RESPONSE_LAST : op::RC_RDMA_READ_RESPONSE_MIDDLE;
}

void on_read_response(Qp& qp, const PacketView& pkt) {
  const uint32_t psn = pkt.bth().psn();
  if (!ack_through(qp, psn_add(psn, kPsnMask)) || qp.sq.empty()) return;
  SendWqe& w = qp.sq.front();
  if (w.opcode != IBV_WR_RDMA_READ || w.state == WqeState::posted) return;  // stale
  const uint32_t expected = resume_psn(qp, w);
  if (psn_lt(psn, expected) || psn_lt(w.last_psn, psn)) return;  // duplicate or not ours
  if (psn != expected) return go_back(qp, expected);              // a response was lost
  const uint32_t pmtu = qp.attr.pmtu;
  const uint32_t count = w.length == 0 ? 1 : uint32_t((w.length + pmtu - 1) / pmtu);
  const uint32_t index = uint32_t(psn_diff(psn, w.first_psn));
  const uint64_t want = std::min<uint64_t>(pmtu, w.length - w.read_received);
  if (pkt.bth().opcode() != expected_read_opcode(index, count) || pkt.payload_len != want)
    return fail(qp, IBV_WC_BAD_RESP_ERR);
  if (!memory::scatter(qp.eng->mrs(), qp.pd, qp.sq.sgl(w), w.read_received, pkt.payload, pkt.payload_len))
    return fail(qp, IBV_WC_LOC_PROT_ERR);
  w.read_received += pkt.payload_len;
  qp.comp.una = psn_add(psn, 1);
  if (index + 1 == count) complete_send(qp, w, IBV_WC_SUCCESS);
  progress(qp);
}

void on_atomic_ack(Qp& qp, const PacketView& pkt) {
  const uint32_t psn = pkt.bth().psn();
  if (!ack_through(qp, psn_add(psn, kPsnMask)) || qp.sq.empty()) return;
  SendWqe& w = qp.sq.front();
  const bool atomic = w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
  if (!atomic || w.state != WqeState::sent || w.first_psn != psn) return;  // stale
  const uint64_t orig = pkt.atomic_ack().orig();  // stored in host order, as verbs does
  if (!memory::scatter(qp.eng->mrs(), qp.pd, qp.sq.sgl(w), 0, reinterpret_cast<const uint8_t*>(&orig), 8))
    return fail(qp, IBV_WC_LOC_PROT_ERR);
  qp.comp.una = psn_add(psn, 1);
  complete_send(qp, w, IBV_WC_SUCCESS);
  progress(qp);
}

}  // namespace

void completer_rx(Qp& qp, const PacketView& pkt) {
  if (qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) return;
  const uint32_t psn = pkt.bth().psn();
  // Only PSNs in [una - 2^23, max_psn) can answer something we sent.
  if (!psn_lt(psn, qp.req.max_psn)) return;
  ++qp.counters.rcvd_pkts;
  const uint8_t opcode = pkt.bth().opcode();
  if (opcode == op::RC_ACKNOWLEDGE) {
    const uint8_t syn = pkt.aeth().syndrome();
    switch (aeth_type(syn)) {
      case AethType::ack: return on_ack(qp, psn);
      case AethType::reserved: return on_bad_syndrome(qp, psn);
      default: return on_nak(qp, psn, syn);
    }
  }
  if (pkt.op->has_ext(Ext::aeth) && aeth_type(pkt.aeth().syndrome()) != AethType::ack) return on_bad_syndrome(qp, psn);
  if (opcode == op::RC_ATOMIC_ACKNOWLEDGE) return on_atomic_ack(qp, pkt);
  if (pkt.op->has(opf::read | opf::response)) return on_read_response(qp, pkt);
}

void complete_local_ops(Qp& qp) {
  while (!qp.sq.empty() && qp.sq.front().state == WqeState::sent && is_local_op(qp.sq.front().opcode))
    complete_send(qp, qp.sq.front(), IBV_WC_SUCCESS);
}

void completer_timer(Qp& qp) {
  if (qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) return;
  const uint64_t now = qp.eng->now();
  if (!qp.sq.empty() && qp.sq.front().state == WqeState::failed) {
    fail(qp, qp.sq.front().error);
    return;
  }
  if (qp.req.rnr_until != 0 && now >= qp.req.rnr_until) {
    qp.req.rnr_until = 0;
    restart_timer(qp);
    qp.eng->schedule(&qp);
  }
  if (qp.comp.deadline == kNever || now < qp.comp.deadline) return;
  if (qp.sq.empty() || qp.sq.front().state == WqeState::posted) {
    qp.comp.deadline = kNever;
    return;
  }
  ++qp.counters.local_ack_timeout_err;
  if (qp.comp.retry_left == 0) {
    ++qp.counters.retry_exceeded_err;
    return fail(qp, IBV_WC_RETRY_EXC_ERR);
  }
  --qp.comp.retry_left;
  qp.comp.deadline = now + ack_timeout_ns(qp.attr.timeout);
  qp.eng->watch_timer(&qp);
  go_back(qp, qp.comp.una);
}

}  // namespace uroce::transport
