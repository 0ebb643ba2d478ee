// SPDX-License-Identifier: BSD-3-Clause
// A completion queue as the transport fills it: a ring of ibv_wc written by
// the engine, plus, in threaded mode, the single-producer/single-consumer
// rte_ring through which the engine thread hands completions to the
// application thread. The public CompletionQueue is a handle on one of these.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <vector>

struct rte_ring;

namespace uroce::transport {

class Cq {
 public:
  explicit Cq(uint32_t capacity);
  ~Cq();
  Cq(const Cq&) = delete;
  Cq& operator=(const Cq&) = delete;

  // Engine side: append one completion. One that finds the ring full goes
  // to the overflow list and comes out later in order: never lost.
  void push(const ibv_wc& wc);
  // Engine side: up to n of the oldest completions.
  int take(int n, ibv_wc* wc);
  bool pending() const { return head_ != tail_ || !overflow_.empty(); }
  // Completions held on the engine's side.
  uint32_t held() const { return uint32_t(head_ - tail_ + overflow_.size()); }

  uint32_t capacity() const { return capacity_; }
  bool overflowed() const { return overflowed_.load(std::memory_order_relaxed); }

  // QPs reporting into this CQ: it must outlive them.
  void attach() { ++users_; }
  void detach() { --users_; }
  uint32_t users() const { return users_; }

  // Threaded mode: the ring towards the application thread, made when the
  // engine thread first serves this CQ (false with errno in rte_errno).
  bool make_ring(const char* name);
  bool has_ring() const { return wc_ring_ != nullptr; }
  // Engine thread: as many held completions as fit into the ring.
  void publish();
  // Application thread: up to n completions from the ring.
  int take_published(int n, ibv_wc* wc);
  uint32_t published() const;

  // Tests: both free-running counters start at n (their 2^32 wrap).
  void start_counters_at(uint32_t n) { head_ = tail_ = n; }

 private:
  // A power of two long (at least capacity_), indexed by the free-running
  // counters masked: a modulo by any other length would cost a division per
  // completion and would jump when the counters wrap at 2^32.
  std::vector<ibv_wc> ring_;
  uint32_t mask_;
  std::vector<ibv_wc> overflow_;
  uint32_t capacity_;
  uint32_t head_ = 0;
  uint32_t tail_ = 0;
  uint32_t users_ = 0;
  std::atomic<bool> overflowed_{false};
  rte_ring* wc_ring_ = nullptr;
};

}  // namespace uroce::transport
