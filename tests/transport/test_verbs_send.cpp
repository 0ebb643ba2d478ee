// SPDX-License-Identifier: BSD-3-Clause
// SEND and its variants end to end on RC: data, completions on both sides,
// immediate data, invalidation, inline, scatter/gather, signaling, chains.
#include "verbs_test_util.h"

using namespace uroce;
using namespace uroce::vt;

TEST_CASE("SEND: data lands in the receive buffer; both sides complete", "[verbs]") {
  Pair p(51);
  INFO("seed " << p.seed);
  fill(p.a.buf(), 5000, 1);
  REQUIRE(post_recv(p.b, 7, 10000, 8000) == 0);
  REQUIRE(post_send(p.a, 8, 0, 5000) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].wr_id == 7);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(wb[0].opcode == IBV_WC_RECV);
  CHECK(wb[0].byte_len == 5000);
  CHECK(wb[0].qp_num == p.b.qp->qp_num());
  CHECK(wb[0].src_qp == p.a.qp->qp_num());
  CHECK((wb[0].wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)) == 0);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(10000), 5000) == 0);
  CHECK(p.b.buf(15000)[0] == 0);  // nothing beyond the message
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].wr_id == 8);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(wa[0].opcode == IBV_WC_SEND);
  CHECK(wa[0].qp_num == p.a.qp->qp_num());
}

TEST_CASE("SEND_WITH_IMM: IBV_WC_WITH_IMM and imm_data round-trip in network order", "[verbs]") {
  Pair p(52);
  fill(p.a.buf(), 3000, 2);
  for (uint32_t imm : {0x12345678u, 0u, 0xFFFFFFFFu, 0x000000A5u}) {
    INFO("imm " << std::hex << imm);
    REQUIRE(post_recv(p.b, 1, 0, 4096) == 0);
    ibv_sge s = sge(p.a, 0, imm == 0 ? 3000 : 100);
    SendWr wr = make_wr(IBV_WR_SEND_WITH_IMM, 2, &s);
    wr.imm_data = htonl(imm);
    REQUIRE(post(p.a, wr) == 0);
    auto wb = p.wait(p.b, 1);
    REQUIRE(wb.size() == 1);
    CHECK(wb[0].status == IBV_WC_SUCCESS);
    CHECK(wb[0].opcode == IBV_WC_RECV);
    CHECK((wb[0].wc_flags & IBV_WC_WITH_IMM) != 0);
    CHECK(wb[0].imm_data == htonl(imm));
    CHECK(wb[0].byte_len == s.length);
    CHECK(std::memcmp(p.a.buf(), p.b.buf(), s.length) == 0);
    auto wa = p.wait(p.a, 1);
    REQUIRE(wa.size() == 1);
    CHECK(wa[0].status == IBV_WC_SUCCESS);
    CHECK(wa[0].opcode == IBV_WC_SEND);
  }
}

TEST_CASE("SEND_WITH_INV naming a key that cannot be invalidated: REM_INV_REQ_ERR on both ends", "[verbs]") {
  // Only memory windows and fast-registered regions may be invalidated by
  // the peer; the key is checked when the last packet (with the IETH)
  // arrives, so the first packets of the message have landed.
  Pair p(53);
  fill(p.a.buf(), 2500, 3);
  REQUIRE(post_recv(p.b, 1, 0, 4096) == 0);
  ibv_sge s = sge(p.a, 0, 2500);  // three packets: the IETH rides on the last
  SendWr wr = make_wr(IBV_WR_SEND_WITH_INV, 2, &s);
  wr.invalidate_rkey = 0x1234ABCD;
  REQUIRE(post(p.a, wr) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].wr_id == 1);
  CHECK(wb[0].status == IBV_WC_REM_INV_REQ_ERR);
  CHECK((wb[0].wc_flags & IBV_WC_WITH_INV) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_REM_INV_REQ_ERR);
  CHECK(p.a.qp->state() == IBV_QPS_ERR);
  CHECK(p.b.qp->state() == IBV_QPS_ERR);
}

TEST_CASE("Inline SEND: the payload is taken at post time", "[verbs]") {
  Pair p(54);
  std::vector<uint8_t> mine(200);  // not registered at all
  fill(mine.data(), mine.size(), 4);
  const std::vector<uint8_t> expect = mine;
  REQUIRE(post_recv(p.b, 1, 0, 256) == 0);
  ibv_sge s{reinterpret_cast<uintptr_t>(mine.data()), 200, 0};  // lkey ignored for inline
  REQUIRE(post(p.a, make_wr(IBV_WR_SEND, 2, &s, IBV_SEND_SIGNALED | IBV_SEND_INLINE)) == 0);
  std::fill(mine.begin(), mine.end(), 0xEE);  // verbs: the buffer is free again at once
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(wb[0].byte_len == 200);
  CHECK(std::memcmp(p.b.buf(), expect.data(), 200) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);

  // Inline from two SGEs.
  ibv_sge two[2] = {{reinterpret_cast<uintptr_t>(expect.data()), 50, 0},
                    {reinterpret_cast<uintptr_t>(expect.data()) + 120, 80, 0}};
  REQUIRE(post_recv(p.b, 3, 1000, 256) == 0);
  SendWr wr = make_wr(IBV_WR_SEND, 4, two, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
  wr.num_sge = 2;
  REQUIRE(post(p.a, wr) == 0);
  wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].byte_len == 130);
  CHECK(std::memcmp(p.b.buf(1000), expect.data(), 50) == 0);
  CHECK(std::memcmp(p.b.buf(1050), expect.data() + 120, 80) == 0);
}

TEST_CASE("Multi-SGE gather and scatter across SGE and packet boundaries", "[verbs]") {
  Pair p(55);
  fill(p.a.buf(), 1 << 16, 5);
  // Gather 3 pieces (total 3001 bytes, 3 packets at PMTU 1024) ...
  ibv_sge g[3] = {sge(p.a, 100, 1000), sge(p.a, 5000, 1), sge(p.a, 9000, 2000)};
  std::vector<uint8_t> msg(3001);
  size_t at = 0;
  for (const ibv_sge& s : g) {
    std::memcpy(msg.data() + at, reinterpret_cast<const void*>(uintptr_t(s.addr)), s.length);
    at += s.length;
  }
  // ... and scatter into 4 pieces with different boundaries.
  ibv_sge sc[4] = {sge(p.b, 0, 700), sge(p.b, 2000, 1500), sge(p.b, 4000, 3), sge(p.b, 6000, 2000)};
  RecvWr r;
  r.wr_id = 1;
  r.sg_list = sc;
  r.num_sge = 4;
  const RecvWr* rbad = nullptr;
  REQUIRE(p.b.qp->post_recv(&r, &rbad) == 0);
  SendWr wr = make_wr(IBV_WR_SEND, 2, g);
  wr.num_sge = 3;
  REQUIRE(post(p.a, wr) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(wb[0].byte_len == 3001);
  std::vector<uint8_t> got(3001);
  size_t left = 3001;
  for (const ibv_sge& s : sc) {
    const size_t n = std::min<size_t>(left, s.length);
    std::memcpy(got.data() + (3001 - left), reinterpret_cast<const void*>(uintptr_t(s.addr)), n);
    left -= n;
  }
  CHECK(got == msg);
  CHECK(p.b.buf(6000 + 798)[0] == 0);  // 700 + 1500 + 3 + 798 = 3001: nothing after
  CHECK(p.b.buf(700)[0] == 0);          // gaps between SGEs untouched
  auto ws = p.wait(p.a, 1);
  REQUIRE(ws.size() == 1);
  CHECK(ws[0].status == IBV_WC_SUCCESS);

  // Gather for a WRITE and scatter for a READ, too.
  ibv_sge w2[2] = {sge(p.a, 20000, 1500), sge(p.a, 30000, 700)};
  SendWr wwr = make_wr(IBV_WR_RDMA_WRITE, 3, w2);
  wwr.num_sge = 2;
  wwr.wr.rdma.remote_addr = p.b.addr(50000);
  wwr.wr.rdma.rkey = p.b.key();
  REQUIRE(post(p.a, wwr) == 0);
  ibv_sge r2[3] = {sge(p.a, 100000, 1), sge(p.a, 110000, 1099), sge(p.a, 120000, 1100)};
  SendWr rwr = make_wr(IBV_WR_RDMA_READ, 4, r2);
  rwr.num_sge = 3;
  rwr.wr.rdma.remote_addr = p.b.addr(50000);
  rwr.wr.rdma.rkey = p.b.key();
  REQUIRE(post(p.a, rwr) == 0);
  auto wa = p.wait(p.a, 2);
  REQUIRE(wa.size() == 2);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(wa[1].status == IBV_WC_SUCCESS);
  CHECK(wa[1].byte_len == 2200);
  CHECK(std::memcmp(p.b.buf(50000), p.a.buf(20000), 1500) == 0);
  CHECK(std::memcmp(p.b.buf(51500), p.a.buf(30000), 700) == 0);
  CHECK(p.a.buf(100000)[0] == p.a.buf(20000)[0]);
  CHECK(std::memcmp(p.a.buf(110000), p.a.buf(20001), 1099) == 0);
  CHECK(std::memcmp(p.a.buf(120000), p.a.buf(21100), 400) == 0);
  CHECK(std::memcmp(p.a.buf(120400), p.a.buf(30000), 700) == 0);
}

TEST_CASE("Unsignaled sends produce no completion; signaled ones do, in order", "[verbs]") {
  Pair p(56);
  fill(p.a.buf(), 1 << 16, 6);
  for (int i = 0; i < 20; ++i) REQUIRE(post_recv(p.b, 1000 + uint64_t(i), size_t(i) * 2048, 2048) == 0);
  std::vector<uint64_t> signaled;
  for (int i = 0; i < 20; ++i) {
    const bool sig = i % 4 == 1 || i == 19;
    REQUIRE(post_send(p.a, uint64_t(i), size_t(i) * 100, 100 + uint32_t(i), sig ? IBV_SEND_SIGNALED : 0) == 0);
    if (sig) signaled.push_back(uint64_t(i));
  }
  auto wb = p.wait(p.b, 20);
  REQUIRE(wb.size() == 20);
  for (int i = 0; i < 20; ++i) {
    CHECK(wb[size_t(i)].wr_id == 1000 + uint64_t(i));
    CHECK(wb[size_t(i)].byte_len == 100 + uint32_t(i));
    CHECK(std::memcmp(p.b.buf(size_t(i) * 2048), p.a.buf(size_t(i) * 100), 100 + size_t(i)) == 0);
  }
  auto wa = p.wait(p.a, signaled.size());
  p.run_for(20'000'000);  // anything late would show up now
  auto more = drain(*p.a.cq);
  wa.insert(wa.end(), more.begin(), more.end());
  REQUIRE(wa.size() == signaled.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    CHECK(wa[i].wr_id == signaled[i]);
    CHECK(wa[i].status == IBV_WC_SUCCESS);
  }
  CHECK(p.a.mr->in_use() == 0);  // unsignaled WRs released their regions too
}

TEST_CASE("sq_sig_all signals every WR", "[verbs]") {
  Opts oa = Pair::default_a();
  oa.sq_sig_all = 1;
  Pair p(57, oa);
  for (int i = 0; i < 5; ++i)
    REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, uint64_t(i), 0, 10, p.b.addr(), p.b.key(), 0) == 0);
  auto wa = p.wait(p.a, 5);
  REQUIRE(wa.size() == 5);
  for (int i = 0; i < 5; ++i) CHECK(wa[size_t(i)].wr_id == uint64_t(i));
}

TEST_CASE("A chain of WRs of every kind posted at once completes in order", "[verbs]") {
  Pair p(58);
  fill(p.a.buf(), 1 << 16, 7);
  fill(p.b.buf(200000), 1 << 16, 8);
  store64(p.b.buf(300000), 41);
  REQUIRE(post_recv(p.b, 900, 0, 4096) == 0);
  REQUIRE(post_recv(p.b, 901, 4096, 4096) == 0);
  ibv_sge s[6] = {sge(p.a, 0, 3000), sge(p.a, 4000, 2000), sge(p.a, 100000, 5000), sge(p.a, 110000, 8),
                  sge(p.a, 8000, 10), sge(p.a, 9000, 1)};
  SendWr w[6];
  w[0] = make_wr(IBV_WR_SEND, 0, &s[0]);
  w[1] = make_wr(IBV_WR_RDMA_WRITE, 1, &s[1]);
  w[1].wr.rdma.remote_addr = p.b.addr(100000);
  w[1].wr.rdma.rkey = p.b.key();
  w[2] = make_wr(IBV_WR_RDMA_READ, 2, &s[2]);
  w[2].wr.rdma.remote_addr = p.b.addr(200000);
  w[2].wr.rdma.rkey = p.b.key();
  w[3] = make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 3, &s[3]);
  w[3].wr.atomic.remote_addr = p.b.addr(300000);
  w[3].wr.atomic.rkey = p.b.key();
  w[3].wr.atomic.compare_add = 1;
  w[4] = make_wr(IBV_WR_SEND_WITH_IMM, 4, &s[4]);
  w[4].imm_data = htonl(77);
  w[5] = make_wr(IBV_WR_RDMA_WRITE, 5, &s[5]);
  w[5].wr.rdma.remote_addr = p.b.addr(150000);
  w[5].wr.rdma.rkey = p.b.key();
  for (int i = 0; i < 5; ++i) w[i].next = &w[i + 1];
  const SendWr* bad = nullptr;
  REQUIRE(p.a.qp->post_send(&w[0], &bad) == 0);
  auto wa = p.wait(p.a, 6);
  REQUIRE(wa.size() == 6);
  const ibv_wc_opcode ops[6] = {IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD, IBV_WC_SEND,
                                IBV_WC_RDMA_WRITE};
  for (int i = 0; i < 6; ++i) {
    INFO("wc " << i);
    CHECK(wa[size_t(i)].wr_id == uint64_t(i));
    CHECK(wa[size_t(i)].status == IBV_WC_SUCCESS);
    CHECK(wa[size_t(i)].opcode == ops[i]);
  }
  CHECK(wa[2].byte_len == 5000);
  CHECK(wa[3].byte_len == 8);
  auto wb = p.wait(p.b, 2);
  REQUIRE(wb.size() == 2);
  CHECK(wb[0].wr_id == 900);
  CHECK(wb[0].byte_len == 3000);
  CHECK(wb[1].wr_id == 901);
  CHECK(wb[1].imm_data == htonl(77));
  CHECK(std::memcmp(p.b.buf(), p.a.buf(), 3000) == 0);
  CHECK(std::memcmp(p.b.buf(100000), p.a.buf(4000), 2000) == 0);
  CHECK(std::memcmp(p.a.buf(100000), p.b.buf(200000), 5000) == 0);
  CHECK(load64(p.a.buf(110000)) == 41);
  CHECK(load64(p.b.buf(300000)) == 42);
  CHECK(p.b.buf(150000)[0] == p.a.buf(9000)[0]);
}

TEST_CASE("RC over IPv6 GIDs: SEND, WRITE and READ", "[verbs]") {
  Pair p(59, Pair::default_a(), Pair::default_b(), 1500, "fd00::1", "fd00::2");
  INFO("seed " << p.seed);
  fill(p.a.buf(), 10000, 9);
  fill(p.b.buf(500000), 10000, 10);
  REQUIRE(post_recv(p.b, 1, 0, 10000) == 0);
  REQUIRE(post_send(p.a, 2, 0, 10000) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 3, 0, 10000, p.b.addr(100000), p.b.key()) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_READ, 4, 200000, 10000, p.b.addr(500000), p.b.key()) == 0);
  auto wa = p.wait(p.a, 3);
  REQUIRE(wa.size() == 3);
  for (const ibv_wc& w : wa) CHECK(w.status == IBV_WC_SUCCESS);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].byte_len == 10000);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(), 10000) == 0);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(100000), 10000) == 0);
  CHECK(std::memcmp(p.a.buf(200000), p.b.buf(500000), 10000) == 0);
}

TEST_CASE("RC between two QPs of the same device (loopback)", "[verbs]") {
  sim::SimFabric fabric(60);
  Device& d = fabric.add_device("10.0.0.1", small_device());
  fabric.add_device("10.0.0.2", small_device());  // a second station on the wire, unused
  Opts oa = Pair::default_a(), ob = Pair::default_b();
  ob.cq_entries = 64;
  ob.bytes = 1 << 16;
  Node a, b;
  test::connect_pair(a, d, oa, b, d, ob);
  fill(a.buf(), 3000, 11);
  REQUIRE(post_recv(b, 1, 0, 4096) == 0);
  REQUIRE(post_send(a, 2, 0, 3000) == 0);
  auto wb = wait_cq(fabric, *b.cq, 1, kSecond);
  INFO("frames the wire could not route (sent to the sender itself): " << fabric.wire().totals().unroutable);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(a.buf(), b.buf(), 3000) == 0);
  auto wa = wait_cq(fabric, *a.cq, 1, kSecond);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(fabric.wire().totals().sent == 0);  // the SEND and its ACK stayed inside the device
}

TEST_CASE("post_send_all: a chain is posted whole or not at all", "[verbs]") {
  Pair p(60);
  fill(p.a.buf(), 4096, 3);
  REQUIRE(post_recv(p.b, 1, 0, 4096) == 0);
  // A valid SEND, then an atomic whose SGE is not 8 bytes: EINVAL at the
  // atomic, and the SEND stays unposted too.
  ibv_sge s[2] = {sge(p.a, 0, 100), sge(p.a, 1024, 4)};
  SendWr w[2];
  w[0] = make_wr(IBV_WR_SEND, 10, &s[0]);
  w[1] = make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 11, &s[1]);
  w[1].wr.atomic.remote_addr = p.b.addr(8192);
  w[1].wr.atomic.rkey = p.b.key();
  w[0].next = &w[1];
  const SendWr* bad = nullptr;
  CHECK(p.a.qp->post_send_all(&w[0], &bad) == EINVAL);
  CHECK(bad == &w[1]);
  p.run_for(50 * (kSecond / 1000));
  CHECK(p.wait(p.a, 1, 10 * (kSecond / 1000)).empty());
  CHECK(p.wait(p.b, 1, 10 * (kSecond / 1000)).empty());

  // More WRs than the send queue holds: ENOMEM at the first that does not
  // fit, none posted.
  ibv_qp_attr attr{};
  QpInitAttr init;
  REQUIRE(p.a.qp->query(attr, IBV_QP_CAP, init) == 0);
  std::vector<SendWr> many(init.cap.max_send_wr + 1);
  for (size_t i = 0; i < many.size(); ++i) {
    many[i] = make_wr(IBV_WR_SEND, 100 + i, &s[0]);
    if (i) many[i - 1].next = &many[i];
  }
  bad = nullptr;
  CHECK(p.a.qp->post_send_all(many.data(), &bad) == ENOMEM);
  CHECK(bad == &many.back());
  CHECK(p.wait(p.a, 1, 10 * (kSecond / 1000)).empty());

  // The valid SEND alone goes.
  w[0].next = nullptr;
  REQUIRE(p.a.qp->post_send_all(&w[0], &bad) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].byte_len == 100);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(), 100) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].wr_id == 10);
}
