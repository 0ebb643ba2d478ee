// SPDX-License-Identifier: BSD-3-Clause
#include "transport/cq.h"

#include "transport/cq_channel.h"

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

bool Cq::spill(const ibv_wc& wc) {
  const bool first = !overflowed_.exchange(true, std::memory_order_relaxed);
  overflow_.push_back(wc);
  return first;
}

void Cq::note(const ibv_wc& wc, bool solicited) {
  const bool wakes_solicited = solicited || wc.status != IBV_WC_SUCCESS;
  if (!threaded_) {
    // Embedded: pushed is pollable. Nothing to do unless armed.
    if (armed_.load(std::memory_order_relaxed) != 0) fire(wakes_solicited ? Arm::solicited : Arm::any);
    return;
  }
  if (wakes_solicited) {
    solicited_upto_ = head_ + uint32_t(overflow_.size()) + 1;
    solicited_held_ = true;
  }
}

void Cq::arm(bool solicited_only) {
  // seq_cst: ordered before the application's next poll of the ring, as
  // the engine's fence orders its publication before reading armed_.
  armed_.store(uint8_t(solicited_only ? Arm::solicited : Arm::any), std::memory_order_seq_cst);
}

// `have`: the strongest kind among the completions that became pollable
// (Arm::solicited if any was solicited or unsuccessful).
void Cq::fire(Arm have) {
  const uint8_t a = armed_.load(std::memory_order_relaxed);
  if (a == 0 || (a == uint8_t(Arm::solicited) && have != Arm::solicited)) return;
  // One event per arming, even if the application re-arms meanwhile.
  if (armed_.exchange(0, std::memory_order_acq_rel) != 0) channel_->signal(*this);
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
  const uint32_t first = tail_;
  // The engine is the only producer: free room only grows meanwhile.
  unsigned room = ring_room_producer(wc_ring_);
  while (room > 0 && pending()) {
    const int n = take(int(std::min<unsigned>(room, 32)), batch);
    rte_ring_sp_enqueue_bulk_elem(wc_ring_, batch, sizeof(ibv_wc), unsigned(n), nullptr);
    room -= unsigned(n);
  }
  if (channel_ == nullptr || tail_ == first) return;
  // A solicited completion not yet published at the previous round has a
  // serial at or after `first`: it is in this batch (or, if the ring was
  // full, just behind it, about to follow).
  Arm have = Arm::any;
  if (solicited_held_) {
    if (int32_t(solicited_upto_ - first) > 0) have = Arm::solicited;
    if (int32_t(solicited_upto_ - tail_) <= 0) solicited_held_ = false;
  }
  // Publication before reading armed_, against the application's arm
  // before its poll: one of the two sees the other.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  fire(have);
}

int Cq::take_published(int n, ibv_wc* wc) {
  return int(rte_ring_sc_dequeue_burst_elem(wc_ring_, wc, sizeof(ibv_wc), unsigned(n), nullptr));
}

uint32_t Cq::published() const { return wc_ring_ ? ring_count_consumer(wc_ring_) : 0; }

}  // namespace uroce::transport
