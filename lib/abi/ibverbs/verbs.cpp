// SPDX-License-Identifier: BSD-3-Clause
// Protection domains, memory regions, CQs, QPs, SRQs and address handles
// over uroce's verbs objects, and the data path ops that verbs.h's inline
// ibv_post_send / ibv_post_recv / ibv_poll_cq call through ibv_context.
#include <errno.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "exports.h"
#include "shim.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace uroce::abi {
namespace {

// Work requests convert to uroce's in chunks on the stack: no allocation
// per post.
constexpr int kChunk = 16;

// A modify to RTR or an address handle waits while the engine thread
// resolves the peer's MAC (EHOSTUNREACH until then), as long as the
// device's neighbour timeout.
constexpr auto kResolveWait = std::chrono::milliseconds(3500);

template <class Fn>
int retry_unreachable(Fn&& fn) {
  const auto until = std::chrono::steady_clock::now() + kResolveWait;
  for (;;) {
    const int rc = fn();
    if (rc != EHOSTUNREACH || std::chrono::steady_clock::now() >= until) return rc;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void to_send_wr(const ibv_send_wr& in, SendWr& out) {
  out.wr_id = in.wr_id;
  out.next = nullptr;
  out.sg_list = in.sg_list;
  out.num_sge = in.num_sge;
  out.opcode = in.opcode;
  out.send_flags = in.send_flags;
  out.imm_data = in.imm_data;
  out.invalidate_rkey = in.invalidate_rkey;
  switch (in.opcode) {
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      out.wr.atomic.remote_addr = in.wr.atomic.remote_addr;
      out.wr.atomic.compare_add = in.wr.atomic.compare_add;
      out.wr.atomic.swap = in.wr.atomic.swap;
      out.wr.atomic.rkey = in.wr.atomic.rkey;
      break;
    case IBV_WR_BIND_MW: {
      const ibv_mw_bind_info& b = in.bind_mw.bind_info;
      out.bind_mw.mw = in.bind_mw.mw ? reinterpret_cast<Mw*>(in.bind_mw.mw)->impl.get() : nullptr;
      out.bind_mw.rkey = in.bind_mw.rkey;
      out.bind_mw.bind_info = {b.mr ? reinterpret_cast<Mr*>(b.mr)->impl.get() : nullptr, b.addr, b.length,
                               b.mw_access_flags};
      break;
    }
    default:
      out.wr.rdma.remote_addr = in.wr.rdma.remote_addr;
      out.wr.rdma.rkey = in.wr.rdma.rkey;
      break;
  }
}

void to_ud_wr(const ibv_send_wr& in, SendWr& out) {
  out.wr.ud.ah = in.wr.ud.ah ? reinterpret_cast<Ah*>(in.wr.ud.ah)->impl.get() : nullptr;
  out.wr.ud.remote_qpn = in.wr.ud.remote_qpn;
  out.wr.ud.remote_qkey = in.wr.ud.remote_qkey;
}

int post_send_op(ibv_qp* q, ibv_send_wr* wr, ibv_send_wr** bad) {
  Qp* qp = qp_of(q);
  const bool ud = q->qp_type == IBV_QPT_UD;
  std::lock_guard<std::mutex> lock(qp->post_mutex);
  while (wr) {
    SendWr chunk[kChunk];
    ibv_send_wr* src[kChunk];
    int n = 0;
    for (; wr && n < kChunk; wr = wr->next, ++n) {
      src[n] = wr;
      to_send_wr(*wr, chunk[n]);
      if (ud) to_ud_wr(*wr, chunk[n]);
      if (n) chunk[n - 1].next = &chunk[n];
    }
    const SendWr* failed = nullptr;
    const int rc = qp->impl->post_send(chunk, &failed);
    if (rc) {
      *bad = failed ? src[failed - chunk] : src[0];
      return rc;
    }
  }
  return 0;
}

template <class Post>
int post_recv_chunks(ibv_recv_wr* wr, ibv_recv_wr** bad, Post&& post) {
  while (wr) {
    RecvWr chunk[kChunk];
    ibv_recv_wr* src[kChunk];
    int n = 0;
    for (; wr && n < kChunk; wr = wr->next, ++n) {
      src[n] = wr;
      chunk[n].wr_id = wr->wr_id;
      chunk[n].next = nullptr;
      chunk[n].sg_list = wr->sg_list;
      chunk[n].num_sge = wr->num_sge;
      if (n) chunk[n - 1].next = &chunk[n];
    }
    const RecvWr* failed = nullptr;
    const int rc = post(chunk, &failed);
    if (rc) {
      *bad = failed ? src[failed - chunk] : src[0];
      return rc;
    }
  }
  return 0;
}

int post_recv_op(ibv_qp* q, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* qp = qp_of(q);
  std::lock_guard<std::mutex> lock(qp->post_mutex);
  return post_recv_chunks(wr, bad, [&](const RecvWr* c, const RecvWr** f) { return qp->impl->post_recv(c, f); });
}

// SRQ posts are control calls in threaded mode (the engine parks).
int post_srq_recv_op(ibv_srq* s, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Srq* srq = srq_of(s);
  std::lock_guard<std::mutex> lock(ctx_of(s->context)->rec->control);
  return post_recv_chunks(wr, bad, [&](const RecvWr* c, const RecvWr** f) { return srq->impl->post_recv(c, f); });
}

int poll_cq_op(ibv_cq* c, int n, ibv_wc* wc) {
  Cq* cq = cq_of(c);
  int got;
  bool yield;
  {
    std::lock_guard<std::mutex> lock(cq->poll_mutex);
    got = cq->impl->poll(n, wc);
    yield = cq->after_poll(got != 0);
  }
  if (yield) sched_yield();  // not holding the CQ from other pollers
  return got;
}

// A CQ without a channel has nowhere to report: arming it does nothing,
// and succeeds, as rdma-core's providers (rxe, mlx5) answer.
int req_notify_cq_op(ibv_cq* c, int solicited_only) {
  return c->channel ? cq_of(c)->impl->req_notify(solicited_only != 0) : 0;
}

Context& ctx_of_pd(ibv_pd* p) { return *ctx_of(p->context); }

void fill_qp_cap(const QueuePair& qp, ibv_qp_cap& cap) {
  ibv_qp_attr attr{};
  QpInitAttr init;
  if (qp.query(attr, IBV_QP_CAP, init) == 0) cap = init.cap;
}

}  // namespace

Cq* create_cq(ibv_context* c, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector) {
  Context* ctx = ctx_of(c);
  Channel* ch = channel ? channel_of(channel) : nullptr;
  auto* cq = new Cq;
  int err = 0;
  {
    std::lock_guard<std::mutex> lock(ctx->rec->control);
    cq->impl = ctx->device().create_cq(cqe, ch ? ch->impl.get() : nullptr, comp_vector, err);
    if (cq->impl) {
      ctx->rec->cqs.push_back(cq);
      if (ch) ++channel->refcnt;
    }
  }
  if (!cq->impl) return delete cq, errno = err ? err : ENOMEM, nullptr;
  if (ch) {
    std::lock_guard<std::mutex> lock(ch->cqs_mutex);
    ch->cqs.push_back(cq);
  }
  cq->cq.context = c;
  cq->cq.channel = channel;
  cq->cq.comp_events_completed = 0;
  cq->cq.async_events_completed = 0;
  cq->cq.cq_context = cq_context;
  cq->cq.cqe = static_cast<int>(cq->impl->capacity());
  pthread_mutex_init(&cq->cq.mutex, nullptr);
  pthread_cond_init(&cq->cq.cond, nullptr);
  return cq;
}

Qp* create_qp(ibv_pd* p, ibv_qp_init_attr* init) {
  if (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UC && init->qp_type != IBV_QPT_UD)
    return errno = EOPNOTSUPP, nullptr;
  if (!init->send_cq || !init->recv_cq) return errno = EINVAL, nullptr;
  QpInitAttr attr;
  attr.send_cq = cq_of(init->send_cq)->impl.get();
  attr.recv_cq = cq_of(init->recv_cq)->impl.get();
  attr.srq = init->srq ? srq_of(init->srq)->impl.get() : nullptr;
  attr.cap = init->cap;
  attr.qp_type = init->qp_type;
  attr.sq_sig_all = init->sq_sig_all;
  auto* qp = new Qp;
  int err = 0;
  {
    std::lock_guard<std::mutex> lock(ctx_of_pd(p).rec->control);
    qp->impl = pd_of(p)->impl->create_qp(attr, err);
    if (qp->impl) {
      fill_qp_cap(*qp->impl, init->cap);
      ctx_of_pd(p).rec->qps.push_back(qp);
    }
  }
  if (!qp->impl) return delete qp, errno = err ? err : ENOMEM, nullptr;
  ibv_qp& q = qp->qp;
  q.context = p->context;
  q.qp_context = init->qp_context;
  q.pd = p;
  q.send_cq = init->send_cq;
  q.recv_cq = init->recv_cq;
  q.srq = init->srq;
  q.qp_num = qp->impl->qp_num();
  q.handle = q.qp_num;
  q.state = IBV_QPS_RESET;
  q.qp_type = init->qp_type;
  q.events_completed = 0;
  pthread_mutex_init(&q.mutex, nullptr);
  pthread_cond_init(&q.cond, nullptr);
  return qp;
}

// Memory windows: verbs.h's inline ibv_alloc_mw / ibv_bind_mw /
// ibv_dealloc_mw call these through the context's ops.
ibv_mw* alloc_mw_op(ibv_pd* p, ibv_mw_type type) {
  auto* mw = new Mw;
  int err = 0;
  {
    std::lock_guard<std::mutex> lock(ctx_of_pd(p).rec->control);
    mw->impl = pd_of(p)->impl->alloc_mw(type, err);
  }
  if (!mw->impl) return delete mw, errno = err ? err : ENOMEM, nullptr;
  mw->mw.context = p->context;
  mw->mw.pd = p;
  mw->mw.rkey = mw->impl->rkey();
  mw->mw.handle = mw->impl->handle() >> 8;
  mw->mw.type = type;
  return &mw->mw;
}

int dealloc_mw_op(ibv_mw* m) {
  if (exited()) return 0;
  auto* mw = reinterpret_cast<Mw*>(m);
  {
    std::lock_guard<std::mutex> lock(ctx_of(m->context)->rec->control);
    if (const int rc = mw->impl->pd().dealloc_mw(mw->impl)) return rc;
  }
  delete mw;
  return 0;
}

// verbs.h has checked the window's type and the region's PD. As rxe's
// provider: the bind posts a BIND_MW work request under the window's next
// key, which ibv_mw.rkey shows once the post succeeds.
int bind_mw_op(ibv_qp* q, ibv_mw* m, ibv_mw_bind* bind) {
  const ibv_mw_bind_info& b = bind->bind_info;
  if (b.mw_access_flags & IBV_ACCESS_ZERO_BASED) return EINVAL;
  MwBind mb;
  mb.wr_id = bind->wr_id;
  mb.send_flags = bind->send_flags;
  mb.bind_info = {b.mr ? reinterpret_cast<Mr*>(b.mr)->impl.get() : nullptr, b.addr, b.length, b.mw_access_flags};
  auto* mw = reinterpret_cast<Mw*>(m);
  Qp* qp = qp_of(q);
  std::lock_guard<std::mutex> lock(qp->post_mutex);
  const int rc = qp->impl->bind_mw(*mw->impl, mb);
  if (rc == 0) m->rkey = mw->impl->rkey();
  return rc;
}

void fill_data_ops(ibv_context_ops& ops) {
  ops.alloc_mw = alloc_mw_op;
  ops.bind_mw = bind_mw_op;
  ops.dealloc_mw = dealloc_mw_op;
  ops.post_send = post_send_op;
  ops.post_recv = post_recv_op;
  ops.post_srq_recv = post_srq_recv_op;
  ops.poll_cq = poll_cq_op;
  ops.req_notify_cq = req_notify_cq_op;
}

}  // namespace uroce::abi

using namespace uroce;
using namespace uroce::abi;

extern "C" {

UROCE_V11(ibv_alloc_pd) ibv_pd* uroce_v11_ibv_alloc_pd(ibv_context* c) {
  Context* ctx = ctx_of(c);
  auto* pd = new Pd;
  {
    std::lock_guard<std::mutex> lock(ctx->rec->control);
    pd->impl = ctx->device().alloc_pd();
  }
  if (!pd->impl) return delete pd, errno = ENOMEM, nullptr;
  pd->pd.context = c;
  pd->pd.handle = pd->impl->handle();
  return &pd->pd;
}

UROCE_V11(ibv_dealloc_pd) int uroce_v11_ibv_dealloc_pd(ibv_pd* p) {
  if (exited()) return 0;
  Pd* pd = pd_of(p);
  {
    std::lock_guard<std::mutex> lock(ctx_of_pd(p).rec->control);
    // As Linux: a PD with objects in it stays, and says so.
    if (pd->impl->in_use()) return EBUSY;
    pd->impl.reset();
  }
  delete pd;
  return 0;
}

UROCE_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* p, void* addr, size_t length, uint64_t iova, unsigned int access) {
  // The optional flags (relaxed ordering) are hints a device may ignore.
  const int flags = static_cast<int>(access & ~unsigned(IBV_ACCESS_OPTIONAL_RANGE));
  auto* mr = new Mr;
  int err = 0;
  {
    std::lock_guard<std::mutex> lock(ctx_of_pd(p).rec->control);
    mr->impl = pd_of(p)->impl->reg_mr_iova(addr, length, iova, flags, err);
  }
  if (!mr->impl) return delete mr, errno = err ? err : ENOMEM, nullptr;
  mr->mr.context = p->context;
  mr->mr.pd = p;
  mr->mr.addr = addr;
  mr->mr.length = length;
  mr->mr.lkey = mr->impl->lkey();
  mr->mr.rkey = mr->impl->rkey();
  return &mr->mr;
}

UROCE_V11(ibv_reg_mr) ibv_mr* uroce_v11_ibv_reg_mr(ibv_pd* p, void* addr, size_t length, int access) {
  return ibv_reg_mr_iova2(p, addr, length, reinterpret_cast<uintptr_t>(addr), static_cast<unsigned>(access));
}

UROCE_EXPORT ibv_mr* ibv_reg_mr_iova(ibv_pd* p, void* addr, size_t length, uint64_t iova, int access) {
  return ibv_reg_mr_iova2(p, addr, length, iova, static_cast<unsigned>(access));
}

UROCE_V11(ibv_dereg_mr) int uroce_v11_ibv_dereg_mr(ibv_mr* m) {
  if (exited()) return 0;
  auto* mr = reinterpret_cast<Mr*>(m);
  int rc;
  {
    std::lock_guard<std::mutex> lock(ctx_of(m->context)->rec->control);
    rc = mr->impl->pd().dereg_mr(mr->impl);
  }
  if (rc) return rc;
  delete mr;
  return 0;
}

UROCE_V11(ibv_create_cq) ibv_cq* uroce_v11_ibv_create_cq(ibv_context* c, int cqe, void* cq_context,
                                                         ibv_comp_channel* channel, int comp_vector) {
  Cq* cq = create_cq(c, cqe, cq_context, channel, comp_vector);
  return cq ? &cq->cq : nullptr;
}

UROCE_V11(ibv_destroy_cq) int uroce_v11_ibv_destroy_cq(ibv_cq* c) {
  if (exited()) return 0;
  Cq* cq = cq_of(c);
  DeviceRec* rec = ctx_of(c->context)->rec;
  {
    // As Linux: a CQ that a QP still uses stays, and says so.
    std::lock_guard<std::mutex> lock(rec->control);
    for (const Qp* q : rec->qps)
      if (q->qp.send_cq == c || q->qp.recv_cq == c) return EBUSY;
  }
  // Out of the lists first, so that no new event names it; then the wait
  // for those already handed out.
  if (c->channel) {
    Channel* ch = channel_of(c->channel);
    std::lock_guard<std::mutex> lock(ch->cqs_mutex);
    erase_one(ch->cqs, cq);
  }
  {
    std::lock_guard<std::mutex> lock(rec->control);
    erase_one(rec->cqs, cq);
    withdraw_events(*rec, cq);
  }
  wait_events_acked(c->mutex, c->cond, [&] {
    return c->comp_events_completed == cq->comp_events_reported &&
           c->async_events_completed == cq->async_events_reported;
  });
  {
    std::lock_guard<std::mutex> lock(rec->control);
    cq->impl.reset();
    if (c->channel) --c->channel->refcnt;
  }
  pthread_mutex_destroy(&c->mutex);
  pthread_cond_destroy(&c->cond);
  delete cq;
  return 0;
}

UROCE_V11(ibv_create_qp) ibv_qp* uroce_v11_ibv_create_qp(ibv_pd* p, ibv_qp_init_attr* init) {
  Qp* qp = create_qp(p, init);
  return qp ? &qp->qp : nullptr;
}

UROCE_V11(ibv_modify_qp) int uroce_v11_ibv_modify_qp(ibv_qp* q, ibv_qp_attr* attr, int mask) {
  Qp* qp = qp_of(q);
  Context* ctx = ctx_of(q->context);
  const int rc = retry_unreachable([&] {
    std::lock_guard<std::mutex> lock(ctx->rec->control);
    return qp->impl->modify(*attr, mask);
  });
  if (rc == 0) q->state = qp->impl->state();
  return rc;
}

UROCE_V11(ibv_query_qp) int uroce_v11_ibv_query_qp(ibv_qp* q, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  Qp* qp = qp_of(q);
  QpInitAttr ia;
  int rc;
  {
    std::lock_guard<std::mutex> lock(ctx_of(q->context)->rec->control);
    rc = qp->impl->query(*attr, mask, ia);
  }
  if (rc) return rc;
  // As rdma-core: the state asked for refreshes ibv_qp's own, which the
  // connection manager's moves (RTR, RTS, ERR) do not go through.
  if (mask & IBV_QP_STATE) q->state = attr->qp_state;
  if (init) {
    std::memset(init, 0, sizeof *init);
    init->qp_context = q->qp_context;
    init->send_cq = q->send_cq;
    init->recv_cq = q->recv_cq;
    init->srq = q->srq;
    init->cap = ia.cap;
    init->qp_type = q->qp_type;
    init->sq_sig_all = ia.sq_sig_all;
  }
  return 0;
}

UROCE_V11(ibv_destroy_qp) int uroce_v11_ibv_destroy_qp(ibv_qp* q) {
  if (exited()) return 0;
  Qp* qp = qp_of(q);
  DeviceRec* rec = ctx_of(q->context)->rec;
  {
    std::lock_guard<std::mutex> lock(rec->control);
    erase_one(rec->qps, qp);
    withdraw_events(*rec, qp);
    if (rec->before_qp_destroy) rec->before_qp_destroy(rec->before_qp_destroy_arg, *qp->impl);
  }
  wait_events_acked(q->mutex, q->cond, [&] { return q->events_completed == qp->events_reported; });
  {
    std::lock_guard<std::mutex> lock(rec->control);
    qp->impl.reset();
  }
  pthread_mutex_destroy(&q->mutex);
  pthread_cond_destroy(&q->cond);
  delete qp;
  return 0;
}

UROCE_V11(ibv_create_srq) ibv_srq* uroce_v11_ibv_create_srq(ibv_pd* p, ibv_srq_init_attr* init) {
  SrqInitAttr attr;
  attr.max_wr = init->attr.max_wr;
  attr.max_sge = init->attr.max_sge;
  auto* srq = new Srq;
  int err = 0;
  {
    std::lock_guard<std::mutex> lock(ctx_of_pd(p).rec->control);
    srq->impl = pd_of(p)->impl->create_srq(attr, err);
    if (srq->impl && init->attr.srq_limit) {
      ibv_srq_attr limit{};
      limit.srq_limit = init->attr.srq_limit;
      err = srq->impl->modify(limit, IBV_SRQ_LIMIT);
      if (err) srq->impl.reset();
    }
  }
  if (!srq->impl) return delete srq, errno = err ? err : ENOMEM, nullptr;
  init->attr.max_wr = srq->impl->max_wr();
  init->attr.max_sge = srq->impl->max_sge();
  {
    std::lock_guard<std::mutex> lock(ctx_of_pd(p).rec->control);
    ctx_of_pd(p).rec->srqs.push_back(srq);
  }
  srq->srq.context = p->context;
  srq->srq.srq_context = init->srq_context;
  srq->srq.pd = p;
  srq->srq.events_completed = 0;
  pthread_mutex_init(&srq->srq.mutex, nullptr);
  pthread_cond_init(&srq->srq.cond, nullptr);
  return &srq->srq;
}

UROCE_V11(ibv_modify_srq) int uroce_v11_ibv_modify_srq(ibv_srq* s, ibv_srq_attr* attr, int mask) {
  std::lock_guard<std::mutex> lock(ctx_of(s->context)->rec->control);
  return srq_of(s)->impl->modify(*attr, mask);
}

UROCE_V11(ibv_query_srq) int uroce_v11_ibv_query_srq(ibv_srq* s, ibv_srq_attr* attr) {
  std::lock_guard<std::mutex> lock(ctx_of(s->context)->rec->control);
  return srq_of(s)->impl->query(*attr);
}

UROCE_V11(ibv_destroy_srq) int uroce_v11_ibv_destroy_srq(ibv_srq* s) {
  if (exited()) return 0;
  Srq* srq = srq_of(s);
  DeviceRec* rec = ctx_of(s->context)->rec;
  {
    // As Linux: an SRQ a QP is still associated with stays, and says so.
    std::lock_guard<std::mutex> lock(rec->control);
    for (const Qp* q : rec->qps)
      if (q->qp.srq == s) return EBUSY;
    erase_one(rec->srqs, srq);
    withdraw_events(*rec, srq);
  }
  wait_events_acked(s->mutex, s->cond, [&] { return s->events_completed == srq->events_reported; });
  {
    std::lock_guard<std::mutex> lock(rec->control);
    srq->impl.reset();
  }
  pthread_mutex_destroy(&s->mutex);
  pthread_cond_destroy(&s->cond);
  delete srq;
  return 0;
}

UROCE_V11(ibv_create_ah) ibv_ah* uroce_v11_ibv_create_ah(ibv_pd* p, ibv_ah_attr* attr) {
  auto* ah = new Ah;
  Context& ctx = ctx_of_pd(p);
  const int err = retry_unreachable([&] {
    int e = 0;
    std::lock_guard<std::mutex> lock(ctx.rec->control);
    ah->impl = pd_of(p)->impl->create_ah(*attr, e);
    return ah->impl ? 0 : (e ? e : ENOMEM);
  });
  if (err) return delete ah, errno = err, nullptr;
  ah->ah.context = p->context;
  ah->ah.pd = p;
  return &ah->ah;
}

UROCE_V11(ibv_destroy_ah) int uroce_v11_ibv_destroy_ah(ibv_ah* a) {
  if (exited()) return 0;
  auto* ah = reinterpret_cast<Ah*>(a);
  {
    std::lock_guard<std::mutex> lock(ctx_of(a->context)->rec->control);
    ah->impl.reset();
  }
  delete ah;
  return 0;
}

// The address of a UD datagram's sender, for a reply: uroce's GRH slot holds
// the IPv6 header, or 20 zero bytes then the IPv4 header (lib/transport/ud.cpp).
UROCE_EXPORT int ibv_init_ah_from_wc(ibv_context* c, uint8_t port, ibv_wc* wc, ibv_grh* grh, ibv_ah_attr* ah) {
  if (!(wc->wc_flags & IBV_WC_GRH) || !grh) return errno = EINVAL, -1;
  const auto* b = reinterpret_cast<const uint8_t*>(grh);
  static constexpr uint8_t kZero[20] = {};
  wire::IpAddr src, dst;
  uint8_t tclass;
  uint32_t flow = 0;
  if (std::memcmp(b, kZero, 20) == 0 && (b[20] >> 4) == 4) {
    src = wire::IpAddr::from_v4(b + 20 + 12);
    dst = wire::IpAddr::from_v4(b + 20 + 16);
    tclass = b[21];
  } else if ((b[0] >> 4) == 6) {
    src = wire::IpAddr::from_v6(b + 8);
    dst = wire::IpAddr::from_v6(b + 24);
    tclass = uint8_t((b[0] << 4) | (b[1] >> 4));
    flow = (uint32_t(b[1] & 0x0f) << 16) | (uint32_t(b[2]) << 8) | b[3];
  } else {
    return errno = EINVAL, -1;
  }
  const std::vector<wire::IpAddr>& gids = ctx_of(c)->device().gids();
  int index = -1;
  for (size_t i = 0; i < gids.size(); ++i)
    if (gids[i] == dst) index = static_cast<int>(i);
  if (index < 0) return errno = EINVAL, -1;
  std::memset(ah, 0, sizeof *ah);
  ah->dlid = wc->slid;
  ah->sl = wc->sl;
  ah->port_num = port;
  ah->is_global = 1;
  std::memcpy(ah->grh.dgid.raw, src.bytes.data(), 16);
  ah->grh.sgid_index = static_cast<uint8_t>(index);
  ah->grh.flow_label = flow;
  ah->grh.hop_limit = 0xff;
  ah->grh.traffic_class = tclass;
  return 0;
}

UROCE_EXPORT ibv_ah* ibv_create_ah_from_wc(ibv_pd* p, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  ibv_ah_attr attr;
  if (ibv_init_ah_from_wc(p->context, port, wc, grh, &attr)) return nullptr;
  return uroce_v11_ibv_create_ah(p, &attr);
}

}  // extern "C"
