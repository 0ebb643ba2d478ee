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

namespace uroce {
class CompletionQueue;
}

namespace uroce::transport {

class CqChannel;

// Arming (ibv_req_notify_cq): the next completion, or the next solicited
// or unsuccessful one, triggers one event on the CQ's channel.
enum class Arm : uint8_t { none = 0, any = 1, solicited = 2 };

class Cq {
 public:
  explicit Cq(uint32_t capacity);
  ~Cq();
  Cq(const Cq&) = delete;
  Cq& operator=(const Cq&) = delete;

  // Engine side: append one completion. One that finds the ring full goes
  // to the overflow list and comes out later in order: never lost. True
  // only for the first completion that overflowed (IBV_EVENT_CQ_ERR).
  // `solicited`: an incoming SEND that carried the SE bit.
  bool push(const ibv_wc& wc, bool solicited = false) {
    if (channel_ != nullptr) note(wc, solicited);
    if (head_ - tail_ >= capacity_ || !overflow_.empty()) return spill(wc);
    ring_[head_++ & mask_] = wc;
    return false;
  }
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

  // Completion events. The channel (not owned) is set at creation. In
  // embedded mode an armed CQ fires when a completion is pushed; in
  // threaded mode when the engine thread publishes it into the ring, the
  // moment the application can poll it, so an application that arms and
  // then polls an empty ring cannot miss a completion published between.
  void set_channel(CqChannel* ch) { channel_ = ch; }
  void set_owner(CompletionQueue* owner) { owner_ = owner; }
  CqChannel* channel() const { return channel_; }
  CompletionQueue* owner() const { return owner_; }
  // Application side.
  void arm(bool solicited_only);
  // Engine side: the engine thread now publishes this CQ (or no longer).
  void set_threaded(bool on) { threaded_ = on; }
  // Channel bookkeeping, guarded by the channel's mutex.
  Cq* event_next = nullptr;      // the channel's queue of CQs with events
  uint32_t events_queued = 0;    // events signalled, not yet handed out
  uint64_t events_handed = 0;    // handed out by get_event
  uint64_t events_acked = 0;     // acknowledged (ack_events)

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

  bool spill(const ibv_wc& wc);
  void note(const ibv_wc& wc, bool solicited);
  void fire(Arm need);
  // Notification state. armed_ is written by the application and cleared
  // by the engine when it fires; the rest is the engine's own.
  CqChannel* channel_ = nullptr;
  CompletionQueue* owner_ = nullptr;
  bool threaded_ = false;
  // Threaded mode: one past the serial number (the count of completions
  // pushed before it) of the latest solicited or unsuccessful completion,
  // and whether one is still unpublished.
  uint32_t solicited_upto_ = 0;
  bool solicited_held_ = false;
  alignas(64) std::atomic<uint8_t> armed_{0};
};

}  // namespace uroce::transport
