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
