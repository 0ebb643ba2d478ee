// SPDX-License-Identifier: BSD-3-Clause
#include "post.h"

#include <cerrno>
#include <cstring>

#include "services.h"
#include "transport.h"
#include "uroce/verbs/address_handle.h"
#include "uroce/verbs/memory_region.h"
#include "uroce/verbs/memory_window.h"

namespace uroce::transport {
namespace {

bool rc_opcode_ok(ibv_wr_opcode op) {
  switch (op) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_SEND_WITH_INV:
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_BIND_MW:
    case IBV_WR_LOCAL_INV: return true;
    default: return false;
  }
}

// UC carries SEND and RDMA WRITE only: no READ or atomics (nothing comes
// back), and no SEND with invalidate (IBA defines no UC opcode for it).
// Memory window operations are local: UC has them as RC does.
bool uc_opcode_ok(ibv_wr_opcode op) {
  return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE ||
         op == IBV_WR_RDMA_WRITE_WITH_IMM || is_local_op(op);
}

bool opcode_ok(const Qp& qp, ibv_wr_opcode op) {
  if (qp.is_rc()) return rc_opcode_ok(op);
  if (qp.is_uc()) return uc_opcode_ok(op);
  return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
}

bool is_atomic(ibv_wr_opcode op) { return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD; }

uint64_t total_length(const ibv_sge* sg, int n) {
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += sg[i].length;
  return total;
}


// The WR's SGEs into the slab; returns the bytes they describe.
uint64_t copy_sges(ibv_sge* into, const ibv_sge* sg, int n) {
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) {
    into[i] = sg[i];
    total += sg[i].length;
  }
  return total;
}

void acquire_sges(EngineServices& eng, const SgeList& sgl) {
  for (int i = 0; i < sgl.num; ++i)
    if (memory::Region* mr = eng.mrs().find(sgl.sge[i].lkey)) memory::acquire(*mr);
}

void fill_ud_dest(Qp& qp, const SendWr& wr, UdDest& d) {
  const AddressHandle& ah = *wr.wr.ud.ah;
  d.gid = ah.dgid();
  d.sgid = ah.sgid();
  d.mac = ah.dmac();
  d.ttl = ah.attr().grh.hop_limit ? ah.attr().grh.hop_limit : 64;
  d.dscp = ah.attr().grh.traffic_class >> 2;
  d.sl = ah.attr().sl;
  d.qpn = wr.wr.ud.remote_qpn;
  d.qkey = wr.wr.ud.remote_qkey;
  // Decided once per WR here, so the engine's TX path need not look at the
  // frame's MAC.
  d.to_self = d.mac == qp.eng->mac();
}

void fill_local_op(const SendWr& wr, SendWqe& w) {
  w.num_sge = 0;
  w.length = 0;
  if (wr.opcode == IBV_WR_LOCAL_INV) {
    w.imm = wr.invalidate_rkey;
    return;
  }
  const auto& b = wr.bind_mw;
  w.rkey = b.mw->handle() | (b.rkey & 0xFFu);
  w.imm = b.bind_info.mr ? b.bind_info.mr->lkey() : 0;
  w.remote_addr = b.bind_info.addr;
  w.compare_add = b.bind_info.length;
  w.swap = b.bind_info.mw_access_flags;
}

// check_send has bounded num_sge by max_send_sge and an inline length by
// max_inline_data: both fit the slot's part of the slab.
void fill_wqe(Qp& qp, const SendWr& wr, SendWqe& w) {
  w.state = WqeState::posted;
  w.read_received = 0;
  w.rd_counted = false;
  w.error = IBV_WC_SUCCESS;
  w.wr_id = wr.wr_id;
  w.opcode = wr.opcode;
  w.flags = uint8_t(wr.send_flags);
  // verbs passes the immediate in network order
  w.imm = wr.opcode == IBV_WR_SEND_WITH_INV ? wr.invalidate_rkey : __builtin_bswap32(wr.imm_data);
  w.signaled = qp.init.sq_sig_all || (wr.send_flags & IBV_SEND_SIGNALED);
  if (is_local_op(wr.opcode)) return fill_local_op(wr, w);
  if (is_atomic(wr.opcode)) {
    w.remote_addr = wr.wr.atomic.remote_addr;
    w.rkey = wr.wr.atomic.rkey;
    w.compare_add = wr.wr.atomic.compare_add;
    w.swap = wr.wr.atomic.swap;
  } else {
    w.remote_addr = wr.wr.rdma.remote_addr;
    w.rkey = wr.wr.rdma.rkey;
  }
  if (qp.is_ud()) fill_ud_dest(qp, wr, qp.sq.ud(w));
  if (wr.send_flags & IBV_SEND_INLINE) {
    // Inline data is read from the caller's buffers now; no key needed, and
    // no SGE kept.
    uint8_t* to = qp.sq.inline_bytes(w);
    uint32_t off = 0;
    for (int i = 0; i < wr.num_sge; ++i) {
      // An empty SGE may name no memory at all (address 0): memcpy must
      // not see it.
      if (wr.sg_list[i].length == 0) continue;
      std::memcpy(to + off, reinterpret_cast<const void*>(uintptr_t(wr.sg_list[i].addr)), wr.sg_list[i].length);
      off += wr.sg_list[i].length;
    }
    w.num_sge = 0;
    w.length = off;
  } else {
    w.num_sge = uint16_t(wr.num_sge);
    w.length = uint32_t(copy_sges(qp.sq.sges(w), wr.sg_list, wr.num_sge));
    acquire_sges(*qp.eng, qp.sq.sgl(w));
  }
}

}  // namespace

int check_send(const Qp& qp, const SendWr& wr) {
  const bool rc = qp.is_rc();
  if (!opcode_ok(qp, wr.opcode)) return EINVAL;
  if (wr.opcode == IBV_WR_BIND_MW) {
    // The window's and region's own rules are checked when the bind runs
    // (a failure completes it with IBV_WC_MW_BIND_ERR); what the post can
    // see is whether it names a window, and a region for a range.
    const auto& b = wr.bind_mw;
    return b.mw == nullptr || (b.bind_info.mr == nullptr && (b.bind_info.addr || b.bind_info.length)) ? EINVAL : 0;
  }
  if (wr.opcode == IBV_WR_LOCAL_INV) return 0;
  if (wr.num_sge < 0 || uint32_t(wr.num_sge) > qp.init.cap.max_send_sge || (wr.num_sge && !wr.sg_list))
    return EINVAL;
  const uint64_t len = total_length(wr.sg_list, wr.num_sge);
  const bool rd_atomic = wr.opcode == IBV_WR_RDMA_READ || is_atomic(wr.opcode);
  if (wr.send_flags & IBV_SEND_INLINE)
    if (rd_atomic || len > qp.init.cap.max_inline_data) return EINVAL;
  if (is_atomic(wr.opcode) && (wr.num_sge != 1 || wr.sg_list[0].length != 8)) return EINVAL;
  if (rc && rd_atomic && qp.attr.max_rd_atomic == 0) return EINVAL;
  if (len > qp.eng->config().limits.max_msg_sz) return EINVAL;
  if (qp.is_ud() && (wr.wr.ud.ah == nullptr || &wr.wr.ud.ah->pd() != qp.pd || len > qp.attr.pmtu)) return EINVAL;
  return 0;
}

int check_send_chain(const Qp& qp, const SendWr* wr, const SendWr** bad) {
  uint32_t room = qp.sq.capacity() - qp.sq.size();
  for (; wr != nullptr; wr = wr->next) {
    int err = 0;
    if (qp.state == IBV_QPS_RESET || qp.state == IBV_QPS_INIT || qp.state == IBV_QPS_RTR)
      err = EINVAL;
    else if (room == 0)
      err = ENOMEM;
    else
      err = check_send(qp, *wr);
    if (err) {
      if (bad) *bad = wr;
      return err;
    }
    --room;
  }
  return 0;
}

int post_send(Qp& qp, const SendWr* wr, const SendWr** bad) {
  const bool idle = qp.sq.empty();
  for (; wr != nullptr; wr = wr->next) {
    int err = 0;
    if (qp.state == IBV_QPS_RESET || qp.state == IBV_QPS_INIT || qp.state == IBV_QPS_RTR)
      err = EINVAL;
    else if (qp.sq.full())
      err = ENOMEM;
    else
      err = check_send(qp, *wr);
    if (err) {
      if (bad) *bad = wr;
      qp.eng->schedule(&qp);  // the WRs before it are posted and must go
      return err;
    }
    fill_wqe(qp, *wr, qp.sq.push());
    // Work posted to a QP in error completes at once, flushed.
    if (qp.state == IBV_QPS_ERR) move_to_error(qp);
  }
  // An idle QP's doorbell sends at once (a ping-pong's answer needs no
  // extra engine round); posts behind outstanding work batch until the poll.
  if (idle && qp.state == IBV_QPS_RTS) qp.eng->send_now(&qp);
  else qp.eng->schedule(&qp);
  return 0;
}

int post_recv_to(RecvQueue& rq, EngineServices& eng, const RecvWr& wr) {
  if (wr.num_sge < 0 || uint32_t(wr.num_sge) > rq.max_sge || (wr.num_sge && !wr.sg_list)) return EINVAL;
  if (rq.wq.full()) return ENOMEM;
  // The slot keeps its block (RecvQueue::take): only the header is new.
  RecvWqe& w = rq.wq.push();
  w.wr_id = wr.wr_id;
  w.num_sge = uint32_t(wr.num_sge);
  w.total = copy_sges(rq.sges(w), wr.sg_list, wr.num_sge);
  acquire_sges(eng, rq.sgl(w));
  return 0;
}

int post_recv(Qp& qp, const RecvWr* wr, const RecvWr** bad) {
  for (; wr != nullptr; wr = wr->next) {
    int err = qp.state == IBV_QPS_RESET || qp.srq != nullptr ? EINVAL : post_recv_to(qp.rq, *qp.eng, *wr);
    if (err) {
      if (bad) *bad = wr;
      return err;
    }
    if (qp.state == IBV_QPS_ERR) move_to_error(qp);
  }
  return 0;
}

RecvQueue& Qp::recv_queue() { return srq ? *srq : rq; }

void attach_recv(Qp& qp) {
  if (qp.is_connected()) qp.resp.recv.block = qp.recv_queue().add_holder();
}

void detach_recv(Qp& qp) {
  if (qp.is_connected()) qp.recv_queue().drop_holder(qp.resp.recv.block);
}

void recv_taken(Qp& qp) {
  if (qp.srq == nullptr) return;
  RecvQueue& q = *qp.srq;
  if (q.limit == 0 || q.wq.size() >= q.limit) return;
  q.limit = 0;  // one event per arming, as verbs says
  AsyncEvent ev;
  ev.event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
  ev.srq = q.owner;
  qp.eng->post_async_event(ev);
}

}  // namespace uroce::transport
