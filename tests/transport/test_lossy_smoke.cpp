// SPDX-License-Identifier: BSD-3-Clause
#include "rc_pair.h"

using namespace uroce;
using namespace uroce::test;

TEST_CASE("RC operations complete with correct data under loss, reorder, dup, corruption", "[lossy]") {
  for (uint64_t seed : {1, 2, 3}) {
    DYNAMIC_SECTION("seed " << seed) {
      RcPair p(seed, 4 << 20);
      sim::LinkFaults f;
      f.loss = 0.05;
      f.reorder = 0.05;
      f.duplicate = 0.05;
      f.corrupt = 0.03;
      p.fabric.wire().set_faults(f);
      for (size_t i = 0; i < (4u << 20); ++i) p.a.buf()[i] = uint8_t(i * 31 + seed);
      const int n = 40;
      for (int i = 0; i < n; ++i) REQUIRE(post_recv(p.b, 100 + i, size_t(i) * 20000, 20000) == 0);
      int posted = 0;
      for (int i = 0; i < n; ++i) {
        const uint32_t len = 1 + uint32_t(i * 997 % 20000);
        switch (i % 4) {
          case 0: REQUIRE(post_wr(p.a, IBV_WR_SEND, i, size_t(i) * 20000, len) == 0); break;
          case 1:
            REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, i, size_t(i) * 20000, len, p.b.addr(1 << 21 | i * 20000),
                              p.b.mr->rkey()) == 0);
            break;
          case 2:
            REQUIRE(post_wr(p.a, IBV_WR_RDMA_READ, i, (3u << 20) + size_t(i) * 10000 % 900000, len % 9000 + 1,
                              p.b.addr(size_t(i) * 1000), p.b.mr->rkey()) == 0);
            break;
          default: REQUIRE(post_wr(p.a, IBV_WR_SEND, i, size_t(i) * 20000, len) == 0);
        }
        ++posted;
      }
      auto wa = p.wait(p.a, posted, 60'000'000'000ull);
      REQUIRE(wa.size() == size_t(posted));
      for (size_t i = 0; i < wa.size(); ++i) {
        INFO("wc " << i << " wr_id " << wa[i].wr_id << " status " << int(wa[i].status));
        CHECK(wa[i].status == IBV_WC_SUCCESS);
        CHECK(wa[i].wr_id == i);
      }
      auto c = p.fabric.device(0).counters();
      INFO("retransmitted " << c.transport.retransmitted_pkts);
      CHECK(c.transport.retransmitted_pkts > 0);
    }
  }
}
