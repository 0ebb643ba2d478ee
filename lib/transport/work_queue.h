// SPDX-License-Identifier: BSD-3-Clause
// Fixed-capacity FIFO ring used by the send, receive and shared receive
// queues: posting never allocates, and indices only grow (wrap by mask), so
// "how many are in flight" is a subtraction.
#pragma once

#include <cstdint>
#include <vector>

namespace uroce::transport {

template <class T>
class WorkQueue {
 public:
  WorkQueue() = default;
  explicit WorkQueue(uint32_t capacity) { reset(capacity); }

  void reset(uint32_t capacity) {
    uint32_t size = 1;
    while (size < capacity) size <<= 1;
    slots_.assign(size, T{});
    capacity_ = capacity;
    head_ = tail_ = 0;
  }

  uint32_t capacity() const { return capacity_; }
  uint32_t size() const { return head_ - tail_; }
  bool empty() const { return head_ == tail_; }
  bool full() const { return size() >= capacity_; }

  // Index-based access: indices run from tail() to head() - 1.
  uint32_t head() const { return head_; }
  uint32_t tail() const { return tail_; }
  T& at(uint32_t index) { return slots_[index & (slots_.size() - 1)]; }
  const T& at(uint32_t index) const { return slots_[index & (slots_.size() - 1)]; }

  T& push() { return at(head_++); }
  T& front() { return at(tail_); }
  const T& front() const { return at(tail_); }
  void pop() { ++tail_; }

  // The ring's storage: slots() entries (capacity rounded up to a power of
  // two); an entry's slot is where it sits in it, what out-of-line storage
  // kept per slot is indexed by.
  uint32_t slots() const { return uint32_t(slots_.size()); }
  uint32_t slot(const T& entry) const { return uint32_t(&entry - slots_.data()); }

 private:
  std::vector<T> slots_ = std::vector<T>(1);
  uint32_t capacity_ = 0;
  uint32_t head_ = 0;
  uint32_t tail_ = 0;
};

}  // namespace uroce::transport
