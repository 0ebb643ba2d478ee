// SPDX-License-Identifier: BSD-3-Clause
// UD send/receive through address handles: the GRH slot, Q_Key checks,
// the path MTU limit, and what a UD QP refuses at post time.
#include <cerrno>

#include "ud_util.h"

using namespace uroce;
using namespace uroce::vt;

TEST_CASE("UD SEND_WITH_IMM: GRH slot with the IPv4 header at 20, byte_len = payload + 40", "[ud-srq]") {
  UdPair p(121);
  fill(p.a.buf(), 300, 1);
  REQUIRE(p.recv(p.b, 7, 1000, 40 + 300) == 0);
  REQUIRE(p.send(p.a, p.b, 8, 0, 300, 0x1111, IBV_WR_SEND_WITH_IMM, htonl(0xA1B2C3D4)) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].wr_id == 7);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(wb[0].opcode == IBV_WC_RECV);
  CHECK(wb[0].byte_len == 340);
  CHECK((wb[0].wc_flags & IBV_WC_GRH) != 0);
  CHECK((wb[0].wc_flags & IBV_WC_WITH_IMM) != 0);
  CHECK(wb[0].imm_data == htonl(0xA1B2C3D4));
  CHECK(wb[0].src_qp == p.a.qp->qp_num());
  CHECK(wb[0].qp_num == p.b.qp->qp_num());
  const uint8_t* grh = p.b.buf(1000);
  CHECK(grh[20] == 0x45);      // IPv4, 20-byte header
  CHECK(grh[20 + 9] == 17);    // UDP
  const uint8_t src[4] = {10, 0, 0, 1}, dst[4] = {10, 0, 0, 2};
  CHECK(std::memcmp(grh + 20 + 12, src, 4) == 0);
  CHECK(std::memcmp(grh + 20 + 16, dst, 4) == 0);
  CHECK(std::memcmp(grh + 40, p.a.buf(), 300) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].wr_id == 8);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(wa[0].opcode == IBV_WC_SEND);
}

TEST_CASE("UD SEND without immediate, scattered over two SGEs", "[ud-srq]") {
  UdPair p(122);
  fill(p.a.buf(), 1000, 2);
  ibv_sge s[2] = {p.b.sge(0, 100), p.b.sge(5000, 1000)};
  RecvWr r;
  r.wr_id = 3;
  r.sg_list = s;
  r.num_sge = 2;
  const RecvWr* rbad = nullptr;
  REQUIRE(p.b.qp->post_recv(&r, &rbad) == 0);
  REQUIRE(p.send(p.a, p.b, 4, 0, 1000, 0x1111) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(wb[0].byte_len == 1040);
  CHECK((wb[0].wc_flags & IBV_WC_WITH_IMM) == 0);
  CHECK(std::memcmp(p.b.buf(40), p.a.buf(), 60) == 0);
  CHECK(std::memcmp(p.b.buf(5000), p.a.buf(60), 940) == 0);
}

TEST_CASE("UD: a datagram with the wrong Q_Key is dropped", "[ud-srq]") {
  UdPair p(123);
  fill(p.a.buf(), 100, 3);
  REQUIRE(p.recv(p.b, 1, 0, 200) == 0);
  REQUIRE(p.send(p.a, p.b, 10, 0, 100, 0x2222) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);  // UD: the sender cannot know
  p.fabric.run_for(10'000'000);
  CHECK(drain(*p.b.cq).empty());
  // The receive is still there for a datagram with the right key.
  REQUIRE(p.send(p.a, p.b, 11, 50, 50, 0x1111) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].wr_id == 1);
  CHECK(wb[0].byte_len == 90);
  CHECK(std::memcmp(p.b.buf(40), p.a.buf(50), 50) == 0);
}

TEST_CASE("UD: remote_qkey with the high bit set sends the QP's own Q_Key", "[ud-srq]") {
  SECTION("own key matches the receiver's") {
    UdPair p(124, 0x1111, 0x1111);
    REQUIRE(p.recv(p.b, 1, 0, 200) == 0);
    REQUIRE(p.send(p.a, p.b, 10, 0, 100, 0x80000000u) == 0);
    auto wb = p.wait(p.b, 1);
    REQUIRE(wb.size() == 1);
    CHECK(wb[0].status == IBV_WC_SUCCESS);
  }
  SECTION("own key differs from the receiver's: dropped") {
    UdPair p(125, 0x3333, 0x1111);
    REQUIRE(p.recv(p.b, 1, 0, 200) == 0);
    REQUIRE(p.send(p.a, p.b, 10, 0, 100, 0x80001111u) == 0);  // the low bits are not used
    REQUIRE(p.wait(p.a, 1).size() == 1);
    p.fabric.run_for(10'000'000);
    CHECK(drain(*p.b.cq).empty());
  }
}

TEST_CASE("UD: no receive posted means the datagram is dropped (no RNR)", "[ud-srq]") {
  UdPair p(126);
  REQUIRE(p.send(p.a, p.b, 1, 0, 100, 0x1111) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  p.fabric.run_for(10'000'000);
  REQUIRE(p.recv(p.b, 1, 0, 200) == 0);
  p.fabric.run_for(10'000'000);
  CHECK(drain(*p.b.cq).empty());
}

TEST_CASE("UD: a receive too small for GRH + payload completes with LOC_LEN_ERR", "[ud-srq]") {
  UdPair p(127);
  REQUIRE(p.recv(p.b, 1, 0, 40 + 99) == 0);
  REQUIRE(p.send(p.a, p.b, 1, 0, 100, 0x1111) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].wr_id == 1);
  CHECK(wb[0].status == IBV_WC_LOC_LEN_ERR);
}

TEST_CASE("UD: a message larger than the path MTU is EINVAL at post", "[ud-srq]") {
  SECTION("1500-byte wire: 1024") {
    UdPair p(128);
    fill(p.a.buf(), 2000, 4);
    CHECK(p.send(p.a, p.b, 1, 0, 1025, 0x1111) == EINVAL);
    REQUIRE(p.recv(p.b, 2, 0, 2000) == 0);
    REQUIRE(p.send(p.a, p.b, 3, 0, 1024, 0x1111) == 0);
    auto wb = p.wait(p.b, 1);
    REQUIRE(wb.size() == 1);
    CHECK(wb[0].status == IBV_WC_SUCCESS);
    CHECK(wb[0].byte_len == 1064);
    CHECK(std::memcmp(p.b.buf(40), p.a.buf(), 1024) == 0);
    auto wa = p.wait(p.a, 1);
    REQUIRE(wa.size() == 1);
    CHECK(wa[0].wr_id == 3);  // the refused one left no trace
  }
  SECTION("9000-byte wire: 4096 (the port's active MTU)") {
    UdPair p(129, 0x1111, 0x1111, 9000);
    fill(p.a.buf(), 5000, 5);
    CHECK(p.send(p.a, p.b, 1, 0, 4097, 0x1111) == EINVAL);
    REQUIRE(p.recv(p.b, 2, 0, 5000) == 0);
    REQUIRE(p.send(p.a, p.b, 3, 0, 4096, 0x1111) == 0);
    auto wb = p.wait(p.b, 1);
    REQUIRE(wb.size() == 1);
    CHECK(wb[0].status == IBV_WC_SUCCESS);
    CHECK(wb[0].byte_len == 4136);
    CHECK(std::memcmp(p.b.buf(40), p.a.buf(), 4096) == 0);
  }
}

TEST_CASE("UD refuses RC-only opcodes, a missing AH and an AH of another PD", "[ud-srq]") {
  UdPair p(130);
  ibv_sge s = p.a.sge(0, 8);
  for (ibv_wr_opcode op : {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
                           IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND_WITH_INV}) {
    INFO("opcode " << int(op));
    SendWr wr = make_wr(op, 1, &s);
    wr.wr.ud.ah = p.a.ah.get();
    wr.wr.ud.remote_qpn = p.b.qp->qp_num();
    wr.wr.ud.remote_qkey = 0x1111;
    const SendWr* bad = nullptr;
    CHECK(p.a.qp->post_send(&wr, &bad) == EINVAL);
    CHECK(bad == &wr);
  }
  SendWr noah = make_wr(IBV_WR_SEND, 2, &s);
  noah.wr.ud.remote_qpn = p.b.qp->qp_num();
  const SendWr* bad = nullptr;
  CHECK(p.a.qp->post_send(&noah, &bad) == EINVAL);
  CHECK(bad == &noah);
  auto other_pd = p.a.dev->alloc_pd();
  auto foreign = make_ah(*other_pd, *p.b.dev);
  SendWr wrong_pd = make_wr(IBV_WR_SEND, 3, &s);
  wrong_pd.wr.ud.ah = foreign.get();
  wrong_pd.wr.ud.remote_qpn = p.b.qp->qp_num();
  CHECK(p.a.qp->post_send(&wrong_pd, &bad) == EINVAL);
  foreign.reset();
  p.fabric.run_for(1'000'000);
  CHECK(drain(*p.a.cq).empty());
}

TEST_CASE("UD state machine: Q_Key is required at RESET->INIT, SQ_PSN at RTR->RTS", "[ud-srq]") {
  sim::SimFabric fabric(131);
  Device& d = fabric.add_device("10.0.0.1", small_device());
  auto pd = d.alloc_pd();
  int err = -1;
  auto cq = d.create_cq(16, err);
  Opts o;
  o.type = IBV_QPT_UD;
  auto qp = make_qp(*pd, cq.get(), o);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qkey = 0x42;
  CHECK(qp->modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT) == EINVAL);
  CHECK(qp->modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == EINVAL);
  CHECK(qp->state() == IBV_QPS_RESET);
  REQUIRE(qp->modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) == 0);
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  CHECK(qp->modify(a, IBV_QP_STATE | IBV_QP_PATH_MTU) == EINVAL);
  REQUIRE(qp->modify(a, IBV_QP_STATE) == 0);
  a = {};
  a.qp_state = IBV_QPS_RTS;
  CHECK(qp->modify(a, IBV_QP_STATE) == EINVAL);
  CHECK(qp->state() == IBV_QPS_RTR);
  a.sq_psn = 5;
  REQUIRE(qp->modify(a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0);
  ibv_qp_attr q{};
  QpInitAttr init;
  REQUIRE(qp->query(q, -1, init) == 0);
  CHECK(q.qkey == 0x42u);
  CHECK(q.qp_state == IBV_QPS_RTS);
  CHECK(init.qp_type == IBV_QPT_UD);
}

TEST_CASE("UD over IPv6 GIDs: the GRH slot holds the whole IPv6 header", "[ud-srq]") {
  UdPair p(132, 0x1111, 0x1111, 1500, "fd00::1", "fd00::2");
  fill(p.a.buf(), 500, 6);
  REQUIRE(p.recv(p.b, 1, 0, 40 + 500) == 0);
  REQUIRE(p.send(p.a, p.b, 2, 0, 500, 0x1111) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(wb[0].byte_len == 540);
  CHECK((wb[0].wc_flags & IBV_WC_GRH) != 0);
  const uint8_t* grh = p.b.buf(0);
  CHECK((grh[0] >> 4) == 6);  // version
  CHECK(grh[6] == 17);        // next header: UDP
  CHECK(std::memcmp(grh + 8, p.a.dev->gids()[0].bytes.data(), 16) == 0);
  CHECK(std::memcmp(grh + 24, p.b.dev->gids()[0].bytes.data(), 16) == 0);
  CHECK(std::memcmp(grh + 40, p.a.buf(), 500) == 0);
}

TEST_CASE("UD: the address handle's hop limit and traffic class reach the wire", "[ud-srq]") {
  UdPair p(133);
  ibv_ah_attr at{};
  at.is_global = 1;
  at.port_num = 1;
  at.grh.sgid_index = 0;
  at.grh.hop_limit = 7;
  at.grh.traffic_class = 0x68;  // DSCP 26 (AF31), ECN bits 0
  std::memcpy(at.grh.dgid.raw, p.b.dev->gids()[0].bytes.data(), 16);
  int err = -1;
  p.a.ah = p.a.pd->create_ah(at, err);
  REQUIRE(err == 0);
  CHECK(p.a.ah->sgid() == p.a.dev->gids()[0]);
  REQUIRE(p.recv(p.b, 1, 0, 40 + 64) == 0);
  REQUIRE(p.send(p.a, p.b, 2, 4096, 64, 0x1111) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  const uint8_t* ipv4 = p.b.buf(20);  // the IPv4 header in the GRH slot
  CHECK(ipv4[8] == 7);                // TTL
  CHECK((ipv4[1] >> 2) == 26);        // DSCP
  CHECK(std::memcmp(ipv4 + 12, p.a.dev->gids()[0].bytes.data() + 12, 4) == 0);
}

TEST_CASE("UD: an address handle mixing an IPv4 source with an IPv6 destination is EINVAL", "[ud-srq]") {
  UdPair p(134);
  ibv_ah_attr at{};
  at.is_global = 1;
  at.port_num = 1;
  at.grh.sgid_index = 0;  // ::ffff:10.0.0.1
  wire::IpAddr v6;
  REQUIRE(wire::IpAddr::parse("fd00::2", v6));
  std::memcpy(at.grh.dgid.raw, v6.bytes.data(), 16);
  p.a.dev->add_neighbor(v6, wire::MacAddr{});  // resolvable: only the family is wrong
  int err = 0;
  CHECK(p.a.pd->create_ah(at, err) == nullptr);
  CHECK(err == EINVAL);
}

TEST_CASE("UD: each datagram loops back or goes to the wire by its own address handle", "[ud-srq]") {
  UdPair p(129);
  // A third UD QP, on a's device: a reaches it through an address handle
  // for a's own GID, and b through the wire, WR after WR.
  UdNode c;
  c.dev = p.a.dev;
  c.pd = p.a.dev->alloc_pd();
  int err = -1;
  c.cq = p.a.dev->create_cq(64, err);
  REQUIRE(err == 0);
  c.mr = c.pd->alloc_mr(1 << 16, kAllAccess, err);
  REQUIRE(err == 0);
  const Opts o = UdPair::options(0x1111);
  c.qp = test::make_qp(*c.pd, c.cq.get(), o, nullptr);
  test::connect(*c.qp, o, *p.a.dev, 0, 0);
  auto to_self = make_ah(*p.a.pd, *p.a.dev);
  fill(p.a.buf(), 4000, 31);
  const uint64_t wire_before = p.fabric.wire().totals().sent;
  for (int i = 0; i < 8; ++i) {
    REQUIRE(p.recv(p.b, 100 + uint64_t(i), size_t(i) * 1024, 1024) == 0);
    ibv_sge s = c.sge(size_t(i) * 1024, 1024);
    RecvWr r;
    r.wr_id = 200 + uint64_t(i);
    r.sg_list = &s;
    r.num_sge = 1;
    const RecvWr* rbad = nullptr;
    REQUIRE(c.qp->post_recv(&r, &rbad) == 0);
  }
  for (int i = 0; i < 8; ++i) {
    ibv_sge s = p.a.sge(size_t(i) * 400, 200);  // within max_inline_data (256)
    const unsigned flags = IBV_SEND_SIGNALED | (i % 4 < 2 ? unsigned(IBV_SEND_INLINE) : 0u);
    SendWr wr = make_wr(IBV_WR_SEND, uint64_t(i), &s, flags);
    const bool self = i % 2 == 0;
    wr.wr.ud.ah = self ? to_self.get() : p.a.ah.get();
    wr.wr.ud.remote_qpn = self ? c.qp->qp_num() : p.b.qp->qp_num();
    wr.wr.ud.remote_qkey = 0x1111;
    const SendWr* bad = nullptr;
    REQUIRE(p.a.qp->post_send(&wr, &bad) == 0);
  }
  auto wa = p.wait(p.a, 8);
  REQUIRE(wa.size() == 8);
  auto wb = p.wait(p.b, 4);
  auto wc = wait_cq(p.fabric, *c.cq, 4, kSecond);
  REQUIRE(wb.size() == 4);
  REQUIRE(wc.size() == 4);
  for (size_t k = 0; k < 4; ++k) {
    CHECK(wb[k].status == IBV_WC_SUCCESS);
    CHECK(wc[k].status == IBV_WC_SUCCESS);
    CHECK(std::memcmp(p.b.buf(k * 1024 + 40), p.a.buf((2 * k + 1) * 400), 200) == 0);
    CHECK(std::memcmp(c.buf(k * 1024 + 40), p.a.buf(2 * k * 400), 200) == 0);
  }
  // Only b's datagrams crossed the wire.
  CHECK(p.fabric.wire().totals().sent - wire_before == 4);
}
