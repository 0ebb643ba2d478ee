// SPDX-License-Identifier: BSD-3-Clause
// Transport retry exhaustion (peer gone) and RNR: counted retries, timing
// in virtual time, and the final status.
#include "negative_util.h"
#include "transport/transport.h"

using namespace uroce;
using namespace uroce::vt;

namespace {

Opts requester(uint8_t timeout, uint8_t retry_cnt, uint8_t rnr_retry) {
  Opts o = Pair::default_a();
  o.timeout = timeout;
  o.retry_cnt = retry_cnt;
  o.rnr_retry = rnr_retry;
  return o;
}

}  // namespace

TEST_CASE("Cut wire: RETRY_EXC_ERR after retry_cnt + 1 transmissions, (retry_cnt + 1) timeouts", "[rnr-retry]") {
  for (uint8_t retry_cnt : {uint8_t(0), uint8_t(2), uint8_t(7)}) {
    DYNAMIC_SECTION("retry_cnt " << int(retry_cnt)) {
      Pair p(101, requester(5, retry_cnt, 7));
      const uint64_t timeout_ns = transport::ack_timeout_ns(5);  // 131 us
      p.fabric.wire().cut(p.port_a(), p.port_b());
      const uint64_t t0 = p.now();
      REQUIRE(post_send(p.a, 1, 0, 100) == 0);
      auto wa = p.wait(p.a, 1, kSecond);
      const uint64_t elapsed = p.now() - t0;
      REQUIRE(wa.size() == 1);
      CHECK(wa[0].wr_id == 1);
      CHECK(wa[0].status == IBV_WC_RETRY_EXC_ERR);
      CHECK(p.a.qp->state() == IBV_QPS_ERR);
      const TransportCounters& c = p.a.qp->counters();
      CHECK(c.sent_pkts == uint64_t(retry_cnt) + 1);
      CHECK(c.retransmitted_pkts == retry_cnt);
      CHECK(c.local_ack_timeout_err == uint64_t(retry_cnt) + 1);
      CHECK(c.retry_exceeded_err == 1);
      CHECK(p.fabric.wire().counters(p.port_a(), p.port_b()).cut == uint64_t(retry_cnt) + 1);
      INFO("elapsed " << elapsed << " ns, timeout " << timeout_ns << " ns");
      CHECK(elapsed >= (uint64_t(retry_cnt) + 1) * timeout_ns);
      CHECK(elapsed <= (uint64_t(retry_cnt) + 1) * timeout_ns + 20'000);
    }
  }
}

TEST_CASE("Cut wire: work behind the failed WR is flushed", "[rnr-retry]") {
  Pair p(102, requester(4, 2, 7));
  p.fabric.wire().cut(p.port_a(), p.port_b());
  REQUIRE(post_send(p.a, 1, 0, 100) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 2, 0, 5000, p.b.addr(0), p.b.key(), 0) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_READ, 3, 0, 5000, p.b.addr(0), p.b.key()) == 0);
  auto wa = p.wait(p.a, 3, kSecond);
  REQUIRE(wa.size() == 3);
  CHECK(wa[0].status == IBV_WC_RETRY_EXC_ERR);
  CHECK(wa[1].wr_id == 2);
  CHECK(wa[1].status == IBV_WC_WR_FLUSH_ERR);
  CHECK(wa[2].wr_id == 3);
  CHECK(wa[2].status == IBV_WC_WR_FLUSH_ERR);
  CHECK(p.a.qp->state() == IBV_QPS_ERR);
  CHECK(p.a.qp->counters().retry_exceeded_err == 1);
}

TEST_CASE("Peer QP destroyed: RETRY_EXC_ERR, the peer device drops the requests", "[rnr-retry]") {
  Pair p(103, requester(5, 3, 7));
  p.b.qp.reset();
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 1, 0, 100, 0x1000, 0x100) == 0);
  auto wa = p.wait(p.a, 1, kSecond);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_RETRY_EXC_ERR);
  CHECK(p.a.qp->counters().sent_pkts == 4);
  CHECK(p.b.dev->counters().rx_unknown_qp == 4);
}

TEST_CASE("A loss shorter than the retry budget is recovered, retries counted", "[rnr-retry]") {
  Pair p(104, requester(5, 3, 7));
  fill(p.a.buf(), 1000, 1);
  p.fabric.wire().cut(p.port_a(), p.port_b());
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 1, 0, 1000, p.b.addr(0), p.b.key()) == 0);
  // Two timeouts pass with the wire down (the retransmissions they trigger
  // are lost too), then it comes back: the third retransmission, the last
  // retry_cnt allows, gets through.
  p.fabric.run_until([&] { return p.a.qp->counters().local_ack_timeout_err == 2; }, kSecond);
  p.fabric.wire().cut(p.port_a(), p.port_b(), false);
  auto wa = p.wait(p.a, 1, kSecond);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(p.a.qp->counters().retransmitted_pkts == 3);
  CHECK(p.a.qp->counters().local_ack_timeout_err == 3);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(), 1000) == 0);
}

TEST_CASE("RNR with rnr_retry 7: retries until a receive is posted, then succeeds", "[rnr-retry]") {
  Pair p(105);  // b's min_rnr_timer is 1 (10 us)
  fill(p.a.buf(), 3000, 2);
  REQUIRE(post_send(p.a, 1, 0, 3000) == 0);
  p.fabric.run_until([&] { return p.a.qp->counters().rcvd_rnr_err >= 20; }, kSecond);
  CHECK(p.a.qp->counters().rcvd_rnr_err >= 20);
  CHECK(p.b.qp->counters().send_rnr_err >= 20);
  CHECK(drain(*p.a.cq).empty());
  CHECK(p.a.qp->state() == IBV_QPS_RTS);
  REQUIRE(post_recv(p.b, 9, 100, 4000) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(wb[0].byte_len == 3000);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(100), 3000) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(p.a.qp->counters().retry_rnr_exceeded_err == 0);
}

TEST_CASE("RNR on WRITE_WITH_IMM without a receive, then success", "[rnr-retry]") {
  Pair p(106);
  fill(p.a.buf(), 2000, 3);
  ibv_sge s = sge(p.a, 0, 2000);
  SendWr wr = make_wr(IBV_WR_RDMA_WRITE_WITH_IMM, 1, &s);
  wr.wr.rdma.remote_addr = p.b.addr(50000);
  wr.wr.rdma.rkey = p.b.key();
  wr.imm_data = htonl(3);
  REQUIRE(post(p.a, wr) == 0);
  p.fabric.run_until([&] { return p.a.qp->counters().rcvd_rnr_err >= 3; }, kSecond);
  CHECK(p.a.qp->counters().rcvd_rnr_err >= 3);
  REQUIRE(post_recv(p.b, 9, 0, 0) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(wb[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
  CHECK(wb[0].byte_len == 2000);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(50000), 2000) == 0);
}

TEST_CASE("RNR with rnr_retry 0 and 2: RNR_RETRY_EXC_ERR after 1 and 3 RNR NAKs", "[rnr-retry]") {
  for (uint8_t rnr_retry : {uint8_t(0), uint8_t(2)}) {
    DYNAMIC_SECTION("rnr_retry " << int(rnr_retry)) {
      Pair p(107, requester(10, 7, rnr_retry));
      const Snapshot snap = fill_and_snapshot(p);
      REQUIRE(post_send(p.a, 1, 0, 100) == 0);
      REQUIRE(post_send(p.a, 2, 0, 100) == 0);
      auto wa = p.wait(p.a, 2, kSecond);
      REQUIRE(wa.size() == 2);
      CHECK(wa[0].wr_id == 1);
      CHECK(wa[0].status == IBV_WC_RNR_RETRY_EXC_ERR);
      CHECK(wa[1].status == IBV_WC_WR_FLUSH_ERR);
      CHECK(p.a.qp->state() == IBV_QPS_ERR);
      CHECK(p.a.qp->counters().rcvd_rnr_err == uint64_t(rnr_retry) + 1);
      CHECK(p.a.qp->counters().retry_rnr_exceeded_err == 1);
      CHECK(p.b.qp->counters().send_rnr_err >= uint64_t(rnr_retry) + 1);
      CHECK(snap.changed(1) == -1);
    }
  }
}

TEST_CASE("The RNR wait honours the responder's min_rnr_timer", "[rnr-retry]") {
  for (uint8_t code : {uint8_t(3), uint8_t(14), uint8_t(18)}) {
    DYNAMIC_SECTION("min_rnr_timer " << int(code)) {
      Opts ob = Pair::default_b();
      ob.min_rnr_timer = code;
      Pair p(108, requester(10, 7, 7), ob);  // ACK timeout 4.19 ms
      const uint64_t wait_ns = transport::rnr_timer_ns(code);
      REQUIRE(post_send(p.a, 1, 0, 100) == 0);
      std::vector<uint64_t> nak_at, sent;
      for (int k = 1; k <= 4; ++k) {
        REQUIRE(p.fabric.run_until([&] { return p.a.qp->counters().rcvd_rnr_err >= uint64_t(k); }, kSecond));
        nak_at.push_back(p.now());
        sent.push_back(p.a.qp->counters().sent_pkts);
      }
      for (size_t k = 1; k < nak_at.size(); ++k) {
        INFO("between RNR NAK " << k << " and " << k + 1 << ": " << nak_at[k] - nak_at[k - 1] << " ns, timer "
                                << wait_ns << " ns");
        CHECK(nak_at[k] - nak_at[k - 1] >= wait_ns);
        CHECK(nak_at[k] - nak_at[k - 1] <= wait_ns + 20'000);  // plus a round trip
        CHECK(sent[k] - sent[k - 1] == 1);                     // one retry per wait, nothing in between
      }
      // The ACK timer does not fire during RNR waits.
      CHECK(p.a.qp->counters().local_ack_timeout_err == 0);
      REQUIRE(post_recv(p.b, 1, 0, 100) == 0);
      auto wa = p.wait(p.a, 1, kSecond);
      REQUIRE(wa.size() == 1);
      CHECK(wa[0].status == IBV_WC_SUCCESS);
    }
  }
}

TEST_CASE("timeout 0 means no local ACK timeout: no retransmission, no error, ever", "[rnr-retry]") {
  Pair p(109, requester(0, 1, 7));
  p.fabric.wire().cut(p.port_a(), p.port_b());
  REQUIRE(post_send(p.a, 1, 0, 100) == 0);
  p.run_for(20 * kSecond);
  CHECK(drain(*p.a.cq).empty());
  CHECK(p.a.qp->state() == IBV_QPS_RTS);
  CHECK(p.a.qp->counters().sent_pkts == 1);
  CHECK(p.a.qp->counters().local_ack_timeout_err == 0);
}

// A post to an idle QP sends at once without reading the clock (the time is
// the last poll's; engine.cpp send_now): the deadline it arms must still
// count from the post, however long the application went without polling.
TEST_CASE("A WR posted long after the last poll times out a whole timeout after the post", "[rnr-retry]") {
  Pair p(108, requester(5, 0, 7));
  const uint64_t timeout_ns = transport::ack_timeout_ns(5);  // 131 us
  p.fabric.wire().cut(p.port_a(), p.port_b());
  p.fabric.clock().advance_by(10 * timeout_ns);  // no poll meanwhile
  const uint64_t t0 = p.now();
  REQUIRE(post_send(p.a, 1, 0, 100) == 0);
  auto wa = p.wait(p.a, 1, kSecond);
  const uint64_t elapsed = p.now() - t0;
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_RETRY_EXC_ERR);
  CHECK(p.a.qp->counters().local_ack_timeout_err == 1);
  INFO("elapsed " << elapsed << " ns, timeout " << timeout_ns << " ns");
  CHECK(elapsed >= timeout_ns);
  CHECK(elapsed <= timeout_ns + 20'000);
}

// With a clock that costs to read, idle polls are only the port check and
// the first poll with frames keeps the last idle poll's time (engine.cpp
// poll). After long gaps without polls that time is far behind: deadlines
// set from it must still be counted from when they were set.
namespace {

// Two devices whose clock costs to read (so their engines poll lean), QPs
// with a 131 us timeout, ACKs in the middle of a message and a window of 4
// packets: the timer restarts on every ACK while the rest waits.
struct LeanPair {
  explicit LeanPair(uint64_t seed) : fabric(seed, 1500) {
    fabric.clock().set_free_to_read(false);
    DeviceConfig cfg = small_device();
    cfg.ack_req_every = 4;
    cfg.max_unacked_psns = 4;
    Device& da = fabric.add_device("10.0.0.1", cfg);
    Device& db = fabric.add_device("10.0.0.2", cfg);
    const Opts oa = requester(5, 2, 7);
    Opts ob = requester(5, 2, 7);
    ob.sq_psn = Pair::default_b().sq_psn;
    test::connect_pair(a, da, oa, b, db, ob);
  }
  sim::SimFabric fabric;
  Node a, b;
};

}  // namespace

TEST_CASE("Lean polls with a kept time: no timeout without loss, a whole timeout with it", "[rnr-retry]") {
  LeanPair p(109);
  sim::SimFabric& fabric = p.fabric;
  Node &a = p.a, &b = p.b;
  const uint64_t timeout_ns = transport::ack_timeout_ns(5);  // 131 us
  fill(a.buf(), 20000, 5);
  fill(b.buf() + 40000, 20000, 6);
  // No poll meanwhile, before and after the post: the first window is out,
  // and the first ACK arrives in a poll that keeps a time from before the gap.
  const auto write_after_gaps = [&](Node& from, Node& to, size_t off) {
    fabric.clock().advance_by(10 * timeout_ns);
    REQUIRE(post_wr(from, IBV_WR_RDMA_WRITE, off, off, 20000, to.addr(off), to.key()) == 0);
    fabric.clock().advance_by(10 * timeout_ns);
    auto wc = wait_cq(fabric, *from.cq, 1, kSecond);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].status == IBV_WC_SUCCESS);
  };
  for (int round = 0; round < 10; ++round) {
    INFO("round " << round);
    write_after_gaps(a, b, 0);
    write_after_gaps(b, a, 40000);
  }
  CHECK(std::memcmp(a.buf(), b.buf(), 20000) == 0);
  CHECK(std::memcmp(a.buf() + 40000, b.buf() + 40000, 20000) == 0);
  for (const Node* n : {&a, &b}) {
    CHECK(n->qp->counters().local_ack_timeout_err == 0);
    CHECK(n->qp->counters().retransmitted_pkts == 0);
  }
  // A real loss: timeouts of their whole length, retry_cnt + 1 of them.
  fabric.wire().cut(fabric.port(0), fabric.port(1));
  fabric.clock().advance_by(10 * timeout_ns);
  const uint64_t t0 = fabric.clock().now_ns();
  REQUIRE(post_wr(a, IBV_WR_RDMA_WRITE, 3, 0, 100, b.addr(0), b.key()) == 0);
  auto wa = wait_cq(fabric, *a.cq, 1, kSecond);
  const uint64_t elapsed = fabric.clock().now_ns() - t0;
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_RETRY_EXC_ERR);
  INFO("elapsed " << elapsed << " ns, timeout " << timeout_ns << " ns");
  CHECK(elapsed >= 3 * timeout_ns);
  CHECK(elapsed <= 3 * timeout_ns + 20'000);
}

// The same, step by step: the requester's last full poll is long past when
// the first ACK of a message arrives, in a poll that keeps that old time;
// the timer it restarts for the rest must not expire at once.
TEST_CASE("A timer restarted in a poll that kept an old time counts from the restart", "[rnr-retry]") {
  LeanPair p(110);
  sim::SimFabric& fabric = p.fabric;
  Node &a = p.a, &b = p.b;
  Device &da = *a.dev, &db = *b.dev;
  const uint64_t timeout_ns = transport::ack_timeout_ns(5);
  fill(a.buf(), 20000, 7);
  REQUIRE(post_wr(a, IBV_WR_RDMA_WRITE, 1, 0, 20000, b.addr(0), b.key()) == 0);  // a window of 4 goes out
  for (int i = 0; i < 8; ++i) da.poll();  // at least one full poll, at this time
  fabric.clock().advance_by(10 * timeout_ns);
  db.poll();  // the 4 packets: the deferred ACK is queued
  db.poll();  // and sent
  REQUIRE(b.qp->counters().rcvd_pkts == 4);
  fabric.clock().advance_by(2000);  // the wire's latency
  da.poll();  // the ACK, in a poll that keeps the time of 10 timeouts ago
  for (int i = 0; i < 8; ++i) da.poll();  // a full poll among them looks at the timers
  CHECK(a.qp->counters().local_ack_timeout_err == 0);
  auto wa = wait_cq(fabric, *a.cq, 1, kSecond);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(a.qp->counters().local_ack_timeout_err == 0);
  CHECK(a.qp->counters().retransmitted_pkts == 0);
  CHECK(std::memcmp(a.buf(), b.buf(), 20000) == 0);
}

// Found by the engine fuzzer: a QP that entered ERR during an RNR back-off
// kept its back-off time, and every engine poll after it reported work (the
// timer was due and did nothing), so the device never went idle. The clock
// is moved by hand: a run_until would spin forever on such a device.
TEST_CASE("A QP moved to ERR during an RNR back-off leaves the engine idle", "[rnr-retry]") {
  Pair p(107);
  ibv_sge s = sge(p.a, 0, 100);
  REQUIRE(post(p.a, make_wr(IBV_WR_SEND, 1, &s, IBV_SEND_SIGNALED)) == 0);  // no receive at b: RNR NAK
  REQUIRE(p.fabric.run_until([&] { return p.a.qp->counters().rcvd_rnr_err >= 1; }, kSecond));
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  REQUIRE(p.a.qp->modify(a, IBV_QP_STATE) == 0);
  auto wa = drain(*p.a.cq);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_WR_FLUSH_ERR);
  p.fabric.clock().advance_to(p.now() + kSecond);  // long past any RNR timer
  int busy = 0;
  for (int i = 0; i < 100; ++i) busy += p.a.dev->poll() + p.b.dev->poll();
  CHECK(busy < 100);
  CHECK(p.a.dev->poll() == 0);
  CHECK(p.a.dev->next_deadline_ns() == kNever);
}
