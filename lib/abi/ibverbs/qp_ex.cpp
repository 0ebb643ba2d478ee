// SPDX-License-Identifier: BSD-3-Clause
// ibv_create_qp_ex and the post API of struct ibv_qp_ex (verbs.h's inline
// ibv_wr_* call its function pointers). ibv_wr_start takes the batch's
// mutex and opens a batch; each ibv_wr_<op> starts a WR in the batch from
// the QP's wr_id and wr_flags, the ibv_wr_set_* calls complete it; the WRs
// live in storage sized at creation. ibv_wr_complete posts the batch all
// or nothing (QueuePair::post_send_all) and reports the first error of the
// batch as an errno; ibv_wr_abort drops it.
#include <errno.h>

#include <algorithm>
#include <cstring>

#include "exports.h"
#include "shim.h"

namespace uroce::abi {
namespace {

// The operations this post API builds; the others a program may ask for
// in send_ops_flags (TSO, atomic write) are refused at creation.
constexpr uint64_t kSupportedOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                                   IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                                   IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                                   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_BIND_MW |
                                   IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV;

constexpr uint32_t kSupportedMask =
    IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;

Qp& qp_of_ex(ibv_qp_ex* q) { return *reinterpret_cast<Qp*>(q); }

void fail(WrBatch& b, int err) {
  if (b.error == 0) b.error = err;
}

// The WR being built, nullptr (and the batch failed) outside a WR.
SendWr* current(WrBatch& b) {
  if (b.count == 0) {
    fail(b, EINVAL);
    return nullptr;
  }
  return &b.wrs[b.count - 1];
}

// Starts a WR of `opcode` from the QP's wr_id and wr_flags; nullptr (and
// the batch failed with ENOMEM) when the batch is as long as the queue.
SendWr* begin(ibv_qp_ex* q, ibv_wr_opcode opcode) {
  WrBatch& b = *qp_of_ex(q).batch;
  if (b.count == b.wrs.size()) {
    fail(b, ENOMEM);
    return nullptr;
  }
  SendWr& wr = b.wrs[b.count++];
  wr = SendWr{};
  wr.wr_id = q->wr_id;
  wr.opcode = opcode;
  // Inline is the choice of ibv_wr_set_inline_data*, not of a flag.
  wr.send_flags = q->wr_flags & ~unsigned(IBV_SEND_INLINE);
  wr.sg_list = &b.sges[size_t(b.count - 1) * b.sge_stride];
  return &wr;
}

void rdma(ibv_qp_ex* q, ibv_wr_opcode op, uint32_t rkey, uint64_t addr, __be32 imm) {
  if (SendWr* wr = begin(q, op)) {
    wr->wr.rdma.rkey = rkey;
    wr->wr.rdma.remote_addr = addr;
    wr->imm_data = imm;
  }
}

void atomic(ibv_qp_ex* q, ibv_wr_opcode op, uint32_t rkey, uint64_t addr, uint64_t compare_add, uint64_t swap) {
  if (SendWr* wr = begin(q, op)) {
    wr->wr.atomic.rkey = rkey;
    wr->wr.atomic.remote_addr = addr;
    wr->wr.atomic.compare_add = compare_add;
    wr->wr.atomic.swap = swap;
  }
}

void wr_rdma_write(ibv_qp_ex* q, uint32_t rkey, uint64_t addr) { rdma(q, IBV_WR_RDMA_WRITE, rkey, addr, 0); }
void wr_rdma_write_imm(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, __be32 imm) {
  rdma(q, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}
void wr_rdma_read(ibv_qp_ex* q, uint32_t rkey, uint64_t addr) { rdma(q, IBV_WR_RDMA_READ, rkey, addr, 0); }
void wr_send(ibv_qp_ex* q) { begin(q, IBV_WR_SEND); }
void wr_send_imm(ibv_qp_ex* q, __be32 imm) {
  if (SendWr* wr = begin(q, IBV_WR_SEND_WITH_IMM)) wr->imm_data = imm;
}
void wr_atomic_cmp_swp(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, uint64_t compare, uint64_t swap) {
  atomic(q, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}
void wr_atomic_fetch_add(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, uint64_t add) {
  atomic(q, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

// A type 2 window's bind: as IBV_WR_BIND_MW in ibv_post_send.
void wr_bind_mw(ibv_qp_ex* q, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info* info) {
  SendWr* wr = begin(q, IBV_WR_BIND_MW);
  if (!wr) return;
  if (!mw || !info) return fail(*qp_of_ex(q).batch, EINVAL);
  wr->bind_mw.mw = reinterpret_cast<Mw*>(mw)->impl.get();
  wr->bind_mw.rkey = rkey;
  wr->bind_mw.bind_info = {info->mr ? reinterpret_cast<Mr*>(info->mr)->impl.get() : nullptr, info->addr,
                           info->length, info->mw_access_flags};
}
void wr_local_inv(ibv_qp_ex* q, uint32_t rkey) {
  if (SendWr* wr = begin(q, IBV_WR_LOCAL_INV)) wr->invalidate_rkey = rkey;
}
void wr_send_inv(ibv_qp_ex* q, uint32_t rkey) {
  if (SendWr* wr = begin(q, IBV_WR_SEND_WITH_INV)) wr->invalidate_rkey = rkey;
}

// Operations refused at creation; a program that calls them anyway fails
// its batch rather than jumping through a null pointer.
void wr_send_tso(ibv_qp_ex* q, void*, uint16_t, uint16_t) { fail(*qp_of_ex(q).batch, EOPNOTSUPP); }
void wr_set_xrc_srqn(ibv_qp_ex* q, uint32_t) { fail(*qp_of_ex(q).batch, EOPNOTSUPP); }
void wr_atomic_write(ibv_qp_ex* q, uint32_t, uint64_t, const void*) { fail(*qp_of_ex(q).batch, EOPNOTSUPP); }

void wr_set_ud_addr(ibv_qp_ex* q, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
  WrBatch& b = *qp_of_ex(q).batch;
  SendWr* wr = current(b);
  if (!wr) return;
  if (q->qp_base.qp_type != IBV_QPT_UD || !ah) return fail(b, EINVAL);
  wr->wr.ud.ah = reinterpret_cast<Ah*>(ah)->impl.get();
  wr->wr.ud.remote_qpn = remote_qpn;
  wr->wr.ud.remote_qkey = remote_qkey;
}

void wr_set_sge_list(ibv_qp_ex* q, size_t num_sge, const ibv_sge* sg_list) {
  WrBatch& b = *qp_of_ex(q).batch;
  SendWr* wr = current(b);
  if (!wr) return;
  if (num_sge > b.sge_stride) return fail(b, EINVAL);
  if (num_sge) std::memcpy(wr->sg_list, sg_list, num_sge * sizeof(ibv_sge));
  wr->num_sge = static_cast<int>(num_sge);
  wr->send_flags &= ~unsigned(IBV_SEND_INLINE);
}

void wr_set_sge(ibv_qp_ex* q, uint32_t lkey, uint64_t addr, uint32_t length) {
  const ibv_sge sge{addr, length, lkey};
  wr_set_sge_list(q, 1, &sge);
}

// The data is copied now (the program may reuse its buffers once the call
// returns) into the WR's inline area, which one SGE then names; the post
// copies it again into the QP's queue.
void wr_set_inline_data_list(ibv_qp_ex* q, size_t num_buf, const ibv_data_buf* list) {
  WrBatch& b = *qp_of_ex(q).batch;
  SendWr* wr = current(b);
  if (!wr) return;
  uint8_t* area = &b.bytes[size_t(wr - b.wrs.data()) * b.inline_stride];
  size_t len = 0;
  for (size_t i = 0; i < num_buf; ++i) {
    if (list[i].length > b.inline_stride - len) return fail(b, EINVAL);
    std::memcpy(area + len, list[i].addr, list[i].length);
    len += list[i].length;
  }
  if (b.sge_stride == 0) return fail(b, EINVAL);
  wr->sg_list[0] = ibv_sge{reinterpret_cast<uintptr_t>(area), uint32_t(len), 0};
  wr->num_sge = 1;
  wr->send_flags |= IBV_SEND_INLINE;
}

void wr_set_inline_data(ibv_qp_ex* q, void* addr, size_t length) {
  const ibv_data_buf buf{addr, length};
  wr_set_inline_data_list(q, 1, &buf);
}

void wr_start(ibv_qp_ex* q) {
  WrBatch& b = *qp_of_ex(q).batch;
  b.mutex.lock();
  b.count = 0;
  b.error = 0;
}

int wr_complete(ibv_qp_ex* q) {
  Qp& qp = qp_of_ex(q);
  WrBatch& b = *qp.batch;
  int rc = b.error;
  if (rc == 0 && b.count) {
    for (uint32_t i = 0; i + 1 < b.count; ++i) b.wrs[i].next = &b.wrs[i + 1];
    b.wrs[b.count - 1].next = nullptr;
    const SendWr* bad = nullptr;
    std::lock_guard<std::mutex> lock(qp.post_mutex);
    rc = qp.impl->post_send_all(b.wrs.data(), &bad);
  }
  b.count = 0;
  b.mutex.unlock();
  return rc;
}

void wr_abort(ibv_qp_ex* q) {
  WrBatch& b = *qp_of_ex(q).batch;
  b.count = 0;
  b.mutex.unlock();
}

void fill_post_ops(ibv_qp_ex& ex) {
  ex.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
  ex.wr_atomic_fetch_add = wr_atomic_fetch_add;
  ex.wr_bind_mw = wr_bind_mw;
  ex.wr_local_inv = wr_local_inv;
  ex.wr_rdma_read = wr_rdma_read;
  ex.wr_rdma_write = wr_rdma_write;
  ex.wr_rdma_write_imm = wr_rdma_write_imm;
  ex.wr_send = wr_send;
  ex.wr_send_imm = wr_send_imm;
  ex.wr_send_inv = wr_send_inv;
  ex.wr_send_tso = wr_send_tso;
  ex.wr_set_ud_addr = wr_set_ud_addr;
  ex.wr_set_xrc_srqn = wr_set_xrc_srqn;
  ex.wr_set_inline_data = wr_set_inline_data;
  ex.wr_set_inline_data_list = wr_set_inline_data_list;
  ex.wr_set_sge = wr_set_sge;
  ex.wr_set_sge_list = wr_set_sge_list;
  ex.wr_start = wr_start;
  ex.wr_complete = wr_complete;
  ex.wr_abort = wr_abort;
  ex.wr_atomic_write = wr_atomic_write;
}

std::unique_ptr<WrBatch> make_batch(const ibv_qp_cap& cap) {
  auto b = std::make_unique<WrBatch>();
  b->sge_stride = std::max<uint32_t>(cap.max_send_sge, 1);
  b->inline_stride = cap.max_inline_data;
  b->wrs.resize(cap.max_send_wr);
  b->sges.resize(size_t(cap.max_send_wr) * b->sge_stride);
  b->bytes.resize(size_t(cap.max_send_wr) * b->inline_stride);
  return b;
}

}  // namespace

ibv_qp* create_qp_ex_op(ibv_context* c, ibv_qp_init_attr_ex* attr) {
  if (attr->comp_mask & ~kSupportedMask) return errno = EOPNOTSUPP, nullptr;
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd || attr->pd->context != c)
    return errno = EINVAL, nullptr;
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) return errno = EOPNOTSUPP, nullptr;
  const bool post_api = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  if (post_api && (attr->send_ops_flags & ~kSupportedOps)) return errno = EOPNOTSUPP, nullptr;
  // ibv_qp_init_attr_ex begins with the fields of ibv_qp_init_attr, as
  // verbs.h's own ibv_create_qp_ex relies on.
  Qp* qp = create_qp(attr->pd, reinterpret_cast<ibv_qp_init_attr*>(attr));
  if (!qp) return nullptr;
  if (post_api) {
    qp->batch = make_batch(attr->cap);
    fill_post_ops(qp->ex);
  }
  return &qp->qp;
}

}  // namespace uroce::abi

using namespace uroce::abi;

// A QP made without send_ops_flags has no post API (NULL), as verbs does.
UROCE_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* q) {
  Qp* qp = qp_of(q);
  return qp->batch ? &qp->ex : (errno = EOPNOTSUPP, nullptr);
}
