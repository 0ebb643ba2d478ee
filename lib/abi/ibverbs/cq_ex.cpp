// SPDX-License-Identifier: BSD-3-Clause
// ibv_create_cq_ex and the polling API of struct ibv_cq_ex, which verbs.h's
// inline ibv_start_poll / ibv_next_poll / ibv_end_poll / ibv_wc_read_*
// call through the CQ's function pointers. The extended CQ is an ordinary
// CQ of this library (ibv_poll_cq, completion channels and ibv_destroy_cq
// work on it): the pointers step through its completions one ibv_wc at a
// time and read the fields of the one stepped to.
#include <errno.h>
#include <sched.h>

#include "shim.h"

namespace uroce::abi {
namespace {

// The fields an ibv_wc holds; the rest (timestamps, VLAN, flow tag, tag
// matching) are not recorded by uroce's completions, so a CQ that asks for
// them is refused rather than handed zeros.
constexpr uint64_t kSupportedWcFlags = IBV_WC_STANDARD_FLAGS;

Cq* cq_ex_of(ibv_cq_ex* c) { return reinterpret_cast<Cq*>(c); }

// Steps to the next completion; ENOENT if none waits.
int step(Cq& cq) {
  if (cq.impl->poll(1, &cq.current) == 0) return ENOENT;
  cq.ex.status = cq.current.status;
  cq.ex.wr_id = cq.current.wr_id;
  return 0;
}

// The CQ's poll mutex is held from a start that found a completion until
// end_poll, as providers hold their CQ lock: ibv_poll_cq from another
// thread waits meanwhile.
int start_poll(ibv_cq_ex* c, ibv_poll_cq_attr* attr) {
  if (attr && attr->comp_mask) return EINVAL;
  Cq& cq = *cq_ex_of(c);
  cq.poll_mutex.lock();
  const int rc = step(cq);
  const bool yield = cq.after_poll(rc == 0);
  if (rc == 0) return 0;
  cq.poll_mutex.unlock();
  if (yield) sched_yield();  // as ibv_poll_cq on an empty CQ (Cq::after_poll)
  return rc;
}

int next_poll(ibv_cq_ex* c) { return step(*cq_ex_of(c)); }
void end_poll(ibv_cq_ex* c) { cq_ex_of(c)->poll_mutex.unlock(); }

const ibv_wc& cur(ibv_cq_ex* c) { return cq_ex_of(c)->current; }
ibv_wc_opcode read_opcode(ibv_cq_ex* c) { return cur(c).opcode; }
uint32_t read_vendor_err(ibv_cq_ex* c) { return cur(c).vendor_err; }
uint32_t read_byte_len(ibv_cq_ex* c) { return cur(c).byte_len; }
__be32 read_imm_data(ibv_cq_ex* c) { return cur(c).imm_data; }
uint32_t read_qp_num(ibv_cq_ex* c) { return cur(c).qp_num; }
uint32_t read_src_qp(ibv_cq_ex* c) { return cur(c).src_qp; }
unsigned int read_wc_flags(ibv_cq_ex* c) { return cur(c).wc_flags; }
uint32_t read_slid(ibv_cq_ex* c) { return cur(c).slid; }
uint8_t read_sl(ibv_cq_ex* c) { return cur(c).sl; }
uint8_t read_dlid_path_bits(ibv_cq_ex* c) { return cur(c).dlid_path_bits; }

}  // namespace

ibv_cq_ex* create_cq_ex_op(ibv_context* c, ibv_cq_init_attr_ex* attr) {
  if (attr->comp_mask & ~uint32_t(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))
    return errno = EINVAL, nullptr;
  // A parent domain (IBV_CQ_INIT_ATTR_MASK_PD) is not offered; of the
  // flags, single-threaded use needs nothing, while "ignore overrun" would
  // change what an overrun reports.
  if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) return errno = EOPNOTSUPP, nullptr;
  if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && (attr->flags & ~uint32_t(IBV_CREATE_CQ_ATTR_SINGLE_THREADED)))
    return errno = EOPNOTSUPP, nullptr;
  if (attr->wc_flags & ~kSupportedWcFlags) return errno = EOPNOTSUPP, nullptr;
  if (attr->cqe > uint32_t(INT32_MAX)) return errno = EINVAL, nullptr;
  Cq* cq = create_cq(c, static_cast<int>(attr->cqe), attr->cq_context, attr->channel,
                     static_cast<int>(attr->comp_vector));
  if (!cq) return nullptr;
  ibv_cq_ex& ex = cq->ex;
  ex.comp_mask = 0;
  ex.start_poll = start_poll;
  ex.next_poll = next_poll;
  ex.end_poll = end_poll;
  ex.read_opcode = read_opcode;
  ex.read_vendor_err = read_vendor_err;
  ex.read_byte_len = read_byte_len;
  ex.read_imm_data = read_imm_data;
  ex.read_qp_num = read_qp_num;
  ex.read_src_qp = read_src_qp;
  ex.read_wc_flags = read_wc_flags;
  ex.read_slid = read_slid;
  ex.read_sl = read_sl;
  ex.read_dlid_path_bits = read_dlid_path_bits;
  return &ex;
}

}  // namespace uroce::abi
