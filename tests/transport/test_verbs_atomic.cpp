// SPDX-License-Identifier: BSD-3-Clause
// Atomics, the fence, the READ/ATOMIC credit (max_rd_atomic) and the SQD
// state on RC.
#include "verbs_test_util.h"

using namespace uroce;
using namespace uroce::vt;

TEST_CASE("ATOMIC_CMP_AND_SWP: swaps on a match, not otherwise; the original comes back", "[verbs]") {
  Pair p(71);
  store64(p.b.buf(4096), 0x1111222233334444ull);
  store64(p.a.buf(0), 0xAAAAAAAAAAAAAAAAull);
  // Mismatch: memory unchanged, the original returned.
  REQUIRE(post_atomic(p.a, IBV_WR_ATOMIC_CMP_AND_SWP, 1, 0, p.b.addr(4096), p.b.key(), 0x1111222233334445ull,
                      0x5555) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(wa[0].opcode == IBV_WC_COMP_SWAP);
  CHECK(wa[0].byte_len == 8);
  CHECK(load64(p.a.buf(0)) == 0x1111222233334444ull);
  CHECK(load64(p.b.buf(4096)) == 0x1111222233334444ull);
  // Match: swapped, the original returned.
  REQUIRE(post_atomic(p.a, IBV_WR_ATOMIC_CMP_AND_SWP, 2, 8, p.b.addr(4096), p.b.key(), 0x1111222233334444ull,
                      0x0123456789ABCDEFull) == 0);
  wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(load64(p.a.buf(8)) == 0x1111222233334444ull);
  CHECK(load64(p.b.buf(4096)) == 0x0123456789ABCDEFull);
  // Neighbouring words untouched.
  CHECK(load64(p.b.buf(4088)) == 0);
  CHECK(load64(p.b.buf(4104)) == 0);
}

TEST_CASE("ATOMIC_FETCH_AND_ADD adds and returns the original, wrapping at 2^64", "[verbs]") {
  Pair p(72);
  store64(p.b.buf(800), 1000);
  REQUIRE(post_atomic(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 16, p.b.addr(800), p.b.key(), 234) == 0);
  REQUIRE(post_atomic(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, 2, 24, p.b.addr(800), p.b.key(), ~0ull) == 0);  // -1
  auto wa = p.wait(p.a, 2);
  REQUIRE(wa.size() == 2);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(wa[0].opcode == IBV_WC_FETCH_ADD);
  CHECK(wa[1].status == IBV_WC_SUCCESS);
  CHECK(load64(p.a.buf(16)) == 1000);
  CHECK(load64(p.a.buf(24)) == 1234);
  CHECK(load64(p.b.buf(800)) == 1233);
}

TEST_CASE("IBV_SEND_FENCE: a WR after a READ waits for the READ's data", "[verbs]") {
  Opts oa = Pair::default_a(), ob = Pair::default_b();
  Pair p(73, oa, ob);
  sim::LinkFaults f;
  f.latency_ns = 50'000;  // a long wire makes the race obvious
  p.fabric.wire().set_faults(f);
  fill(p.b.buf(0), 20000, 4);
  // READ b[0..20000) into a[0..), then WRITE a[0..20000) to b[100000..):
  // with the fence, the WRITE carries the data just read.
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_READ, 1, 0, 20000, p.b.addr(0), p.b.key()) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 2, 0, 20000, p.b.addr(100000), p.b.key(),
                    IBV_SEND_SIGNALED | IBV_SEND_FENCE) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].wr_id == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  // When the READ completes, the responder has seen nothing but the READ
  // request: the fenced WRITE had not started.
  CHECK(p.b.qp->counters().rcvd_pkts == 1);
  auto wa2 = p.wait(p.a, 1);
  REQUIRE(wa2.size() == 1);
  CHECK(wa2[0].wr_id == 2);
  CHECK(wa2[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(p.b.buf(100000), p.b.buf(0), 20000) == 0);
}

TEST_CASE("max_rd_atomic = 1 with many READs and atomics outstanding: all complete in order", "[verbs]") {
  Opts oa = Pair::default_a(), ob = Pair::default_b();
  oa.max_rd_atomic = 1;
  ob.max_dest_rd_atomic = 1;
  Pair p(74, oa, ob);
  fill(p.b.buf(0), 1 << 19, 6);
  store64(p.b.buf(1 << 19), 0);
  const int n = 40;
  for (int i = 0; i < n; ++i) {
    if (i % 5 == 4)
      REQUIRE(post_atomic(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, uint64_t(i), (1 << 19) + size_t(i) * 8,
                          p.b.addr(1 << 19), p.b.key(), 1) == 0);
    else
      REQUIRE(post_wr(p.a, IBV_WR_RDMA_READ, uint64_t(i), size_t(i) * 10000, 3000 + uint32_t(i) * 100,
                        p.b.addr(size_t(i) * 10000), p.b.key()) == 0);
  }
  auto wa = p.wait(p.a, n);
  REQUIRE(wa.size() == size_t(n));
  uint64_t faa = 0;
  for (int i = 0; i < n; ++i) {
    INFO("wr " << i);
    CHECK(wa[size_t(i)].wr_id == uint64_t(i));
    CHECK(wa[size_t(i)].status == IBV_WC_SUCCESS);
    if (i % 5 == 4) {
      CHECK(load64(p.a.buf((1 << 19) + size_t(i) * 8)) == faa++);
    } else {
      CHECK(std::memcmp(p.a.buf(size_t(i) * 10000), p.b.buf(size_t(i) * 10000), 3000 + size_t(i) * 100) == 0);
    }
  }
  CHECK(load64(p.b.buf(1 << 19)) == faa);
}

TEST_CASE("RTS -> SQD holds new work; SQD -> RTS releases it", "[verbs]") {
  Pair p(75);
  fill(p.a.buf(), 4096, 7);
  ibv_qp_attr d{};
  d.qp_state = IBV_QPS_SQD;
  REQUIRE(p.a.qp->modify(d, IBV_QP_STATE) == 0);
  CHECK(p.a.qp->state() == IBV_QPS_SQD);
  ibv_qp_attr q{};
  QpInitAttr init;
  REQUIRE(p.a.qp->query(q, -1, init) == 0);
  CHECK(q.qp_state == IBV_QPS_SQD);
  // Posting is allowed in SQD; the WR is not processed.
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 1, 0, 4096, p.b.addr(0), p.b.key()) == 0);
  p.run_for(50'000'000);
  CHECK(drain(*p.a.cq).empty());
  CHECK(p.b.buf(0)[0] == 0);
  CHECK(p.b.buf(4095)[0] == 0);
  // SQD -> SQD may change the timeout.
  ibv_qp_attr t{};
  t.timeout = 12;
  CHECK(p.a.qp->modify(t, IBV_QP_TIMEOUT) == 0);
  ibv_qp_attr r{};
  r.qp_state = IBV_QPS_RTS;
  REQUIRE(p.a.qp->modify(r, IBV_QP_STATE) == 0);
  CHECK(p.a.qp->state() == IBV_QPS_RTS);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(), 4096) == 0);
}

TEST_CASE("SQD drains the message in progress and starts no other", "[verbs]") {
  Pair p(76);
  fill(p.a.buf(), 300000, 8);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 1, 0, 200000, p.b.addr(0), p.b.key()) == 0);  // 196 packets
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 2, 200000, 1000, p.b.addr(500000), p.b.key()) == 0);
  REQUIRE(p.fabric.run_until([&] { return p.a.qp->counters().sent_pkts >= 5; }, kSecond));
  REQUIRE(p.a.qp->counters().sent_pkts < 196);  // the first WRITE is in progress
  ibv_qp_attr d{};
  d.qp_state = IBV_QPS_SQD;
  REQUIRE(p.a.qp->modify(d, IBV_QP_STATE) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].wr_id == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(), 200000) == 0);
  p.run_for(50'000'000);
  CHECK(drain(*p.a.cq).empty());
  CHECK(p.b.buf(500000)[0] == 0);  // the second never started
  CHECK(p.a.qp->counters().sent_pkts == 196);
  ibv_qp_attr r{};
  r.qp_state = IBV_QPS_RTS;
  REQUIRE(p.a.qp->modify(r, IBV_QP_STATE) == 0);
  wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].wr_id == 2);
  CHECK(std::memcmp(p.a.buf(200000), p.b.buf(500000), 1000) == 0);
}
