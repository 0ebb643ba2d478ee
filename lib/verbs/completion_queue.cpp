#include "uroce/verbs/completion_queue.h"

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "engine_thread.h"

namespace uroce {
namespace {

// rte_ring_count reads the other side's index with a plain load; these read
// it atomically (acquire), as the ring's own C11 code does, and their own
// side's index, which only this thread writes, as it is.
uint32_t ring_count_consumer(const rte_ring* r) {
  return __atomic_load_n(&r->prod.tail, __ATOMIC_ACQUIRE) - r->cons.tail;
}
uint32_t ring_room_producer(const rte_ring* r) {
  return r->capacity - (r->prod.tail - __atomic_load_n(&r->cons.tail, __ATOMIC_ACQUIRE));
}

}  // namespace

CompletionQueue::CompletionQueue(uint32_t capacity)
    : ring_(std::bit_ceil(std::max(capacity, 1u))), mask_(uint32_t(ring_.size() - 1)), capacity_(capacity) {}

CompletionQueue::~CompletionQueue() {
  std::optional<detail::Pause> pause;
  if (thread_) pause.emplace(*thread_);
  if (users_ != 0) {
    // verbs answers EBUSY; a destructor cannot, and going on would leave
    // QPs writing into freed memory.
    std::fprintf(stderr, "uroce: completion queue destroyed while %u QP(s) still use it\n", users_);
    std::abort();
  }
  if (thread_) thread_->detach_cq(*this);
  rte_ring_free(wc_ring_);
}

void CompletionQueue::push(const ibv_wc& wc) {
  if (head_ - tail_ >= capacity_ || !overflow_.empty()) {
    overflowed_.store(true, std::memory_order_relaxed);
    overflow_.push_back(wc);
    return;
  }
  ring_[head_++ & mask_] = wc;
}

int CompletionQueue::take(int n, ibv_wc* wc) {
  int got = 0;
  while (got < n && tail_ != head_) wc[got++] = ring_[tail_++ & mask_];
  // Completions that did not fit come after, in order; refill the ring.
  size_t moved = 0;
  while (moved < overflow_.size() && head_ - tail_ < capacity_) ring_[head_++ & mask_] = overflow_[moved++];
  overflow_.erase(overflow_.begin(), overflow_.begin() + long(moved));
  while (got < n && tail_ != head_) wc[got++] = ring_[tail_++ & mask_];
  return got;
}

int CompletionQueue::poll(int n, ibv_wc* wc) {
  if (n <= 0) return 0;
  int got = 0;
  if (wc_ring_ != nullptr) {
    // Threaded mode's ring holds the older completions (it is read first
    // after the thread stops, too).
    got = int(rte_ring_sc_dequeue_burst_elem(wc_ring_, wc, sizeof(ibv_wc), unsigned(n), nullptr));
    if (thread_->threaded()) return got;
  }
  return got + take(n - got, wc + got);
}

uint32_t CompletionQueue::size() const {
  const uint32_t in_ring = wc_ring_ ? ring_count_consumer(wc_ring_) : 0;
  if (wc_ring_ && thread_->threaded()) return in_ring;
  return in_ring + uint32_t(head_ - tail_ + overflow_.size());
}

void CompletionQueue::publish() {
  ibv_wc batch[32];
  // The engine is the only producer: free room only grows meanwhile.
  unsigned room = ring_room_producer(wc_ring_);
  while (room > 0 && pending()) {
    const int n = take(int(std::min<unsigned>(room, 32)), batch);
    rte_ring_sp_enqueue_bulk_elem(wc_ring_, batch, sizeof(ibv_wc), unsigned(n), nullptr);
    room -= unsigned(n);
  }
}

}  // namespace uroce
