// Completion queue: a ring of ibv_wc entries filled by the transport and
// drained by poll(), as ibv_poll_cq.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <vector>

namespace uroce {

class CompletionQueue {
 public:
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  // Up to n completions into wc, oldest first; returns how many.
  int poll(int n, ibv_wc* wc);
  uint32_t capacity() const { return capacity_; }
  uint32_t size() const { return uint32_t(head_ - tail_ + overflow_.size()); }
  // A completion arrived while the ring was full (verbs: IBV_EVENT_CQ_ERR).
  // It is kept in an overflow list and still returned in order: never lost.
  bool overflowed() const { return overflowed_; }

  // Transport side: append one completion.
  void push(const ibv_wc& wc);
  // Transport side: QPs reporting into this CQ (it must outlive them).
  void attach() { ++users_; }
  void detach() { --users_; }

 private:
  friend class Device;
  explicit CompletionQueue(uint32_t capacity);

  std::vector<ibv_wc> ring_;
  std::vector<ibv_wc> overflow_;
  uint32_t capacity_;
  uint32_t head_ = 0;
  uint32_t tail_ = 0;
  uint32_t users_ = 0;
  bool overflowed_ = false;
};

}  // namespace uroce
