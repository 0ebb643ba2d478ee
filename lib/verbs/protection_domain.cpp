// SPDX-License-Identifier: BSD-3-Clause
#include "access.h"
#include "uroce/verbs/protection_domain.h"

#include <rte_malloc.h>
#include <rte_memory.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "../engine/engine.h"
#include "../transport/cc.h"
#include "../memory/region.h"
#include "../memory/window.h"
#include "../memory/tx_extbuf.h"
#include "../transport/post.h"
#include "../transport/qp.h"
#include "engine/engine_thread.h"
#include "uroce/verbs/address_handle.h"
#include "uroce/verbs/completion_queue.h"
#include "uroce/verbs/device.h"
#include "uroce/verbs/memory_region.h"
#include "uroce/verbs/memory_window.h"
#include "uroce/verbs/queue_pair.h"
#include "uroce/verbs/shared_receive_queue.h"
#include "uroce/client/daemon_client.h"

namespace uroce {
namespace {

constexpr int kAccessMask = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                            IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND;

// verbs: remote write or atomic access requires local write access.
bool access_ok(int access) {
  if (access & ~kAccessMask) return false;
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE))
    return false;
  return true;
}

bool cap_ok(const QpInitAttr& a, const DeviceLimits& lim) {
  const ibv_qp_cap& c = a.cap;
  if (c.max_send_wr > lim.max_qp_wr || c.max_send_sge > lim.max_sge) return false;
  if (c.max_inline_data > lim.max_inline_data) return false;
  // A queue of 0 WRs is allowed, as in Linux: a QP that only receives or
  // only sends (qperf's); a SEND to one without receives meets RNR.
  if (a.srq == nullptr && (c.max_recv_wr > lim.max_qp_wr || c.max_recv_sge > lim.max_sge)) return false;
  return true;
}

}  // namespace

ProtectionDomain::ProtectionDomain(Device* device, uint32_t handle) : device_(device), handle_(handle) {}

ProtectionDomain::~ProtectionDomain() {
  if (remote_) {
    if (children_ != 0) {
      std::fprintf(stderr, "uroce: protection domain destroyed while %u object(s) created in it are alive\n",
                   children_);
      std::abort();
    }
    return;
  }
  detail::Pause pause(detail::to_thread(*device_));
  if (children_ != 0) {
    std::fprintf(stderr, "uroce: protection domain destroyed while %u object(s) created in it are alive\n",
                 children_);
    std::abort();
  }
}

// A region of the daemon's: the client library's object, with the key
// and address the inline accessors read.
std::unique_ptr<MemoryRegion> ProtectionDomain::remote_region(std::unique_ptr<client::MemoryRegion> rmr, int access) {
  std::unique_ptr<MemoryRegion> mr(new MemoryRegion(this, rmr->addr(), rmr->length(), access));
  mr->iova_ = rmr->iova();
  mr->key_ = rmr->lkey();
  mr->remote_ = std::move(rmr);
  mr->region_.reset();  // no engine here: the daemon holds the region
  ++children_;
  return mr;
}

std::unique_ptr<MemoryRegion> ProtectionDomain::reg_mr(void* addr, size_t length, int access, int& err) {
  return reg_mr_iova(addr, length, reinterpret_cast<uintptr_t>(addr), access, err);
}

std::unique_ptr<MemoryRegion> ProtectionDomain::reg_mr_iova(void* addr, size_t length, uint64_t iova, int access,
                                                            int& err) {
  if (remote_) {
    if (!access_ok(access)) return err = EINVAL, nullptr;
    auto rmr = remote_->reg_mr_iova(addr, length, iova, access, err);
    return rmr ? remote_region(std::move(rmr), access) : nullptr;
  }
  detail::Pause pause(detail::to_thread(*device_));
  const DeviceLimits& lim = device_->limits();
  if (addr == nullptr || length == 0 || length > lim.max_mr_size || !access_ok(access) || iova + length < iova) {
    err = EINVAL;
    return nullptr;
  }
  ++children_;  // balanced by ~MemoryRegion, also when registration fails below
  std::unique_ptr<MemoryRegion> mr(new MemoryRegion(this, addr, length, access));
  mr->iova_ = mr->region_->iova = iova;
  const uint32_t key = detail::to_engine(*device_).mrs().insert(mr->region_.get());
  if (key == 0) {
    err = ENOMEM;  // key table full
    return nullptr;
  }
  const auto* first = static_cast<const uint8_t*>(addr);
  mr->key_ = mr->region_->key = key;
  mr->dpdk_memory_ = mr->region_->dpdk_memory =
      rte_mem_virt2memseg(first, nullptr) && rte_mem_virt2memseg(first + length - 1, nullptr);
  err = 0;
  return mr;
}

std::unique_ptr<MemoryRegion> ProtectionDomain::alloc_mr(size_t length, int access, int& err) {
  if (remote_) {
    if (!access_ok(access)) return err = EINVAL, nullptr;
    auto rmr = remote_->alloc_mr(length, access, err);
    return rmr ? remote_region(std::move(rmr), access) : nullptr;
  }
  detail::Pause pause(detail::to_thread(*device_));
  if (length == 0 || length > device_->limits().max_mr_size || !access_ok(access)) {
    err = EINVAL;
    return nullptr;
  }
  void* mem = rte_zmalloc("uroce_mr", length, 64);
  if (mem == nullptr) {
    err = ENOMEM;
    return nullptr;
  }
  auto mr = reg_mr(mem, length, access, err);
  if (!mr) {
    rte_free(mem);
    return nullptr;
  }
  mr->owned_ = true;
  return mr;
}

int ProtectionDomain::dereg_mr(std::unique_ptr<MemoryRegion>& mr) {
  if (remote_) {
    if (!mr || &mr->pd() != this || !mr->remote_) return EINVAL;
    if (const int err = remote_->dereg_mr(mr->remote_); err != 0) return err;
    mr.reset();
    return 0;
  }
  detail::Pause pause(detail::to_thread(*device_));
  if (!mr || &mr->pd() != this) return EINVAL;
  // Frames whose payload points into the region may still sit in a TX
  // queue (zero-copy): the memory must outlive them.
  if (mr->in_use() != 0 || memory::tx_payloads_in_flight(*mr->region_)) return EBUSY;
  if (mr->region_->windows != 0) return EINVAL;
  mr.reset();
  return 0;
}

std::unique_ptr<MemoryWindow> ProtectionDomain::alloc_mw(ibv_mw_type type, int& err) {
  if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
    err = EINVAL;
    return nullptr;
  }
  if (remote_) return remote_mw(type, err);
  detail::Pause pause(detail::to_thread(*device_));
  ++children_;  // balanced by ~MemoryWindow
  std::unique_ptr<MemoryWindow> mw(new MemoryWindow(this, type));
  const uint32_t key = detail::to_engine(*device_).mrs().insert_window(mw->window_.get());
  if (key == 0) {
    err = ENOMEM;  // max_mw windows alive
    return nullptr;
  }
  mw->rkey_ = mw->window_->key = key;
  mw->handle_ = key & ~0xFFu;
  err = 0;
  return mw;
}

// The daemon holds the window; binds name it by its rkey.
std::unique_ptr<MemoryWindow> ProtectionDomain::remote_mw(ibv_mw_type type, int& err) {
  uint32_t handle = 0, rkey = 0;
  err = remote_->alloc_mw(type, handle, rkey);
  if (err != 0) return nullptr;
  std::unique_ptr<MemoryWindow> mw(new MemoryWindow(this, type));
  mw->window_.reset();
  mw->remote_handle_ = handle;
  mw->rkey_ = rkey;
  mw->handle_ = rkey & ~0xFFu;
  ++children_;
  return mw;
}

int ProtectionDomain::dealloc_mw(std::unique_ptr<MemoryWindow>& mw) {
  if (!mw || &mw->pd() != this) return EINVAL;
  mw.reset();
  return 0;
}

MemoryWindow::MemoryWindow(ProtectionDomain* pd, ibv_mw_type type)
    : pd_(pd), type_(type), window_(std::make_unique<memory::Window>()) {
  window_->pd = pd;
  window_->type = uint8_t(type);
}

MemoryWindow::~MemoryWindow() {
  if (!window_) {
    pd_->remote_->dealloc_mw(remote_handle_);
    --pd_->children_;
    return;
  }
  detail::Pause pause(detail::to_thread(pd_->device()));
  memory::unbind(*window_);
  if (window_->key != 0) detail::to_engine(pd_->device()).mrs().remove_window(window_.get());
  --pd_->children_;
}

std::unique_ptr<QueuePair> ProtectionDomain::create_qp(const QpInitAttr& attr, int& err) {
  return create_qp_numbered(attr, 0, err);
}

std::unique_ptr<QueuePair> ProtectionDomain::create_qp_numbered(const QpInitAttr& attr, uint32_t wanted, int& err) {
  if (remote_) {
    if (wanted != 0) return err = EOPNOTSUPP, nullptr;
    if (!attr.send_cq || !attr.recv_cq || !detail::Access::remote(*attr.send_cq) ||
        !detail::Access::remote(*attr.recv_cq) || (attr.srq && &attr.srq->pd() != this))
      return err = EINVAL, nullptr;
    client::QpInitAttr a;
    a.send_cq = detail::Access::remote(*attr.send_cq);
    a.recv_cq = detail::Access::remote(*attr.recv_cq);
    a.srq = attr.srq ? detail::Access::remote(*attr.srq) : nullptr;
    a.cap = attr.cap;
    a.qp_type = attr.qp_type;
    a.sq_sig_all = attr.sq_sig_all;
    auto rqp = remote_->create_qp(a, err);
    if (!rqp) return nullptr;
    ++children_;
    return std::unique_ptr<QueuePair>(new QueuePair(this, std::move(rqp), attr));
  }
  detail::Pause pause(detail::to_thread(*device_));
  engine::Engine& eng = detail::to_engine(*device_);
  const bool type_ok = attr.qp_type == IBV_QPT_RC || attr.qp_type == IBV_QPT_UC || attr.qp_type == IBV_QPT_UD;
  if (!type_ok || !attr.send_cq || !attr.recv_cq || !cap_ok(attr, device_->limits()) ||
      (attr.srq && &attr.srq->pd() != this)) {
    err = EINVAL;
    return nullptr;
  }
  const uint32_t qpn = wanted != 0 ? wanted : eng.alloc_qpn();
  if (qpn == 0) {
    err = ENOMEM;  // max_qp QPs live
    return nullptr;
  }
  if (wanted != 0 && !eng.qpn_free(wanted)) return err = EEXIST, nullptr;
  auto qp = std::make_unique<transport::Qp>();
  qp->eng = &eng;
  qp->pd = this;
  qp->scq = &detail::to_cq(*attr.send_cq);
  qp->rcq = &detail::to_cq(*attr.recv_cq);
  qp->srq = attr.srq ? &detail::to_srq(*attr.srq) : nullptr;
  qp->init = attr;
  if (qp->init.cap.max_send_sge == 0) qp->init.cap.max_send_sge = 1;
  qp->qpn = qpn;
  // Each queue's SGE and inline storage is sized from these caps
  // (send_queue.h, recv_queue.h); check_send and post_recv hold posts to them.
  qp->sq.reset(attr.cap.max_send_wr, qp->init.cap.max_send_sge, attr.cap.max_inline_data,
               attr.qp_type == IBV_QPT_UD);
  qp->rq.reset(attr.srq ? 0 : attr.cap.max_recv_wr, attr.cap.max_recv_sge,
               attr.srq == nullptr && attr.qp_type != IBV_QPT_UD ? 1 : 0);
  qp->resp.out.reset(8);
  qp->hdr.bth.pkey = wire::kDefaultPkey;
  transport::cc_setup(*qp, attr.cc ? *attr.cc : eng.device_config().cc);
  qp->scq->attach();
  qp->rcq->attach();
  if (qp->srq) ++qp->srq->users;
  transport::attach_recv(*qp);
  eng.add_qp(qp.get());
  ++children_;
  std::unique_ptr<QueuePair> q(new QueuePair(this, std::move(qp)));
  std::string why;
  if (!detail::to_thread(*device_).attach_qp(*q->impl_, q->sub_, why)) {
    // Its destructor detaches the rest; attach_qp left no trace.
    err = ENOMEM;
    return nullptr;
  }
  err = 0;
  return q;
}

std::unique_ptr<SharedReceiveQueue> ProtectionDomain::create_srq(const SrqInitAttr& attr, int& err) {
  if (remote_) {
    auto rsrq = remote_->create_srq(attr.max_wr, attr.max_sge, 0, err);
    if (!rsrq) return nullptr;
    ++children_;
    return std::unique_ptr<SharedReceiveQueue>(new SharedReceiveQueue(this, std::move(rsrq)));
  }
  detail::Pause pause(detail::to_thread(*device_));
  const DeviceLimits& lim = device_->limits();
  if (attr.max_wr == 0 || attr.max_wr > lim.max_qp_wr || attr.max_sge == 0 || attr.max_sge > lim.max_sge) {
    err = EINVAL;
    return nullptr;
  }
  ++children_;
  err = 0;
  return std::unique_ptr<SharedReceiveQueue>(new SharedReceiveQueue(this, attr));
}

std::unique_ptr<AddressHandle> ProtectionDomain::create_ah(const ibv_ah_attr& attr, int& err) {
  if (!attr.is_global || attr.grh.sgid_index >= device_->gids().size()) {
    err = EINVAL;
    return nullptr;
  }
  const wire::IpAddr dgid = wire::IpAddr::from_v6(attr.grh.dgid.raw);
  const wire::IpAddr& sgid = device_->gids()[attr.grh.sgid_index];
  // RoCEv2 carries one IP header: an IPv4 source cannot reach an IPv6 GID.
  if (sgid.is_v4_mapped() != dgid.is_v4_mapped()) {
    err = EINVAL;
    return nullptr;
  }
  if (remote_) return remote_ah(attr, dgid, sgid, err);
  detail::Pause pause(detail::to_thread(*device_));
  wire::MacAddr dmac;
  if (!detail::to_engine(*device_).resolve(dgid, dmac)) {
    detail::to_engine(*device_).resolve_neighbor(dgid);  // so that a retry can succeed
    err = EHOSTUNREACH;
    return nullptr;
  }
  ++children_;
  err = 0;
  return std::unique_ptr<AddressHandle>(new AddressHandle(this, attr, dgid, sgid, dmac));
}

// The daemon resolves the MAC and keeps the destination; the handle here
// names it in send slots.
std::unique_ptr<AddressHandle> ProtectionDomain::remote_ah(const ibv_ah_attr& attr, const wire::IpAddr& dgid,
                                                           const wire::IpAddr& sgid, int& err) {
  uint32_t handle = 0;
  err = remote_->create_ah(attr, handle);
  if (err != 0) return nullptr;
  std::unique_ptr<AddressHandle> ah(new AddressHandle(this, attr, dgid, sgid, wire::MacAddr{}));
  ah->remote_handle_ = handle;
  ++children_;
  return ah;
}

MemoryRegion::MemoryRegion(ProtectionDomain* pd, void* addr, size_t length, int access)
    : pd_(pd), addr_(static_cast<uint8_t*>(addr)), length_(length), access_(access),
      region_(std::make_unique<memory::Region>()) {
  region_->pd = pd;
  region_->addr = addr_;
  region_->iova = iova_ = reinterpret_cast<uintptr_t>(addr);
  region_->length = length;
  region_->access = access;
}

uint32_t MemoryRegion::in_use() const { return region_ ? region_->use_count : 0; }

MemoryRegion::~MemoryRegion() {
  if (!region_) {  // the daemon's (dereg_mr may have let go of remote_ already)
    remote_.reset();
    --pd_->children_;
    return;
  }
  detail::Pause pause(detail::to_thread(pd_->device()));
  if (region_->use_count != 0)
    std::fprintf(stderr, "uroce: memory region 0x%x destroyed while %u posted work request(s) use it; "
                 "they will complete with a protection error\n", key_, region_->use_count);
  if (key_ != 0) detail::to_engine(pd_->device()).mrs().remove(key_);
  detail::to_engine(pd_->device()).mrs().unbind_windows_of(region_.get());
  // Frames may still point into the region (a NIC frees sent mbufs only on
  // later TX calls): then owned memory goes with the last of them, and
  // memory the application registered must stay mapped until then.
  const bool in_flight = memory::release_tx_payloads(*region_, owned_ ? addr_ : nullptr);
  if (in_flight && !owned_)
    std::fprintf(stderr, "uroce: memory region 0x%x destroyed while frames sent from it are still queued; "
                 "keep the memory mapped until the port has sent them\n", key_);
  if (owned_ && !in_flight) rte_free(addr_);
  --pd_->children_;
}

}  // namespace uroce
