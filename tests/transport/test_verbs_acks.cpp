// SPDX-License-Identifier: BSD-3-Clause
// ACK coalescing and the PSN sequence error NAK (go-back-N).
#include "verbs_test_util.h"

using namespace uroce;
using namespace uroce::vt;

TEST_CASE("A burst of small WRITEs is acknowledged with fewer ACKs than messages", "[acks]") {
  Pair p(111);
  fill(p.a.buf(), 4096, 1);
  const int n = 64;
  std::vector<SendWr> wrs(n);
  std::vector<ibv_sge> sg(n);
  for (int i = 0; i < n; ++i) {
    sg[size_t(i)] = sge(p.a, size_t(i) * 16, 16);
    wrs[size_t(i)] = make_wr(IBV_WR_RDMA_WRITE, uint64_t(i), &sg[size_t(i)]);
    wrs[size_t(i)].wr.rdma.remote_addr = p.b.addr(size_t(i) * 16);
    wrs[size_t(i)].wr.rdma.rkey = p.b.key();
    if (i) wrs[size_t(i) - 1].next = &wrs[size_t(i)];
  }
  const SendWr* bad = nullptr;
  REQUIRE(p.a.qp->post_send(wrs.data(), &bad) == 0);
  auto wa = p.wait(p.a, n);
  REQUIRE(wa.size() == size_t(n));
  for (int i = 0; i < n; ++i) {
    CHECK(wa[size_t(i)].wr_id == uint64_t(i));
    CHECK(wa[size_t(i)].status == IBV_WC_SUCCESS);
  }
  CHECK(std::memcmp(p.a.buf(), p.b.buf(), size_t(n) * 16) == 0);
  const TransportCounters& rb = p.b.qp->counters();
  INFO("responder sent " << rb.sent_pkts << " ACKs, deferred " << rb.ack_deferred);
  CHECK(rb.ack_deferred > 0);
  CHECK(rb.sent_pkts < uint64_t(n));
  CHECK(rb.sent_pkts >= 1);
  CHECK(p.a.qp->counters().sent_pkts == uint64_t(n));  // nothing retransmitted
}

TEST_CASE("One lost packet: PSN sequence error NAK, go-back-N, data correct", "[acks]") {
  Pair p(112);
  fill(p.a.buf(), 1 << 16, 2);
  // The first WRITE is lost on the way ...
  p.fabric.wire().cut_one_way(p.port_a(), p.port_b());
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 0, 0, 500, p.b.addr(0), p.b.key()) == 0);
  p.run_for(20'000);  // well below the 4 ms ACK timeout
  p.fabric.wire().cut_one_way(p.port_a(), p.port_b(), false);
  REQUIRE(p.fabric.wire().counters(p.port_a(), p.port_b()).cut == 1);
  // ... the ones behind it arrive out of sequence.
  const uint64_t t0 = p.now();
  for (int i = 1; i < 6; ++i)
    REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, uint64_t(i), size_t(i) * 1000, 2500, p.b.addr(size_t(i) * 4096),
                      p.b.key()) == 0);
  auto wa = p.wait(p.a, 6);
  REQUIRE(wa.size() == 6);
  for (int i = 0; i < 6; ++i) {
    CHECK(wa[size_t(i)].wr_id == uint64_t(i));
    CHECK(wa[size_t(i)].status == IBV_WC_SUCCESS);
  }
  CHECK(p.now() - t0 < 1'000'000);  // recovered by the NAK, not by the timeout
  CHECK(p.b.qp->counters().out_of_seq_request > 0);
  CHECK(p.b.qp->counters().nak_sent >= 1);
  CHECK(p.a.qp->counters().rcvd_seq_err >= 1);
  CHECK(p.a.qp->counters().local_ack_timeout_err == 0);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(), 500) == 0);
  for (int i = 1; i < 6; ++i) CHECK(std::memcmp(p.a.buf(size_t(i) * 1000), p.b.buf(size_t(i) * 4096), 2500) == 0);
}

TEST_CASE("A lost READ response is re-requested and the data is right", "[acks]") {
  Pair p(113);
  fill(p.b.buf(0), 10000, 3);
  sim::LinkFaults f;
  f.loss = 0.2;
  p.fabric.wire().set_link_faults(p.port_b(), p.port_a(), f);
  for (int i = 0; i < 10; ++i)
    REQUIRE(post_wr(p.a, IBV_WR_RDMA_READ, uint64_t(i), size_t(i) * 10000, 10000, p.b.addr(0), p.b.key()) == 0);
  auto wa = p.wait(p.a, 10, 10 * kSecond);
  REQUIRE(wa.size() == 10);
  for (int i = 0; i < 10; ++i) {
    CHECK(wa[size_t(i)].status == IBV_WC_SUCCESS);
    CHECK(std::memcmp(p.a.buf(size_t(i) * 10000), p.b.buf(0), 10000) == 0);
  }
  CHECK(p.fabric.wire().counters(p.port_b(), p.port_a()).lost > 0);
  CHECK(p.a.qp->counters().completer_retry_err > 0);
}

TEST_CASE("A QP destroyed right after its receive completes still acknowledges it", "[acks]") {
  Pair p(114);
  fill(p.a.buf(), 64, 4);
  REQUIRE(post_recv(p.b, 1, 0, 64) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_SEND, 2, 0, 64, 0, 0) == 0);
  // The receive's completion is there as soon as the SEND is seen; its
  // plain ACK would leave with b's next poll, which never comes.
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  p.b.qp.reset();
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);  // not IBV_WC_RETRY_EXC_ERR
  CHECK(p.a.qp->counters().sent_pkts == 1);  // nothing retransmitted
}
