// SPDX-License-Identifier: BSD-3-Clause
// WorkQueue: the fixed-capacity FIFO behind the SQ, RQ and SRQ.
#include <catch2/catch.hpp>

#include "transport/work_queue.h"

using uroce::transport::WorkQueue;

TEST_CASE("WorkQueue holds exactly its capacity, FIFO, across many wraps", "[units]") {
  for (uint32_t cap : {1u, 3u, 5u, 8u, 100u}) {
    INFO("capacity " << cap);
    WorkQueue<int> q(cap);
    CHECK(q.capacity() == cap);
    CHECK(q.empty());
    CHECK_FALSE(q.full());
    int next_in = 0, next_out = 0;
    for (int round = 0; round < 50; ++round) {
      // Fill to the brim (a non-power-of-two capacity is not rounded up).
      while (!q.full()) q.push() = next_in++;
      CHECK(q.size() == cap);
      CHECK(q.head() - q.tail() == cap);
      // Index access sees them in order.
      for (uint32_t i = q.tail(), k = 0; i != q.head(); ++i, ++k) CHECK(q.at(i) == next_out + int(k));
      // Take some out (at least one), leaving the rest for the next round.
      const uint32_t take = 1 + uint32_t(round) % cap;
      for (uint32_t k = 0; k < take; ++k) {
        REQUIRE_FALSE(q.empty());
        CHECK(q.front() == next_out++);
        q.pop();
      }
      CHECK(q.size() == cap - take);
    }
    while (!q.empty()) {
      CHECK(q.front() == next_out++);
      q.pop();
    }
    CHECK(next_out == next_in);
  }
}

TEST_CASE("WorkQueue reset empties it and changes the capacity", "[units]") {
  WorkQueue<int> q(4);
  q.push() = 1;
  q.push() = 2;
  q.reset(2);
  CHECK(q.empty());
  CHECK(q.size() == 0);
  CHECK(q.capacity() == 2);
  q.push() = 7;
  q.push() = 8;
  CHECK(q.full());
  CHECK(q.front() == 7);
}

TEST_CASE("WorkQueue of capacity 0 is always full", "[units]") {
  WorkQueue<int> q(0);
  CHECK(q.empty());
  CHECK(q.full());
}

#include "transport/recv_queue.h"

namespace {

using uroce::transport::RecvQueue;
using uroce::transport::RecvWqe;

void post(RecvQueue& q, uint64_t wr_id, uint64_t addr) {
  RecvWqe& w = q.wq.push();
  w.wr_id = wr_id;
  w.num_sge = 2;
  ibv_sge* s = q.sges(w);
  s[0] = {addr, 10, 1};
  s[1] = {addr + 100, 20, 1};
  w.total = 30;
}

bool holds(const RecvQueue& q, const RecvWqe& w, uint64_t wr_id, uint64_t addr) {
  const auto sgl = q.sgl(w);
  return w.wr_id == wr_id && sgl.num == 2 && sgl.sge[0].addr == addr && sgl.sge[1].addr == addr + 100;
}

}  // namespace

TEST_CASE("RecvQueue: a taken WQE keeps its SGEs while the ring is refilled many times over", "[units]") {
  RecvQueue q;
  q.reset(2, 2, 0);  // an SRQ's: holder blocks come with the QPs
  RecvWqe held[2];
  held[0].block = q.add_holder();
  held[1].block = q.add_holder();
  CHECK(held[0].block != held[1].block);
  post(q, 1, 1000);
  post(q, 2, 2000);
  q.take(held[0]);
  q.take(held[1]);
  CHECK(q.wq.empty());
  // Both holders are mid-message: the ring's slots are posted again and
  // again, and taken by nobody.
  for (uint64_t i = 0; i < 50; ++i) {
    post(q, 100 + i, 100000 + i * 1000);
    if (q.wq.full()) {
      q.wq.pop();
      q.wq.pop();
    }
  }
  CHECK(holds(q, held[0], 1, 1000));
  CHECK(holds(q, held[1], 2, 2000));
  // A holder that completes takes the next one with its block, which the
  // ring reuses: still no two live WQEs share a block.
  while (!q.wq.empty()) q.wq.pop();
  post(q, 7, 7000);
  post(q, 8, 8000);
  q.take(held[0]);
  CHECK(holds(q, held[0], 7, 7000));
  post(q, 9, 9000);
  CHECK(holds(q, held[0], 7, 7000));
  CHECK(holds(q, held[1], 2, 2000));
  CHECK(holds(q, q.wq.at(q.wq.tail()), 8, 8000));
  CHECK(holds(q, q.wq.at(q.wq.tail() + 1), 9, 9000));
  // A holder's block given back goes to the next QP that attaches.
  const uint32_t b = held[1].block;
  q.drop_holder(b);
  CHECK(q.add_holder() == b);
}
