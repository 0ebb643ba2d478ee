// SPDX-License-Identifier: BSD-3-Clause
// The send queue: a ring of send WQE headers, and one slab holding each
// slot's SGEs or inline bytes (an inline send's SGEs are not kept: its bytes
// are copied at post), sized from the QP's capabilities when it is created.
// A UD queue also keeps each slot's destination. Posting writes into the
// slot's part of the slab; nothing is allocated after reset().
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "work_queue.h"
#include "wqe.h"

namespace uroce::transport {

class SendQueue : public WorkQueue<SendWqe> {
 public:
  void reset(uint32_t capacity, uint32_t max_sge, uint32_t max_inline, bool ud) {
    WorkQueue<SendWqe>::reset(capacity);
    // Whole SGEs per slot: room for max_sge of them or max_inline bytes.
    stride_ = std::max<uint32_t>({max_sge, uint32_t((max_inline + sizeof(ibv_sge) - 1) / sizeof(ibv_sge)), 1u});
    slab_.assign(size_t(slots()) * stride_, ibv_sge{});
    ud_.assign(ud ? slots() : 0, UdDest{});
  }

  SgeList sgl(const SendWqe& w) const { return {slab_.data() + offset(w), w.num_sge}; }
  ibv_sge* sges(const SendWqe& w) { return slab_.data() + offset(w); }
  // Room for max_inline bytes.
  uint8_t* inline_bytes(const SendWqe& w) { return reinterpret_cast<uint8_t*>(sges(w)); }
  const uint8_t* inline_bytes(const SendWqe& w) const {
    return reinterpret_cast<const uint8_t*>(slab_.data() + offset(w));
  }
  UdDest& ud(const SendWqe& w) { return ud_[slot(w)]; }

 private:
  size_t offset(const SendWqe& w) const { return size_t(slot(w)) * stride_; }

  uint32_t stride_ = 1;  // SGEs per slot
  std::vector<ibv_sge> slab_;
  std::vector<UdDest> ud_;
};

}  // namespace uroce::transport
