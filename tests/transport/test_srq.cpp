// SPDX-License-Identifier: BSD-3-Clause
// Shared receive queues: RC QPs attached to one SRQ consume its receives in
// posting order; a QP with an SRQ refuses its own post_recv.
#include <cerrno>
#include <set>

#include "verbs_test_util.h"

using namespace uroce;
using namespace uroce::vt;

namespace {

// a's two QPs each connected to one of b's, both of b's on one SRQ; every
// pair starts at PSNs of its own.
struct SrqRig {
  explicit SrqRig(uint64_t seed_, uint32_t srq_wr = 64, DeviceConfig config_a = small_device())
      : seed(seed_), fabric(seed_) {
    Device& da = fabric.add_device("10.0.0.1", config_a);
    Device& db = fabric.add_device("10.0.0.2", small_device());
    Opts oa, ob;
    oa.num_qps = ob.num_qps = 2;
    oa.cq_entries = ob.cq_entries = 1024;
    ob.srq_wr = srq_wr;
    ob.srq_sge = 2;
    side_a = test::make_side(da, oa);
    side_b = test::make_side(db, ob);
    for (size_t i = 0; i < 2; ++i) {
      oa.sq_psn = 0x100 * uint32_t(i + 1);
      ob.sq_psn = 0xFFFF00 + uint32_t(i);
      connect(side_a.qp_at(i), oa, db, side_b.qp_at(i).qp_num(), ob.sq_psn);
      connect(side_b.qp_at(i), ob, da, side_a.qp_at(i).qp_num(), oa.sq_psn);
    }
    for (size_t i = 0; i < 2; ++i) {
      qa[i] = &side_a.qp_at(i);
      qb[i] = &side_b.qp_at(i);
    }
  }
  int srq_recv(uint64_t wr_id, size_t off, uint32_t len) {
    ibv_sge s{reinterpret_cast<uintptr_t>(mrb->addr()) + off, len, mrb->lkey()};
    RecvWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = &s;
    wr.num_sge = 1;
    const RecvWr* bad = nullptr;
    return srq->post_recv(&wr, &bad);
  }
  int send(int i, uint64_t wr_id, size_t off, uint32_t len) {
    ibv_sge s{reinterpret_cast<uintptr_t>(mra->addr()) + off, len, mra->lkey()};
    SendWr wr = make_wr(IBV_WR_SEND, wr_id, &s);
    const SendWr* bad = nullptr;
    return qa[size_t(i)]->post_send(&wr, &bad);
  }
  uint8_t* a(size_t off) { return static_cast<uint8_t*>(mra->addr()) + off; }
  uint8_t* b(size_t off) { return static_cast<uint8_t*>(mrb->addr()) + off; }

  uint64_t seed;
  sim::SimFabric fabric;
  Node side_a, side_b;
  // Short names for what the tests use of the two sides.
  std::unique_ptr<CompletionQueue>&cqa = side_a.cq, &cqb = side_b.cq;
  std::unique_ptr<MemoryRegion>&mra = side_a.mr, &mrb = side_b.mr;
  std::unique_ptr<SharedReceiveQueue>& srq = side_b.srq;
  QueuePair *qa[2], *qb[2];
};

}  // namespace

TEST_CASE("Two RC QPs on one SRQ consume its receives in posting order", "[ud-srq]") {
  SrqRig r(141);
  INFO("seed " << r.seed);
  fill(r.a(0), 1 << 16, 1);
  for (int i = 0; i < 8; ++i) REQUIRE(r.srq_recv(100 + uint64_t(i), size_t(i) * 4096, 4096) == 0);
  CHECK(r.srq->posted() == 8);
  for (int i = 0; i < 8; ++i) {
    const int q = (i * 3 / 2) % 2;  // 0 1 1 0 0 1 1 0: both QPs, in a mixed order
    INFO("message " << i << " via QP " << q);
    REQUIRE(r.send(q, uint64_t(i), size_t(i) * 1000, 500 + uint32_t(i) * 300) == 0);
    auto wb = wait_cq(r.fabric, *r.cqb, 1);
    REQUIRE(wb.size() == 1);
    CHECK(wb[0].status == IBV_WC_SUCCESS);
    CHECK(wb[0].wr_id == 100 + uint64_t(i));  // the oldest receive, whichever QP took it
    CHECK(wb[0].qp_num == r.qb[q]->qp_num());
    CHECK(wb[0].byte_len == 500 + uint32_t(i) * 300);
    CHECK(std::memcmp(r.b(size_t(i) * 4096), r.a(size_t(i) * 1000), 500 + size_t(i) * 300) == 0);
    REQUIRE(wait_cq(r.fabric, *r.cqa, 1).size() == 1);
  }
  CHECK(r.srq->posted() == 0);
}

TEST_CASE("Sends from both QPs at once use each SRQ receive exactly once", "[ud-srq]") {
  SrqRig r(142);
  fill(r.a(0), 1 << 16, 2);
  for (int i = 0; i < 20; ++i) REQUIRE(r.srq_recv(100 + uint64_t(i), size_t(i) * 2048, 2048) == 0);
  for (int i = 0; i < 10; ++i) {
    REQUIRE(r.send(0, uint64_t(i), 0, 1000) == 0);
    REQUIRE(r.send(1, 100 + uint64_t(i), 1000, 1000) == 0);
  }
  auto wb = wait_cq(r.fabric, *r.cqb, 20);
  REQUIRE(wb.size() == 20);
  std::vector<int> per_qp(2);
  for (size_t i = 0; i < wb.size(); ++i) {
    CHECK(wb[i].status == IBV_WC_SUCCESS);
    CHECK(wb[i].wr_id == 100 + i);  // handed out in posting order
    const int q = wb[i].qp_num == r.qb[0]->qp_num() ? 0 : 1;
    ++per_qp[size_t(q)];
    CHECK(std::memcmp(r.b(i * 2048), r.a(size_t(q) * 1000), 1000) == 0);
  }
  CHECK(per_qp[0] == 10);
  CHECK(per_qp[1] == 10);
}

TEST_CASE("Two QPs in the middle of messages keep their SRQ receives while it is refilled", "[ud-srq]") {
  // Two receive slots: once both QPs have taken theirs, new posts reuse the
  // slots while both messages are still arriving. The senders' small window
  // interleaves the two messages on the wire.
  DeviceConfig ca = small_device();
  ca.max_unacked_psns = 8;
  ca.ack_req_every = 4;
  SrqRig r(145, 2, ca);
  constexpr uint32_t kLen = 40000;  // 40 packets at MTU 1024
  fill(r.a(0), kLen, 21);
  fill(r.a(65536), kLen, 22);
  auto srq_recv2 = [&](uint64_t wr_id, size_t off) {
    ibv_sge s[2] = {{reinterpret_cast<uintptr_t>(r.b(off)), kLen / 2, r.mrb->lkey()},
                    {reinterpret_cast<uintptr_t>(r.b(off + 32768)), kLen / 2, r.mrb->lkey()}};
    RecvWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = s;
    wr.num_sge = 2;
    const RecvWr* bad = nullptr;
    return r.srq->post_recv(&wr, &bad);
  };
  REQUIRE(srq_recv2(100, 0) == 0);
  REQUIRE(srq_recv2(101, 65536) == 0);
  REQUIRE(r.send(0, 1, 0, kLen) == 0);
  REQUIRE(r.send(1, 2, 65536, kLen) == 0);
  r.fabric.run_until([&] { return r.qb[0]->counters().rcvd_pkts >= 4 && r.qb[1]->counters().rcvd_pkts >= 4; },
                     kSecond);
  REQUIRE(r.srq->posted() == 0);
  REQUIRE(drain(*r.cqb).empty());
  REQUIRE(r.qb[0]->counters().rcvd_pkts < 40);
  REQUIRE(r.qb[1]->counters().rcvd_pkts < 40);
  REQUIRE(srq_recv2(200, 131072) == 0);
  REQUIRE(srq_recv2(201, 196608) == 0);
  auto wb = wait_cq(r.fabric, *r.cqb, 2);
  REQUIRE(wb.size() == 2);
  for (const ibv_wc& w : wb) {
    INFO("wr_id " << w.wr_id);
    CHECK(w.status == IBV_WC_SUCCESS);
    CHECK(w.byte_len == kLen);
    const size_t from = w.qp_num == r.qb[0]->qp_num() ? 0 : 65536;
    const size_t to = w.wr_id == 100 ? 0 : 65536;
    CHECK(std::memcmp(r.b(to), r.a(from), kLen / 2) == 0);
    CHECK(std::memcmp(r.b(to + 32768), r.a(from + kLen / 2), kLen / 2) == 0);
  }
  // The receives posted meanwhile are intact: the next messages land there.
  std::set<uint64_t> ids = {wb[0].wr_id, wb[1].wr_id};
  CHECK(ids == std::set<uint64_t>{100, 101});
  fill(r.a(0), 1000, 23);
  REQUIRE(r.send(0, 3, 0, 1000) == 0);
  wb = wait_cq(r.fabric, *r.cqb, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].wr_id == 200);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(r.b(131072), r.a(0), 1000) == 0);
  CHECK(r.srq->posted() == 1);
}

TEST_CASE("post_recv on a QP with an SRQ is EINVAL; the SRQ has its own limits", "[ud-srq]") {
  SrqRig r(143, 4);
  ibv_sge s{reinterpret_cast<uintptr_t>(r.mrb->addr()), 64, r.mrb->lkey()};
  RecvWr wr;
  wr.sg_list = &s;
  wr.num_sge = 1;
  const RecvWr* bad = nullptr;
  CHECK(r.qb[0]->post_recv(&wr, &bad) == EINVAL);
  CHECK(bad == &wr);
  CHECK(r.srq->posted() == 0);
  // Capacity 4: a chain of 6 stops at the fifth.
  RecvWr chain[6];
  for (int i = 0; i < 6; ++i) {
    chain[i].wr_id = uint64_t(i);
    chain[i].sg_list = &s;
    chain[i].num_sge = 1;
    if (i) chain[i - 1].next = &chain[i];
  }
  CHECK(r.srq->post_recv(&chain[0], &bad) == ENOMEM);
  CHECK(bad == &chain[4]);
  CHECK(r.srq->posted() == 4);
  // More SGEs than max_sge.
  ibv_sge three[3] = {s, s, s};
  RecvWr wide;
  wide.sg_list = three;
  wide.num_sge = 3;
  CHECK(r.srq->post_recv(&wide, &bad) == EINVAL);
  CHECK(bad == &wide);
}

TEST_CASE("An empty SRQ makes the responder send RNR NAKs until a receive is posted", "[ud-srq]") {
  SrqRig r(144);
  fill(r.a(0), 1000, 3);
  REQUIRE(r.send(1, 1, 0, 1000) == 0);
  r.fabric.run_until([&] { return r.qa[1]->counters().rcvd_rnr_err >= 3; }, kSecond);
  CHECK(r.qa[1]->counters().rcvd_rnr_err >= 3);
  REQUIRE(r.srq_recv(9, 0, 1000) == 0);
  auto wb = wait_cq(r.fabric, *r.cqb, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(wb[0].qp_num == r.qb[1]->qp_num());
  CHECK(std::memcmp(r.b(0), r.a(0), 1000) == 0);
}

TEST_CASE("A QP entering ERR does not flush the SRQ's receives", "[ud-srq]") {
  SrqRig r(145);
  for (int i = 0; i < 3; ++i) REQUIRE(r.srq_recv(100 + uint64_t(i), size_t(i) * 2048, 2048) == 0);
  ibv_qp_attr e{};
  e.qp_state = IBV_QPS_ERR;
  REQUIRE(r.qb[0]->modify(e, IBV_QP_STATE) == 0);
  CHECK(drain(*r.cqb).empty());
  CHECK(r.srq->posted() == 3);
  REQUIRE(r.send(1, 1, 0, 100) == 0);
  auto wb = wait_cq(r.fabric, *r.cqb, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].wr_id == 100);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(r.srq->posted() == 2);
}

TEST_CASE("Destroying an SRQ with posted receives releases their regions", "[ud-srq]") {
  sim::SimFabric fabric(146);
  Device& d = fabric.add_device("10.0.0.1", small_device());
  auto pd = d.alloc_pd();
  std::vector<uint8_t> mem(4096);
  int err = -1;
  auto mr = pd->reg_mr(mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE, err);
  REQUIRE(err == 0);
  SrqInitAttr sa;
  sa.max_wr = 8;
  auto srq = pd->create_srq(sa, err);
  REQUIRE(err == 0);
  ibv_sge s{reinterpret_cast<uintptr_t>(mem.data()), 4096, mr->lkey()};
  RecvWr wr;
  wr.sg_list = &s;
  wr.num_sge = 1;
  const RecvWr* bad = nullptr;
  REQUIRE(srq->post_recv(&wr, &bad) == 0);
  REQUIRE(srq->post_recv(&wr, &bad) == 0);
  CHECK(pd->dereg_mr(mr) == EBUSY);  // in use by the posted receives
  srq.reset();                       // ibv_destroy_srq: its receives are gone
  CHECK(mr->in_use() == 0);
  CHECK(pd->dereg_mr(mr) == 0);
}

TEST_CASE("SRQ limit: one SRQ_LIMIT_REACHED event when fewer receives remain, then disarmed", "[ud-srq]") {
  SrqRig r(147, 8);
  for (uint64_t i = 0; i < 4; ++i) REQUIRE(r.srq_recv(i, i * 256, 256) == 0);
  Device& dev = r.srq->pd().device();
  ibv_srq_attr a{};
  a.srq_limit = 9;
  CHECK(r.srq->modify(a, IBV_SRQ_LIMIT) == EINVAL);  // above max_wr
  a.max_wr = 16;
  CHECK(r.srq->modify(a, IBV_SRQ_MAX_WR) == EINVAL);  // no resizing
  a.srq_limit = 3;
  REQUIRE(r.srq->modify(a, IBV_SRQ_LIMIT) == 0);
  ibv_srq_attr q{};
  REQUIRE(r.srq->query(q) == 0);
  CHECK(q.srq_limit == 3);
  CHECK(q.max_wr == 8);
  AsyncEvent ev;
  CHECK_FALSE(dev.get_async_event(ev));

  // 4 -> 3 receives left: not below the limit yet.
  REQUIRE(r.send(0, 1, 0, 64) == 0);
  REQUIRE(r.fabric.run_until([&] { return r.srq->posted() == 3; }));
  r.fabric.run_for(kSecond / 100);
  CHECK_FALSE(dev.get_async_event(ev));
  // 3 -> 2, through the other QP: the event fires, naming the SRQ.
  REQUIRE(r.send(1, 2, 0, 64) == 0);
  REQUIRE(r.fabric.run_until([&] { return r.srq->posted() == 2; }));
  REQUIRE(dev.get_async_event(ev));
  CHECK(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED);
  CHECK(ev.srq == r.srq.get());
  CHECK(ev.qp == nullptr);
  CHECK_FALSE(dev.get_async_event(ev));  // taken once
  REQUIRE(r.srq->query(q) == 0);
  CHECK(q.srq_limit == 0);  // disarmed
  // Disarmed: taking more receives raises nothing until it is armed again.
  REQUIRE(r.send(0, 3, 0, 64) == 0);
  REQUIRE(r.fabric.run_until([&] { return r.srq->posted() == 1; }));
  r.fabric.run_for(kSecond / 100);
  CHECK_FALSE(dev.get_async_event(ev));
  a.srq_limit = 2;
  REQUIRE(r.srq->modify(a, IBV_SRQ_LIMIT) == 0);
  REQUIRE(r.send(1, 4, 0, 64) == 0);
  REQUIRE(r.fabric.run_until([&] { return r.srq->posted() == 0; }));
  REQUIRE(dev.get_async_event(ev));
  CHECK(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED);
}

TEST_CASE("An unread SRQ limit event goes away with its SRQ", "[ud-srq]") {
  // get_async_event must never hand out a destroyed SRQ.
  SrqRig r(148, 8);
  for (uint64_t i = 0; i < 2; ++i) REQUIRE(r.srq_recv(i, i * 256, 256) == 0);
  Device& dev = r.srq->pd().device();
  ibv_srq_attr a{};
  a.srq_limit = 2;
  REQUIRE(r.srq->modify(a, IBV_SRQ_LIMIT) == 0);
  REQUIRE(r.send(0, 1, 0, 64) == 0);
  REQUIRE(r.fabric.run_until([&] { return r.srq->posted() == 1; }));
  r.fabric.run_for(kSecond / 100);
  r.side_b.qp.reset();  // the SRQ's users first
  r.side_b.more_qps.clear();
  r.srq.reset();
  AsyncEvent ev;
  CHECK_FALSE(dev.get_async_event(ev));
}
