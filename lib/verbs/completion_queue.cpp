#include "uroce/verbs/completion_queue.h"

#include <cstdio>
#include <cstdlib>

namespace uroce {

CompletionQueue::CompletionQueue(uint32_t capacity) : ring_(capacity), capacity_(capacity) {}

CompletionQueue::~CompletionQueue() {
  if (users_ != 0) {
    // verbs answers EBUSY; a destructor cannot, and going on would leave
    // QPs writing into freed memory.
    std::fprintf(stderr, "uroce: completion queue destroyed while %u QP(s) still use it\n", users_);
    std::abort();
  }
}

void CompletionQueue::push(const ibv_wc& wc) {
  if (head_ - tail_ >= capacity_ || !overflow_.empty()) {
    overflowed_ = true;
    overflow_.push_back(wc);
    return;
  }
  ring_[head_++ % capacity_] = wc;
}

int CompletionQueue::poll(int n, ibv_wc* wc) {
  int got = 0;
  while (got < n && tail_ != head_) wc[got++] = ring_[tail_++ % capacity_];
  // Completions that did not fit come after, in order; refill the ring.
  size_t moved = 0;
  while (moved < overflow_.size() && head_ - tail_ < capacity_) ring_[head_++ % capacity_] = overflow_[moved++];
  overflow_.erase(overflow_.begin(), overflow_.begin() + long(moved));
  while (got < n && tail_ != head_) wc[got++] = ring_[tail_++ % capacity_];
  return got;
}

}  // namespace uroce
