// SPDX-License-Identifier: BSD-3-Clause
// Duplicated and reordered frames: requests executed once (atomics answered
// from the replay cache, SENDs not consuming a second receive), READs
// re-executed, data intact.
#include <algorithm>

#include "verbs_test_util.h"

using namespace uroce;
using namespace uroce::vt;

namespace {

Opts big_queue(Opts o) {
  o.max_send_wr = 1024;
  o.max_recv_wr = 1024;
  return o;
}

}  // namespace

TEST_CASE("Duplicated atomics execute exactly once", "[duplicates]") {
  for (uint64_t seed : {1ull, 2ull, 3ull}) {
    DYNAMIC_SECTION("seed " << seed) {
      INFO("seed " << seed);
      Pair p(seed, big_queue(Pair::default_a()), big_queue(Pair::default_b()));
      sim::LinkFaults f;
      f.duplicate = 0.3;
      f.reorder = 0.05;
      p.fabric.wire().set_faults(f);
      const uint64_t counter = p.b.addr(0), word = p.b.addr(64);
      const int n_faa = 400, n_cas = 100;
      int cas = 0;
      std::vector<int> kind;  // 0 FAA, 1 CAS (its index in the CAS chain)
      for (int i = 0; i < n_faa + n_cas; ++i) {
        const size_t out = 4096 + size_t(i) * 8;
        if (i % 5 == 2) {
          REQUIRE(post_atomic(p.a, IBV_WR_ATOMIC_CMP_AND_SWP, uint64_t(i), out, word, p.b.key(), uint64_t(cas),
                              uint64_t(cas) + 1) == 0);
          ++cas;
          kind.push_back(1);
        } else {
          REQUIRE(post_atomic(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, uint64_t(i), out, counter, p.b.key(), 1) == 0);
          kind.push_back(0);
        }
      }
      REQUIRE(cas == n_cas);
      auto wa = p.wait(p.a, size_t(n_faa + n_cas), 20 * kSecond);
      REQUIRE(wa.size() == size_t(n_faa + n_cas));
      std::vector<uint64_t> faa_orig;
      uint64_t next_cas = 0;
      for (size_t i = 0; i < wa.size(); ++i) {
        INFO("wc " << i);
        CHECK(wa[i].wr_id == i);
        CHECK(wa[i].status == IBV_WC_SUCCESS);
        const uint64_t orig = load64(p.a.buf(4096 + i * 8));
        if (kind[i] == 0) {
          faa_orig.push_back(orig);
        } else {
          CHECK(orig == next_cas);  // each CAS saw its predecessor's swap, and only that
          ++next_cas;
        }
      }
      CHECK(load64(p.b.buf(0)) == uint64_t(n_faa));  // never executed twice
      CHECK(load64(p.b.buf(64)) == uint64_t(n_cas));
      std::sort(faa_orig.begin(), faa_orig.end());
      for (size_t i = 0; i < faa_orig.size(); ++i) CHECK(faa_orig[i] == i);  // distinct: 0..n-1
      CHECK(p.fabric.wire().totals().duplicated > 0);
      CHECK(p.b.qp->counters().duplicate_request > 0);
    }
  }
}

TEST_CASE("Duplicated SENDs consume one receive each; READs and WRITEs stay correct", "[duplicates]") {
  for (uint64_t seed : {4ull, 5ull}) {
    DYNAMIC_SECTION("seed " << seed) {
      INFO("seed " << seed);
      Opts oa = big_queue(Pair::default_a()), ob = big_queue(Pair::default_b());
      oa.bytes = ob.bytes = 4 << 20;
      Pair p(seed, oa, ob);
      sim::LinkFaults f;
      f.duplicate = 0.3;
      f.reorder = 0.05;
      p.fabric.wire().set_faults(f);
      fill(p.a.buf(), 1 << 20, uint32_t(seed));
      fill(p.b.buf(2 << 20), 1 << 20, uint32_t(seed) + 1);
      const int n = 60;
      for (int i = 0; i < n + 10; ++i) REQUIRE(post_recv(p.b, 1000 + uint64_t(i), size_t(i) * 8192, 8192) == 0);
      for (int i = 0; i < n; ++i) {
        const uint32_t len = 1 + uint32_t(i * 379 % 8000);
        REQUIRE(post_send(p.a, uint64_t(i) * 3, size_t(i) * 8192, len) == 0);
        REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, uint64_t(i) * 3 + 1, size_t(i) * 8192, len,
                          p.b.addr((1 << 20) + size_t(i) * 8192), p.b.key()) == 0);
        REQUIRE(post_wr(p.a, IBV_WR_RDMA_READ, uint64_t(i) * 3 + 2, (2 << 20) + size_t(i) * 8192, len,
                          p.b.addr((2 << 20) + size_t(i) * 8192), p.b.key()) == 0);
      }
      auto wa = p.wait(p.a, 3 * n, 20 * kSecond);
      REQUIRE(wa.size() == size_t(3 * n));
      for (size_t i = 0; i < wa.size(); ++i) {
        INFO("wc " << i);
        CHECK(wa[i].wr_id == i);
        CHECK(wa[i].status == IBV_WC_SUCCESS);
      }
      auto wb = p.wait(p.b, n, kSecond);
      p.run_for(50'000'000);
      auto more = drain(*p.b.cq);
      wb.insert(wb.end(), more.begin(), more.end());
      REQUIRE(wb.size() == size_t(n));  // exactly one receive per SEND
      for (int i = 0; i < n; ++i) {
        const uint32_t len = 1 + uint32_t(i * 379 % 8000);
        INFO("message " << i);
        CHECK(wb[size_t(i)].wr_id == 1000 + uint64_t(i));
        CHECK(wb[size_t(i)].byte_len == len);
        CHECK(std::memcmp(p.b.buf(size_t(i) * 8192), p.a.buf(size_t(i) * 8192), len) == 0);
        CHECK(std::memcmp(p.b.buf((1 << 20) + size_t(i) * 8192), p.a.buf(size_t(i) * 8192), len) == 0);
        CHECK(std::memcmp(p.a.buf((2 << 20) + size_t(i) * 8192), p.b.buf((2 << 20) + size_t(i) * 8192), len) == 0);
      }
      CHECK(p.b.qp->counters().duplicate_request > 0);
    }
  }
}

TEST_CASE("Lost atomic response: the retry is answered from the replay cache", "[duplicates]") {
  Pair p(6);
  store64(p.b.buf(0), 10);
  p.fabric.wire().cut_one_way(p.port_b(), p.port_a());
  REQUIRE(post_atomic(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 64, p.b.addr(0), p.b.key(), 5) == 0);
  REQUIRE(p.fabric.run_until([&] { return p.b.qp->counters().sent_pkts >= 1; }, kSecond));
  CHECK(load64(p.b.buf(0)) == 15);  // executed, response lost
  p.fabric.wire().cut_one_way(p.port_b(), p.port_a(), false);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(load64(p.a.buf(64)) == 10);  // the original value, not 15
  CHECK(load64(p.b.buf(0)) == 15);   // not executed again
  CHECK(p.b.qp->counters().duplicate_request == 1);
  CHECK(p.a.qp->counters().local_ack_timeout_err == 1);
}

TEST_CASE("Lost ACK of a WRITE_WITH_IMM: the duplicate is re-acknowledged, no second receive", "[duplicates]") {
  Pair p(7);
  fill(p.a.buf(), 3000, 7);
  REQUIRE(post_recv(p.b, 1, 0, 0) == 0);
  REQUIRE(post_recv(p.b, 2, 0, 0) == 0);
  p.fabric.wire().cut_one_way(p.port_b(), p.port_a());
  ibv_sge s = sge(p.a, 0, 3000);
  SendWr wr = make_wr(IBV_WR_RDMA_WRITE_WITH_IMM, 9, &s);
  wr.wr.rdma.remote_addr = p.b.addr(10000);
  wr.wr.rdma.rkey = p.b.key();
  wr.imm_data = htonl(1);
  REQUIRE(post(p.a, wr) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].wr_id == 1);
  p.run_for(1'000);  // b's ACK leaves on its next poll: lose that too
  p.fabric.wire().cut_one_way(p.port_b(), p.port_a(), false);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  p.run_for(20'000'000);
  CHECK(drain(*p.b.cq).empty());  // receive 2 untouched
  CHECK(p.b.qp->counters().duplicate_request >= 1);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(10000), 3000) == 0);
}
