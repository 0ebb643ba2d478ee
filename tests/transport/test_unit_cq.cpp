// SPDX-License-Identifier: BSD-3-Clause
// The CQ ring's free-running 32-bit counters across their wrap: a ring
// indexed by counter % capacity would jump there (2^32 is no multiple of
// 3) and hand out a slot that still holds an unpolled completion.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "transport/cq.h"

namespace {

ibv_wc completion(uint64_t id) {
  ibv_wc wc{};
  wc.wr_id = id;
  wc.status = IBV_WC_SUCCESS;
  wc.opcode = IBV_WC_RDMA_WRITE;
  return wc;
}

// Pushes `push` completions numbered from next_id, then polls `poll` and
// checks they come out oldest first, numbered from want_id.
void push_then_poll(uroce::transport::Cq& cq, uint64_t& next_id, uint64_t& want_id, int push, int poll) {
  for (int i = 0; i < push; ++i) cq.push(completion(next_id++));
  std::vector<ibv_wc> wc(size_t(poll) + 1);
  REQUIRE(cq.take(poll, wc.data()) == poll);
  for (int i = 0; i < poll; ++i) CHECK(wc[size_t(i)].wr_id == want_id++);
}

}  // namespace

TEST_CASE("CQ counters wrap at 2^32 without losing or reordering completions", "[units]") {
  for (uint32_t capacity : {3u, 4u, 5u}) {
    INFO("capacity " << capacity);
    auto cq = std::make_unique<uroce::transport::Cq>(capacity);
    cq->start_counters_at(0xFFFFFFFFu - 1);
    uint64_t next_id = 1, want_id = 1;
    // Full rings on both sides of the wrap, and partial polls across it.
    push_then_poll(*cq, next_id, want_id, int(capacity), 1);
    push_then_poll(*cq, next_id, want_id, 1, int(capacity) - 1);
    push_then_poll(*cq, next_id, want_id, int(capacity) - 1, int(capacity));
    CHECK(cq->held() == 0);
    CHECK_FALSE(cq->overflowed());
    // One past full across the wrap: kept in the overflow list, in order.
    push_then_poll(*cq, next_id, want_id, int(capacity) + 1, int(capacity) + 1);
    CHECK(cq->overflowed());
    CHECK(cq->held() == 0);
  }
}
