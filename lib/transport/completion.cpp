// SPDX-License-Identifier: BSD-3-Clause
#include "services.h"
#include "transport.h"

namespace uroce::transport {

ibv_wc_opcode wc_opcode(ibv_wr_opcode op) {
  switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD: return IBV_WC_FETCH_ADD;
    case IBV_WR_BIND_MW: return IBV_WC_BIND_MW;
    case IBV_WR_LOCAL_INV: return IBV_WC_LOCAL_INV;
    default: return IBV_WC_SEND;
  }
}

namespace {

void post_event(Qp& qp, ibv_event_type type) {
  AsyncEvent ev;
  ev.event_type = type;
  ev.qp = qp.owner;
  qp.eng->post_async_event(ev);
}

// The first completion that found the CQ full (IBV_EVENT_CQ_ERR).
[[gnu::cold]] void cq_overflowed(Qp& qp, Cq& cq) {
  AsyncEvent ev;
  ev.event_type = IBV_EVENT_CQ_ERR;
  ev.cq = cq.owner();
  qp.eng->post_async_event(ev);
}

void flush_recv(Qp& qp, const RecvQueue& rq, const RecvWqe& wqe) {
  ibv_wc wc{};
  wc.wr_id = wqe.wr_id;
  wc.status = IBV_WC_WR_FLUSH_ERR;
  wc.opcode = IBV_WC_RECV;
  wc.qp_num = qp.qpn;
  complete_recv(qp, wc);
  release_sges(qp, rq.sgl(wqe));
}

}  // namespace

void release_sges(Qp& qp, const SgeList& sgl) {
  for (int i = 0; i < sgl.num; ++i)
    if (memory::Region* mr = qp.eng->mrs().find(sgl.sge[i].lkey)) memory::release(*mr);
}

void complete_send(Qp& qp, SendWqe& wqe, ibv_wc_status status) {
  if (wqe.signaled || status != IBV_WC_SUCCESS) {
    ibv_wc wc{};
    wc.wr_id = wqe.wr_id;
    wc.status = status;
    wc.opcode = wc_opcode(wqe.opcode);
    wc.qp_num = qp.qpn;
    if (wqe.opcode == IBV_WR_RDMA_READ) wc.byte_len = uint32_t(wqe.length);
    if (wqe.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wqe.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) wc.byte_len = 8;
    if (qp.scq->push(wc)) [[unlikely]]
      cq_overflowed(qp, *qp.scq);
  }
  release_sges(qp, qp.sq.sgl(wqe));  // none kept for an inline send
  if (wqe.rd_counted) {
    wqe.rd_counted = false;
    --qp.req.rd_atomic;
  }
  wqe.state = WqeState::done;
  const uint32_t next_psn = (wqe.last_psn + 1) & 0xFFFFFF;
  qp.sq.pop();
  // It completed while the requester was about to send it again (its
  // responses overtook a rewind): move the requester past it.
  if (int32_t(qp.req.wqe - qp.sq.tail()) < 0) {
    qp.req.wqe = qp.sq.tail();
    qp.req.offset = 0;
    if (int32_t((next_psn - qp.req.psn) << 8) > 0) qp.req.psn = next_psn;
  }
}


void complete_recv(Qp& qp, const ibv_wc& wc, bool solicited) {
  if (qp.rcq->push(wc, solicited)) [[unlikely]]
    cq_overflowed(qp, *qp.rcq);
}

void fail_qp(Qp& qp) {
  if (qp.state == IBV_QPS_ERR) return move_to_error(qp);
  post_event(qp, IBV_EVENT_QP_FATAL);
  enter_error(qp);
}

void enter_error(Qp& qp) {
  // A QP on an SRQ takes no more of its WQEs.
  if (qp.srq != nullptr) post_event(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
  move_to_error(qp);
}

void move_to_error(Qp& qp) {
  qp.state = IBV_QPS_ERR;
  // Both timers go: an RNR back-off left armed would be due on every poll
  // of the engine forever (completer_timer ignores a QP in ERR).
  qp.comp.deadline = kNever;
  qp.req.rnr_until = 0;
  while (!qp.sq.empty()) complete_send(qp, qp.sq.front(), IBV_WC_WR_FLUSH_ERR);
  qp.req.wqe = qp.sq.tail();
  qp.req.offset = 0;
  if (qp.resp.have_recv) {
    flush_recv(qp, qp.recv_queue(), qp.resp.recv);
    qp.resp.have_recv = false;
  }
  // An SRQ's WQEs belong to the SRQ, not to this QP: they stay.
  if (qp.srq == nullptr)
    while (!qp.rq.wq.empty()) {
      flush_recv(qp, qp.rq, qp.rq.wq.front());
      qp.rq.wq.pop();
    }
  while (!qp.resp.out.empty()) qp.resp.out.pop();
}

}  // namespace uroce::transport
