// SPDX-License-Identifier: BSD-3-Clause
// Completion queue: a ring of ibv_wc entries filled by the transport and
// drained by poll(), as ibv_poll_cq.
//
// In threaded mode (Device::start_engine_thread) the engine thread moves
// completions into a single-producer/single-consumer ring that poll() reads
// without a lock: one application thread may poll a CQ at a time.
#pragma once

#include "uroce/api.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>

namespace uroce {

namespace transport {
class Cq;
}
class CompletionChannel;
namespace client {
class CompletionQueue;
}
namespace detail {
class EngineThread;
struct Access;
}

class UROCE_API CompletionQueue {
 public:
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  // Up to n completions into wc, oldest first; returns how many.
  int poll(int n, ibv_wc* wc);
  // ibv_req_notify_cq: the next completion (solicited_only: the next one
  // of an incoming SEND with the solicited bit, or the next unsuccessful
  // one) that arrives after this call queues one event on the CQ's
  // channel; then the CQ must be armed again. Completions already in the
  // CQ do not count: arm, then poll the CQ empty, then wait. EINVAL if
  // the CQ has no channel.
  int req_notify(bool solicited_only);
  // ibv_ack_cq_events: n events taken with CompletionChannel::get_event.
  // Destroying the CQ waits until every event handed out is acknowledged.
  void ack_events(unsigned n);
  CompletionChannel* channel() const { return channel_; }
  // The completion vector given at creation (uroce has one interrupt-less
  // engine per device: recorded, for ibv_cq's comp_vector).
  int comp_vector() const { return comp_vector_; }
  uint32_t capacity() const;
  // Completions waiting; in threaded mode, those poll() can take now.
  uint32_t size() const;
  // A completion arrived while the ring was full (verbs: IBV_EVENT_CQ_ERR).
  // It is kept in an overflow list and still returned in order: never lost.
  // In threaded mode the engine's side holds another `capacity` entries
  // before this is set.
  bool overflowed() const;

 private:
  friend class Device;
  friend struct detail::Access;
  CompletionQueue(uint32_t capacity, detail::EngineThread* thread, CompletionChannel* channel, int comp_vector);
  CompletionQueue(std::unique_ptr<client::CompletionQueue> remote, CompletionChannel* channel, int comp_vector);

  std::unique_ptr<transport::Cq> cq_;
  detail::EngineThread* thread_;
  CompletionChannel* channel_;
  int comp_vector_;
  std::unique_ptr<client::CompletionQueue> remote_;  // a client of uroced
};

}  // namespace uroce
