// SPDX-License-Identifier: BSD-3-Clause
#include "transport/cq.h"

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <algorithm>
#include <bit>

namespace uroce::transport {
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

Cq::Cq(uint32_t capacity)
    : ring_(std::bit_ceil(std::max(capacity, 1u))), mask_(uint32_t(ring_.size() - 1)), capacity_(capacity) {}

Cq::~Cq() { rte_ring_free(wc_ring_); }

void Cq::push(const ibv_wc& wc) {
  if (head_ - tail_ >= capacity_ || !overflow_.empty()) {
    overflowed_.store(true, std::memory_order_relaxed);
    overflow_.push_back(wc);
    return;
  }
  ring_[head_++ & mask_] = wc;
}

int Cq::take(int n, ibv_wc* wc) {
  int got = 0;
  while (got < n && tail_ != head_) wc[got++] = ring_[tail_++ & mask_];
  // Completions that did not fit come after, in order; refill the ring.
  size_t moved = 0;
  while (moved < overflow_.size() && head_ - tail_ < capacity_) ring_[head_++ & mask_] = overflow_[moved++];
  overflow_.erase(overflow_.begin(), overflow_.begin() + long(moved));
  while (got < n && tail_ != head_) wc[got++] = ring_[tail_++ & mask_];
  return got;
}

bool Cq::make_ring(const char* name) {
  if (wc_ring_ != nullptr) return true;
  wc_ring_ = rte_ring_create_elem(name, sizeof(ibv_wc), capacity_, SOCKET_ID_ANY,
                                  RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
  return wc_ring_ != nullptr;
}

void Cq::publish() {
  ibv_wc batch[32];
  // The engine is the only producer: free room only grows meanwhile.
  unsigned room = ring_room_producer(wc_ring_);
  while (room > 0 && pending()) {
    const int n = take(int(std::min<unsigned>(room, 32)), batch);
    rte_ring_sp_enqueue_bulk_elem(wc_ring_, batch, sizeof(ibv_wc), unsigned(n), nullptr);
    room -= unsigned(n);
  }
}

int Cq::take_published(int n, ibv_wc* wc) {
  return int(rte_ring_sc_dequeue_burst_elem(wc_ring_, wc, sizeof(ibv_wc), unsigned(n), nullptr));
}

uint32_t Cq::published() const { return wc_ring_ ? ring_count_consumer(wc_ring_) : 0; }

}  // namespace uroce::transport
