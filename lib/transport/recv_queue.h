// SPDX-License-Identifier: BSD-3-Clause
// A receive queue: the QP's own, or the one inside a shared receive queue.
//
// Its SGEs live in a slab of blocks of max_sge SGEs, one block per ring slot
// plus one per QP that takes receives from it (its holder block). A
// responder takes a WQE by swapping it with the one it holds (take()): the
// WQE, its block with it, becomes the responder's, and the slot gets the
// responder's free block for the next post. So a message's SGEs stay where
// they were posted until it completes, whatever is posted meanwhile, and
// nothing is copied but the 24-byte header. This is what lets an SRQ serve
// several QPs each in the middle of a message: a ring that kept the WQE in
// its slot until completion would be freed out of order.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "work_queue.h"
#include "wqe.h"

namespace uroce {
class SharedReceiveQueue;
}

namespace uroce::transport {

struct RecvQueue {
  WorkQueue<RecvWqe> wq;
  uint32_t max_sge = 1;
  // SRQ only: the armed limit (ibv_modify_srq IBV_SRQ_LIMIT), 0 = off.
  // When a receive taken leaves fewer WQEs than this, the SRQ_LIMIT_REACHED
  // event fires once and the limit disarms.
  uint32_t limit = 0;
  // SRQ only: QPs drawing from it (it must outlive them), and the public
  // handle its events name.
  uint32_t users = 0;
  SharedReceiveQueue* owner = nullptr;

  // `holders`: how many holder blocks to make room for now (1 for a QP's
  // own queue; an SRQ's grows as QPs attach).
  void reset(uint32_t capacity, uint32_t sge_per_wqe, uint32_t holders) {
    wq.reset(capacity);
    max_sge = sge_per_wqe ? sge_per_wqe : 1;
    for (uint32_t i = 0; i < wq.slots(); ++i) wq.at(i).block = i;
    blocks_ = wq.slots();
    slab_.clear();
    slab_.shrink_to_fit();
    slab_.reserve(size_t(blocks_ + holders) * max_sge);
    slab_.resize(size_t(blocks_) * max_sge);
    free_.clear();
  }

  SgeList sgl(const RecvWqe& w) const { return {slab_.data() + size_t(w.block) * max_sge, int(w.num_sge)}; }
  ibv_sge* sges(const RecvWqe& w) { return slab_.data() + size_t(w.block) * max_sge; }

  // The front WQE becomes `held`'s (which must hold a free block); pops it.
  void take(RecvWqe& held) {
    std::swap(wq.front(), held);
    wq.pop();
  }

  // A QP starts or stops taking from this queue: the block it holds
  // (control path; the slab grows only here).
  uint32_t add_holder() {
    if (!free_.empty()) {
      const uint32_t b = free_.back();
      free_.pop_back();
      return b;
    }
    slab_.resize(slab_.size() + max_sge);
    return blocks_++;
  }
  void drop_holder(uint32_t block) { free_.push_back(block); }

 private:
  std::vector<ibv_sge> slab_;
  std::vector<uint32_t> free_;  // holder blocks given back
  uint32_t blocks_ = 0;
};

}  // namespace uroce::transport
