// SPDX-License-Identifier: BSD-3-Clause
// What the library's own code reaches behind the public verbs objects: the
// engine behind a Device, and the transport or memory record behind a
// QueuePair, CompletionQueue, SharedReceiveQueue or MemoryRegion. The public
// headers name these types only as opaque pointers; only code that includes
// this (not installed) header can follow them, the way rdma-core's providers
// reach their own structures behind an ibv_qp.
#pragma once

#include "uroce/verbs/completion_channel.h"
#include "uroce/verbs/completion_queue.h"
#include "uroce/verbs/device.h"
#include "uroce/verbs/memory_region.h"
#include "uroce/verbs/protection_domain.h"
#include "uroce/verbs/queue_pair.h"
#include "uroce/verbs/shared_receive_queue.h"

namespace uroce::detail {

struct Access {
  static engine::Engine& engine(const Device& d) { return *d.engine_; }
  static EngineThread& thread(const Device& d) { return *d.thread_; }
  static transport::Qp& qp(const QueuePair& q) { return *q.impl_; }
  static transport::Cq& cq(const CompletionQueue& c) { return *c.cq_; }
  static transport::RecvQueue& srq(const SharedReceiveQueue& s) { return *s.queue_; }
  static memory::Region& region(const MemoryRegion& m) { return *m.region_; }
  static transport::CqChannel* channel(const CompletionChannel& c) { return c.core_.get(); }
  static RemoteDevice* remote(const Device& d) { return d.remote_.get(); }
  static client::CompletionQueue* remote(const CompletionQueue& c) { return c.remote_.get(); }
  static client::QueuePair* remote(const QueuePair& q) { return q.remote_.get(); }
  static client::SharedReceiveQueue* remote(const SharedReceiveQueue& q) { return q.remote_.get(); }
  static std::unique_ptr<QueuePair> create_qp_numbered(ProtectionDomain& pd, const QpInitAttr& attr, uint32_t qpn,
                                                       int& err) {
    return pd.create_qp_numbered(attr, qpn, err);
  }
};

inline engine::Engine& to_engine(const Device& d) { return Access::engine(d); }
inline EngineThread& to_thread(const Device& d) { return Access::thread(d); }
inline transport::Qp& to_qp(const QueuePair& q) { return Access::qp(q); }
inline transport::Cq& to_cq(const CompletionQueue& c) { return Access::cq(c); }
inline transport::RecvQueue& to_srq(const SharedReceiveQueue& s) { return Access::srq(s); }
inline transport::CqChannel* to_channel(const CompletionChannel& c) { return Access::channel(c); }
inline memory::Region& to_region(const MemoryRegion& m) { return Access::region(m); }

}  // namespace uroce::detail
