// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/verbs/completion_queue.h"

#include <cstdio>
#include <cstdlib>

#include "engine/engine_thread.h"
#include "transport/cq.h"

namespace uroce {

CompletionQueue::CompletionQueue(uint32_t capacity, detail::EngineThread* thread)
    : cq_(std::make_unique<transport::Cq>(capacity)), thread_(thread) {}

CompletionQueue::~CompletionQueue() {
  detail::Pause pause(*thread_);
  if (cq_->users() != 0) {
    // verbs answers EBUSY; a destructor cannot, and going on would leave
    // QPs writing into freed memory.
    std::fprintf(stderr, "uroce: completion queue destroyed while %u QP(s) still use it\n", cq_->users());
    std::abort();
  }
  thread_->detach_cq(*cq_);
}

int CompletionQueue::poll(int n, ibv_wc* wc) {
  if (n <= 0) return 0;
  int got = 0;
  if (cq_->has_ring()) {
    // Threaded mode's ring holds the older completions (it is read first
    // after the thread stops, too).
    got = cq_->take_published(n, wc);
    if (thread_->threaded()) return got;
  }
  return got + cq_->take(n - got, wc + got);
}

uint32_t CompletionQueue::capacity() const { return cq_->capacity(); }

uint32_t CompletionQueue::size() const {
  const uint32_t in_ring = cq_->published();
  if (cq_->has_ring() && thread_->threaded()) return in_ring;
  return in_ring + cq_->held();
}

bool CompletionQueue::overflowed() const { return cq_->overflowed(); }

}  // namespace uroce
