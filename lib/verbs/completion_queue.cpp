// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/verbs/completion_queue.h"

#include <cstdio>
#include <cstdlib>

#include <cerrno>

#include "access.h"
#include "engine/engine.h"
#include "engine/engine_thread.h"
#include "transport/cq.h"
#include "transport/cq_channel.h"
#include "uroce/client/daemon_client.h"

namespace uroce {

CompletionQueue::CompletionQueue(uint32_t capacity, detail::EngineThread* thread, CompletionChannel* channel,
                                 int comp_vector)
    : cq_(std::make_unique<transport::Cq>(capacity)), thread_(thread), channel_(channel), comp_vector_(comp_vector) {
  cq_->set_owner(this);
  if (channel_ != nullptr) cq_->set_channel(detail::to_channel(*channel_));
}

CompletionQueue::CompletionQueue(std::unique_ptr<client::CompletionQueue> remote, CompletionChannel* channel,
                                 int comp_vector)
    : thread_(nullptr), channel_(channel), comp_vector_(comp_vector), remote_(std::move(remote)) {
  remote_->context = this;
}

CompletionQueue::~CompletionQueue() {
  if (remote_) return;  // the client object tells the daemon
  // Waited for outside the pause: the acknowledgement may come from
  // another thread, whose control calls the pause would hold up.
  transport::CqChannel* ch = cq_->channel();
  if (ch != nullptr) ch->wait_acked(*cq_);
  detail::Pause pause(*thread_);
  if (cq_->users() != 0) {
    // verbs answers EBUSY; a destructor cannot, and going on would leave
    // QPs writing into freed memory.
    std::fprintf(stderr, "uroce: completion queue destroyed while %u QP(s) still use it\n", cq_->users());
    std::abort();
  }
  thread_->detach_cq(*cq_);
  thread_->engine().drop_async_events(this);
  if (ch != nullptr) ch->detach(*cq_);
}

int CompletionQueue::req_notify(bool solicited_only) {
  if (channel_ == nullptr) return EINVAL;
  if (remote_) return remote_->req_notify(solicited_only);
  cq_->arm(solicited_only);
  return 0;
}

void CompletionQueue::ack_events(unsigned n) {
  if (remote_) return;
  if (transport::CqChannel* ch = cq_->channel(); ch != nullptr && n > 0) ch->ack(*cq_, n);
}

int CompletionQueue::poll(int n, ibv_wc* wc) {
  if (n <= 0) return 0;
  if (remote_) return remote_->poll(n, wc);
  int got = 0;
  if (cq_->has_ring()) {
    // Callers drive for the completions they would otherwise miss: a
    // round per poll that the ring already fills (ibv_next_poll steps one
    // at a time) would only delay the program.
    if (thread_->callers_drive() && cq_->published() < uint32_t(n)) thread_->drive();
    // Threaded mode's ring holds the older completions (it is read first
    // after the thread stops, too).
    got = cq_->take_published(n, wc);
    if (thread_->threaded()) return got;
  }
  return got + cq_->take(n - got, wc + got);
}

uint32_t CompletionQueue::capacity() const { return remote_ ? remote_->capacity() : cq_->capacity(); }

uint32_t CompletionQueue::size() const {
  if (remote_) return remote_->size();
  const uint32_t in_ring = cq_->published();
  if (cq_->has_ring() && thread_->threaded()) return in_ring;
  return in_ring + cq_->held();
}

bool CompletionQueue::overflowed() const { return remote_ ? false : cq_->overflowed(); }

}  // namespace uroce
