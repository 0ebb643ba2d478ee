// SPDX-License-Identifier: BSD-3-Clause
// UC: SEND and RDMA WRITE without acknowledgements. The sender completes a
// WQE when its last packet leaves; the receiver drops, silently, a message
// it cannot take whole (a lost packet, no receive WQE) and takes the next.
#include <cerrno>

#include "verbs_test_util.h"

using namespace uroce;
using namespace uroce::vt;

namespace {

Opts uc_opts(uint32_t sq_psn) {
  Opts o;
  o.type = IBV_QPT_UC;
  o.sq_psn = sq_psn;
  return o;
}

// a sends from 0xFFFFF0, so multi-packet messages cross the 2^24 wrap.
struct UcPair : Pair {
  explicit UcPair(uint64_t seed) : Pair(seed, uc_opts(0xFFFFF0), uc_opts(0x100)) {}
};

int post_imm(Node& n, ibv_wr_opcode op, uint64_t wr_id, size_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
             uint32_t imm) {
  ibv_sge s = n.sge(off, len);
  SendWr wr = make_wr(op, wr_id, &s);
  wr.imm_data = imm;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  return post(n, wr);
}

}  // namespace

TEST_CASE("UC SEND of 1 B to several MTUs, with and without immediate", "[uc]") {
  UcPair p(301);
  const uint32_t sizes[] = {1, 1023, 1024, 1025, 3000, 4096, 10000};
  fill(p.a.buf(), 1 << 16, 5);
  uint64_t id = 0;
  for (const uint32_t len : sizes) {
    for (const bool imm : {false, true}) {
      INFO("length " << len << (imm ? " with immediate" : ""));
      std::memset(p.b.buf(), 0, 1 << 15);
      REQUIRE(post_recv(p.b, 100 + id, 0, 1 << 15) == 0);
      const ibv_wr_opcode op = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
      REQUIRE(post_imm(p.a, op, id, 7, len, 0, 0, htonl(0xC0DE0000 + uint32_t(id))) == 0);
      auto wa = p.wait(p.a, 1);
      REQUIRE(wa.size() == 1);
      CHECK(wa[0].wr_id == id);
      CHECK(wa[0].status == IBV_WC_SUCCESS);
      CHECK(wa[0].opcode == IBV_WC_SEND);
      auto wb = p.wait(p.b, 1);
      REQUIRE(wb.size() == 1);
      CHECK(wb[0].wr_id == 100 + id);
      CHECK(wb[0].status == IBV_WC_SUCCESS);
      CHECK(wb[0].opcode == IBV_WC_RECV);
      CHECK(wb[0].byte_len == len);
      CHECK(((wb[0].wc_flags & IBV_WC_WITH_IMM) != 0) == imm);
      if (imm) CHECK(wb[0].imm_data == htonl(0xC0DE0000 + uint32_t(id)));
      CHECK(std::memcmp(p.b.buf(), p.a.buf(7), len) == 0);
      ++id;
    }
  }
  // Nothing came back: no ACK, and the sender's packets are all first sends.
  CHECK(p.b.qp->counters().sent_pkts == 0);
  CHECK(p.a.qp->counters().retransmitted_pkts == 0);
  CHECK(p.a.qp->counters().sent_pkts == p.b.qp->counters().rcvd_pkts);
  CHECK(p.b.qp->counters().uc_msg_dropped == 0);
}

TEST_CASE("UC RDMA WRITE of 1 B to several MTUs, with and without immediate", "[uc]") {
  UcPair p(302);
  const uint32_t sizes[] = {1, 1024, 1500, 2048, 5000};
  fill(p.a.buf(), 1 << 16, 6);
  uint64_t id = 0;
  for (const uint32_t len : sizes) {
    for (const bool imm : {false, true}) {
      INFO("length " << len << (imm ? " with immediate" : ""));
      std::memset(p.b.buf(), 0, 1 << 15);
      if (imm) REQUIRE(post_recv(p.b, 200 + id, 0, 0) == 0);
      const ibv_wr_opcode op = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
      REQUIRE(post_imm(p.a, op, id, 3, len, p.b.addr(100), p.b.key(), htonl(0xABCD0000 + uint32_t(id))) == 0);
      auto wa = p.wait(p.a, 1);
      REQUIRE(wa.size() == 1);
      CHECK(wa[0].status == IBV_WC_SUCCESS);
      CHECK(wa[0].opcode == IBV_WC_RDMA_WRITE);
      if (imm) {
        auto wb = p.wait(p.b, 1);
        REQUIRE(wb.size() == 1);
        CHECK(wb[0].wr_id == 200 + id);
        CHECK(wb[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
        CHECK(wb[0].byte_len == len);
        CHECK(wb[0].imm_data == htonl(0xABCD0000 + uint32_t(id)));
      } else {
        p.run_for(1'000'000);
        CHECK(drain(*p.b.cq).empty());
      }
      CHECK(std::memcmp(p.b.buf(100), p.a.buf(3), len) == 0);
      CHECK(p.b.buf(100 + len)[0] == 0);
      ++id;
    }
  }
  CHECK(p.b.qp->counters().sent_pkts == 0);
}

TEST_CASE("UC: a lost middle packet drops that message only; the next one arrives", "[uc]") {
  UcPair p(303);
  fill(p.a.buf(), 1 << 16, 7);
  REQUIRE(post_recv(p.b, 1, 0, 8192) == 0);
  REQUIRE(post_recv(p.b, 2, 8192, 8192) == 0);
  p.fabric.wire().drop_one(p.port_a(), p.port_b(), 1);  // the second of three packets
  REQUIRE(post_wr(p.a, IBV_WR_SEND, 10, 0, 3000) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_SEND, 11, 4000, 2500) == 0);
  auto wa = p.wait(p.a, 2);
  REQUIRE(wa.size() == 2);
  CHECK(wa[0].status == IBV_WC_SUCCESS);  // the sender cannot know
  CHECK(wa[1].status == IBV_WC_SUCCESS);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  // The receive the dropped message had started is used again.
  CHECK(wb[0].wr_id == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(wb[0].byte_len == 2500);
  CHECK(std::memcmp(p.b.buf(0), p.a.buf(4000), 2500) == 0);
  p.run_for(1'000'000);
  CHECK(drain(*p.b.cq).empty());
  CHECK(p.fabric.wire().counters(p.port_a(), p.port_b()).lost == 1);
  CHECK(p.b.qp->counters().uc_msg_dropped == 1);
  CHECK(p.b.qp->counters().out_of_seq_request == 1);
  CHECK(p.b.qp->counters().sent_pkts == 0);  // no NAK
  CHECK(p.a.qp->counters().retransmitted_pkts == 0);
  CHECK(p.b.qp->state() == IBV_QPS_RTS);
  // The second receive is still there.
  REQUIRE(post_wr(p.a, IBV_WR_SEND, 12, 100, 50) == 0);
  wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].wr_id == 2);
  CHECK(wb[0].byte_len == 50);
}

TEST_CASE("UC: a lost first or last packet drops that message; WRITE with immediate", "[uc]") {
  for (const uint32_t lost : {0u, 2u}) {
    INFO("packet " << lost << " of 3 lost");
    UcPair p(304 + lost);
    fill(p.a.buf(), 1 << 16, 8);
    REQUIRE(post_recv(p.b, 1, 0, 0) == 0);
    p.fabric.wire().drop_one(p.port_a(), p.port_b(), lost);
    REQUIRE(post_imm(p.a, IBV_WR_RDMA_WRITE_WITH_IMM, 10, 0, 3000, p.b.addr(0), p.b.key(), 1) == 0);
    REQUIRE(post_imm(p.a, IBV_WR_RDMA_WRITE_WITH_IMM, 11, 5000, 2100, p.b.addr(8192), p.b.key(), 2) == 0);
    auto wb = p.wait(p.b, 1);
    REQUIRE(wb.size() == 1);
    CHECK(wb[0].wr_id == 1);
    CHECK(wb[0].imm_data == 2);
    CHECK(wb[0].byte_len == 2100);
    CHECK(std::memcmp(p.b.buf(8192), p.a.buf(5000), 2100) == 0);
    p.run_for(1'000'000);
    CHECK(drain(*p.b.cq).empty());
    CHECK(p.b.qp->counters().uc_msg_dropped == 1);
    CHECK(p.b.qp->counters().rdma_recvs == 1);
  }
}

TEST_CASE("UC: a SEND with no receive posted is dropped, no RNR", "[uc]") {
  UcPair p(306);
  fill(p.a.buf(), 4096, 9);
  REQUIRE(post_wr(p.a, IBV_WR_SEND, 1, 0, 2000) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  p.run_for(10'000'000);
  CHECK(p.b.qp->counters().uc_msg_dropped == 1);
  CHECK(p.b.qp->counters().send_rnr_err == 0);
  CHECK(p.b.qp->counters().sent_pkts == 0);
  CHECK(p.a.qp->counters().rcvd_rnr_err == 0);
  CHECK(p.a.qp->counters().sent_pkts == 2);  // sent once, never again
  // A receive posted now takes the next message, not the dropped one.
  REQUIRE(post_recv(p.b, 5, 0, 4096) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_SEND, 2, 100, 1500) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].wr_id == 5);
  CHECK(wb[0].byte_len == 1500);
  CHECK(std::memcmp(p.b.buf(), p.a.buf(100), 1500) == 0);
}

TEST_CASE("UC: a WRITE to a bad key is dropped and the QP stays up", "[uc]") {
  UcPair p(307);
  fill(p.a.buf(), 4096, 10);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 1, 0, 100, p.b.addr(0), p.b.key() + 1000) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 2, 200, 100, p.b.addr(0), p.b.key()) == 0);
  auto wa = p.wait(p.a, 2);
  REQUIRE(wa.size() == 2);
  p.run_for(1'000'000);
  CHECK(p.b.qp->counters().uc_msg_dropped == 1);
  CHECK(p.b.qp->state() == IBV_QPS_RTS);
  CHECK(std::memcmp(p.b.buf(), p.a.buf(200), 100) == 0);
}

TEST_CASE("UC under random loss: every message that arrives is whole and in order", "[uc]") {
  UcPair p(308);
  sim::LinkFaults f;
  f.loss = 0.05;
  p.fabric.wire().set_link_faults(p.port_a(), p.port_b(), f);
  constexpr int kMsgs = 200;
  constexpr uint32_t kLen = 2500;  // 3 packets
  for (int i = 0; i < kMsgs; ++i) REQUIRE(post_recv(p.b, uint64_t(i), size_t(i) * 4096, 4096) == 0);
  for (int i = 0; i < kMsgs; ++i) {
    // Each message carries its number in its first bytes.
    uint8_t* src = p.a.buf(size_t(i % 64) * 4096);
    fill(src, kLen, uint32_t(i));
    std::memcpy(src, &i, sizeof i);
    REQUIRE(post_imm(p.a, IBV_WR_SEND_WITH_IMM, uint64_t(i), size_t(i % 64) * 4096, kLen, 0, 0, uint32_t(i)) == 0);
    // Sent before its buffer is refilled: the completion says it left.
    REQUIRE(p.wait(p.a, 1).size() == 1);
    p.run_for(100'000);
  }
  auto wb = drain(*p.b.cq);
  const uint64_t lost = p.fabric.wire().counters(p.port_a(), p.port_b()).lost;
  INFO("lost " << lost << " frames, received " << wb.size() << " messages");
  REQUIRE(lost > 0);
  CHECK(wb.size() < size_t(kMsgs));
  CHECK(wb.size() >= size_t(kMsgs) - lost);
  CHECK(p.b.qp->counters().uc_msg_dropped + wb.size() <= size_t(kMsgs));
  CHECK(p.b.qp->counters().uc_msg_dropped >= size_t(kMsgs) - wb.size() - lost / 3);
  uint32_t prev = 0;
  for (size_t k = 0; k < wb.size(); ++k) {
    CHECK(wb[k].status == IBV_WC_SUCCESS);
    CHECK(wb[k].byte_len == kLen);
    // Receives are used in order, one per message that arrived.
    CHECK(wb[k].wr_id == k);
    const uint32_t n = wb[k].imm_data;
    if (k) CHECK(n > prev);
    prev = n;
    uint8_t expect[kLen];
    fill(expect, kLen, n);
    std::memcpy(expect, &n, sizeof n);
    CHECK(std::memcmp(p.b.buf(size_t(k) * 4096), expect, kLen) == 0);
  }
}

TEST_CASE("UC refuses READ, atomics and SEND with invalidate at post", "[uc]") {
  UcPair p(309);
  CHECK(post_wr(p.a, IBV_WR_RDMA_READ, 1, 0, 8, p.b.addr(0), p.b.key()) == EINVAL);
  ibv_sge s = p.a.sge(0, 8);
  SendWr wr = make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 2, &s);
  wr.wr.atomic.remote_addr = p.b.addr(0);
  wr.wr.atomic.rkey = p.b.key();
  wr.wr.atomic.compare_add = 1;
  CHECK(post(p.a, wr) == EINVAL);
  wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
  CHECK(post(p.a, wr) == EINVAL);
  SendWr inv = make_wr(IBV_WR_SEND_WITH_INV, 3, &s);
  inv.invalidate_rkey = 5;
  CHECK(post(p.a, inv) == EINVAL);
  p.run_for(1'000'000);
  CHECK(drain(*p.a.cq).empty());
  CHECK(p.a.qp->counters().sent_pkts == 0);
  CHECK(p.a.qp->state() == IBV_QPS_RTS);
}

TEST_CASE("UC modify: verbs' attribute masks per transition", "[uc]") {
  sim::SimFabric fabric(310);
  Device& da = fabric.add_device("10.0.0.1", small_device());
  Device& db = fabric.add_device("10.0.0.2", small_device());
  Opts o = uc_opts(5);
  Node a = make_node(da, o);
  ibv_qp_attr init = init_attr(o);
  // RESET -> INIT: UD's Q_Key is not an attribute of UC.
  CHECK(a.qp->modify(init, test::kUcInitMask | IBV_QP_QKEY) == EINVAL);
  CHECK(a.qp->modify(init, test::kUcInitMask & ~IBV_QP_ACCESS_FLAGS) == EINVAL);
  REQUIRE(a.qp->modify(init, test::kUcInitMask) == 0);
  ibv_qp_attr rtr = rtr_attr(o, db, 0x42, 0x77);
  // INIT -> RTR: RC's READ/atomic and RNR attributes are refused ...
  CHECK(a.qp->modify(rtr, test::kUcRtrMask | IBV_QP_MAX_DEST_RD_ATOMIC) == EINVAL);
  CHECK(a.qp->modify(rtr, test::kUcRtrMask | IBV_QP_MIN_RNR_TIMER) == EINVAL);
  CHECK(a.qp->modify(rtr, kRcRtrMask) == EINVAL);
  // ... and every UC one is required.
  CHECK(a.qp->modify(rtr, test::kUcRtrMask & ~IBV_QP_RQ_PSN) == EINVAL);
  CHECK(a.qp->modify(rtr, test::kUcRtrMask & ~IBV_QP_AV) == EINVAL);
  CHECK(a.qp->state() == IBV_QPS_INIT);
  REQUIRE(a.qp->modify(rtr, test::kUcRtrMask | IBV_QP_ACCESS_FLAGS) == 0);
  ibv_qp_attr rts = rts_attr(o);
  // RTR -> RTS: no timeout, retry counts or READ credits on UC.
  CHECK(a.qp->modify(rts, kRcRtsMask) == EINVAL);
  CHECK(a.qp->modify(rts, test::kUcRtsMask | IBV_QP_TIMEOUT) == EINVAL);
  CHECK(a.qp->modify(rts, test::kUcRtsMask | IBV_QP_RETRY_CNT) == EINVAL);
  CHECK(a.qp->modify(rts, test::kUcRtsMask | IBV_QP_RNR_RETRY) == EINVAL);
  CHECK(a.qp->modify(rts, test::kUcRtsMask | IBV_QP_MAX_QP_RD_ATOMIC) == EINVAL);
  CHECK(a.qp->modify(rts, IBV_QP_STATE) == EINVAL);
  REQUIRE(a.qp->modify(rts, test::kUcRtsMask) == 0);
  CHECK(a.qp->state() == IBV_QPS_RTS);
  CHECK(a.qp->qp_type() == IBV_QPT_UC);
  // RTS -> RTS: access flags may change, the RNR timer may not.
  ibv_qp_attr acc{};
  acc.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  CHECK(a.qp->modify(acc, IBV_QP_ACCESS_FLAGS) == 0);
  CHECK(a.qp->modify(acc, IBV_QP_MIN_RNR_TIMER) == EINVAL);
  ibv_qp_attr q{};
  QpInitAttr qi;
  REQUIRE(a.qp->query(q, 0, qi) == 0);
  CHECK(q.dest_qp_num == 0x42);
  CHECK(q.rq_psn == 0x77);
  CHECK(q.sq_psn == 5);
  CHECK(q.qp_access_flags == IBV_ACCESS_REMOTE_WRITE);
}

TEST_CASE("UC on an SRQ: a dropped SEND completes its receive with an error, the next takes the next", "[uc]") {
  Opts ob = uc_opts(0x100);
  ob.srq_wr = 16;
  ob.max_recv_wr = 0;
  Pair p(311, uc_opts(0xFFFFF0), ob);
  fill(p.a.buf(), 1 << 16, 11);
  for (uint64_t i = 0; i < 2; ++i) {
    ibv_sge s = p.b.sge(i * 8192, 8192);
    RecvWr wr;
    wr.wr_id = 1 + i;
    wr.sg_list = &s;
    wr.num_sge = 1;
    const RecvWr* bad = nullptr;
    REQUIRE(p.b.srq->post_recv(&wr, &bad) == 0);
  }
  p.fabric.wire().drop_one(p.port_a(), p.port_b(), 1);
  REQUIRE(post_wr(p.a, IBV_WR_SEND, 10, 0, 3000) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_SEND, 11, 4000, 2500) == 0);
  auto wb = p.wait(p.b, 2);
  REQUIRE(wb.size() == 2);
  // The SRQ's WQE the dropped message had taken completes, in error.
  CHECK(wb[0].wr_id == 1);
  CHECK(wb[0].status == IBV_WC_REM_INV_REQ_ERR);
  CHECK(wb[1].wr_id == 2);
  CHECK(wb[1].status == IBV_WC_SUCCESS);
  CHECK(wb[1].byte_len == 2500);
  CHECK(std::memcmp(p.b.buf(8192), p.a.buf(4000), 2500) == 0);
  CHECK(p.b.qp->counters().uc_msg_dropped == 1);
  CHECK(p.b.qp->state() == IBV_QPS_RTS);
}
