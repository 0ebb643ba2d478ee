// SPDX-License-Identifier: BSD-3-Clause
// Memory windows between two simulated devices: type 1 windows bound with
// bind_mw and type 2 windows bound with IBV_WR_BIND_MW, accesses through
// their rkeys (access rights, bounds, the QP a type 2 window belongs to),
// the bind rules, invalidation by SEND with invalidate and LOCAL_INV, and
// deallocation. End b owns the windows; end a accesses them.
#include "verbs_test_util.h"

namespace uroce::vt {
namespace {

constexpr int kRemoteAll = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;

Opts bindable_b(unsigned num_qps = 1) {
  Opts o = Pair::default_b();
  o.mr_access = kAllAccess | IBV_ACCESS_MW_BIND;
  o.num_qps = num_qps;
  return o;
}

struct MwPair : Pair {
  explicit MwPair(uint64_t seed, unsigned num_qps = 1) : Pair(seed, default_a_n(num_qps), bindable_b(num_qps)) {}
  static Opts default_a_n(unsigned n) {
    Opts o = default_a();
    o.num_qps = n;
    return o;
  }
};

std::unique_ptr<MemoryWindow> alloc(ProtectionDomain& pd, ibv_mw_type type) {
  int err = -1;
  auto mw = pd.alloc_mw(type, err);
  REQUIRE(mw);
  CHECK(err == 0);
  CHECK(mw->type() == type);
  return mw;
}

SendWr bind_wr(MemoryWindow& mw, uint32_t rkey, MemoryRegion* mr, uint64_t addr, uint64_t len, int access,
               uint64_t wr_id = 100) {
  SendWr wr = test::make_wr(IBV_WR_BIND_MW, wr_id, nullptr);
  wr.bind_mw.mw = &mw;
  wr.bind_mw.rkey = rkey;
  wr.bind_mw.bind_info.mr = mr;
  wr.bind_mw.bind_info.addr = addr;
  wr.bind_mw.bind_info.length = len;
  wr.bind_mw.bind_info.mw_access_flags = unsigned(access);
  return wr;
}

// Posts one WR on b's QP `qp` and returns its completion.
ibv_wc b_does(Pair& p, const SendWr& wr, size_t qp = 0) {
  const SendWr* bad = nullptr;
  REQUIRE(p.b.qp_at(qp).post_send(&wr, &bad) == 0);
  auto wc = p.wait(p.b, 1);
  REQUIRE(wc.size() == 1);
  return wc[0];
}

// A LOCAL_INV of `rkey` posted on b; returns its completion.
ibv_wc local_inv(Pair& p, uint32_t rkey, uint64_t wr_id = 300) {
  SendWr inv = test::make_wr(IBV_WR_LOCAL_INV, wr_id, nullptr);
  inv.invalidate_rkey = rkey;
  return b_does(p, inv);
}

// Binds a type 2 window of b's PD to [off, off+len) of b's region through
// b's QP `qp`, waits for the completion and returns the new rkey.
uint32_t bind_type2(MwPair& p, MemoryWindow& mw, size_t off, uint64_t len, int access, uint8_t consumer_key = 0x5A,
                    size_t qp = 0) {
  const uint32_t rkey = (mw.rkey() & ~0xFFu) | consumer_key;
  const ibv_wc wc = b_does(p, bind_wr(mw, rkey, p.b.mr.get(), p.b.addr(off), len, access), qp);
  CHECK(wc.status == IBV_WC_SUCCESS);
  CHECK(wc.opcode == IBV_WC_BIND_MW);
  CHECK(wc.wr_id == 100);
  return rkey;
}

// Posts one WR on a and returns its completion (b's side is not polled).
ibv_wc a_does(MwPair& p, const SendWr& wr, size_t qp = 0) {
  const SendWr* bad = nullptr;
  REQUIRE(p.a.qp_at(qp).post_send(&wr, &bad) == 0);
  auto wc = p.wait(p.a, 1);
  REQUIRE(wc.size() == 1);
  return wc[0];
}

ibv_wc rdma(MwPair& p, ibv_wr_opcode op, size_t off, uint32_t len, uint64_t raddr, uint32_t rkey, size_t qp = 0) {
  ibv_sge s = p.a.sge(off, len);
  SendWr wr = test::make_wr(op, 7, &s);
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  return a_does(p, wr, qp);
}

ibv_wc send_inv(MwPair& p, uint32_t rkey) {
  ibv_sge s = p.a.sge(0, 16);
  SendWr wr = test::make_wr(IBV_WR_SEND_WITH_INV, 8, &s);
  wr.invalidate_rkey = rkey;
  return a_does(p, wr);
}

// The failed bind completes with IBV_WC_MW_BIND_ERR and the QP fails.
void expect_bind_error(MwPair& p, const SendWr& wr, size_t qp = 0) {
  const ibv_wc wc = b_does(p, wr, qp);
  CHECK(wc.status == IBV_WC_MW_BIND_ERR);
  CHECK(wc.opcode == IBV_WC_BIND_MW);
  CHECK(p.b.qp_at(qp).state() == IBV_QPS_ERR);
}

}  // namespace

TEST_CASE("Type 2 window: WRITE, READ and atomics through its rkey reach the bound range", "[mw]") {
  MwPair p(201);
  auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
  CHECK(mw->rkey() != p.b.key());
  const uint32_t rkey = bind_type2(p, *mw, 4096, 8192, kRemoteAll);
  CHECK((rkey & 0xFF) == 0x5A);
  fill(p.a.buf(), 1000, 9);
  CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 1000, p.b.addr(4096 + 100), rkey).status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(4096 + 100), 1000) == 0);
  fill(p.b.buf(4096 + 5000), 3000, 10);
  CHECK(rdma(p, IBV_WR_RDMA_READ, 8192, 3000, p.b.addr(4096 + 5000), rkey).status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(p.a.buf(8192), p.b.buf(4096 + 5000), 3000) == 0);
  store64(p.b.buf(4096 + 64), 40);
  ibv_sge s = p.a.sge(16384, 8);
  SendWr fa = test::make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 9, &s);
  fa.wr.atomic.remote_addr = p.b.addr(4096 + 64);
  fa.wr.atomic.rkey = rkey;
  fa.wr.atomic.compare_add = 2;
  CHECK(a_does(p, fa).status == IBV_WC_SUCCESS);
  CHECK(load64(p.a.buf(16384)) == 40);
  CHECK(load64(p.b.buf(4096 + 64)) == 42);
  // The region's own key is unchanged by the window.
  CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 8, p.b.addr(0), p.b.key()).status == IBV_WC_SUCCESS);
}

TEST_CASE("Type 2 window: an access past the window's range is a remote access error", "[mw]") {
  MwPair p(202);
  auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
  const uint32_t rkey = bind_type2(p, *mw, 4096, 4096, kRemoteAll);
  // Inside the region, but its last byte is past the window.
  CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, p.b.addr(4096 + 4096 - 63), rkey).status == IBV_WC_REM_ACCESS_ERR);
  CHECK(p.a.qp->state() == IBV_QPS_ERR);
}

TEST_CASE("Type 2 window: below the window's start is a remote access error", "[mw]") {
  MwPair p(203);
  auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
  const uint32_t rkey = bind_type2(p, *mw, 4096, 4096, kRemoteAll);
  CHECK(rdma(p, IBV_WR_RDMA_READ, 0, 16, p.b.addr(4096 - 8), rkey).status == IBV_WC_REM_ACCESS_ERR);
}

TEST_CASE("Type 2 window: an access its rights do not give is a remote access error", "[mw]") {
  MwPair p(204);
  auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
  const uint32_t rkey = bind_type2(p, *mw, 0, 4096, IBV_ACCESS_REMOTE_READ);
  CHECK(rdma(p, IBV_WR_RDMA_READ, 0, 64, p.b.addr(0), rkey).status == IBV_WC_SUCCESS);
  CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, p.b.addr(0), rkey).status == IBV_WC_REM_ACCESS_ERR);
}

TEST_CASE("Type 2 window: the key with another consumer byte, or before the bind, is refused", "[mw]") {
  SECTION("unbound") {
    MwPair p(205);
    auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
    CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, p.b.addr(0), mw->rkey()).status == IBV_WC_REM_ACCESS_ERR);
  }
  SECTION("other consumer key") {
    MwPair p(206);
    auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
    const uint32_t rkey = bind_type2(p, *mw, 0, 4096, kRemoteAll, 0x11);
    CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, p.b.addr(0), rkey ^ 0x01).status == IBV_WC_REM_ACCESS_ERR);
  }
}

TEST_CASE("Type 2 window: only the QP that bound it accepts accesses through it", "[mw]") {
  MwPair p(207, 2);
  auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
  const uint32_t rkey = bind_type2(p, *mw, 0, 4096, kRemoteAll, 0x33, /*qp=*/1);
  CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, p.b.addr(0), rkey, 1).status == IBV_WC_SUCCESS);
  CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, p.b.addr(0), rkey, 0).status == IBV_WC_REM_ACCESS_ERR);
}

TEST_CASE("Type 2 window: destroying the QP it was bound through unbinds it", "[mw]") {
  MwPair p(214, 2);
  auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
  bind_type2(p, *mw, 0, 4096, kRemoteAll, 0x10, /*qp=*/1);
  p.b.more_qps.at(0).reset();
  // Unbound: QP 0 may bind it again, and accesses through QP 0 work.
  const uint32_t k = bind_type2(p, *mw, 0, 4096, kRemoteAll, 0x11, /*qp=*/0);
  CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, p.b.addr(0), k, 0).status == IBV_WC_SUCCESS);
}

TEST_CASE("SEND with invalidate of a type 2 window: reported, and its key then fails", "[mw]") {
  MwPair p(208);
  auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
  const uint32_t rkey = bind_type2(p, *mw, 0, 8192, kRemoteAll);
  REQUIRE(post_recv(p.b, 1, 65536, 256) == 0);
  CHECK(send_inv(p, rkey).status == IBV_WC_SUCCESS);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(wb[0].opcode == IBV_WC_RECV);
  CHECK((wb[0].wc_flags & IBV_WC_WITH_INV) != 0);
  CHECK(wb[0].invalidated_rkey == rkey);
  CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, p.b.addr(0), rkey).status == IBV_WC_REM_ACCESS_ERR);
}

TEST_CASE("SEND with invalidate: an invalidated window, or a type 1 window, is an invalid request", "[mw]") {
  SECTION("twice") {
    MwPair p(209);
    auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
    const uint32_t rkey = bind_type2(p, *mw, 0, 8192, kRemoteAll);
    REQUIRE(post_recv(p.b, 1, 65536, 256) == 0);
    REQUIRE(post_recv(p.b, 2, 65536, 256) == 0);
    CHECK(send_inv(p, rkey).status == IBV_WC_SUCCESS);
    CHECK(send_inv(p, rkey).status == IBV_WC_REM_INV_REQ_ERR);
  }
  SECTION("type 1") {
    MwPair p(210);
    auto mw = alloc(*p.b.pd, IBV_MW_TYPE_1);
    MwBind bind;
    bind.wr_id = 5;
    bind.send_flags = IBV_SEND_SIGNALED;
    bind.bind_info = {p.b.mr.get(), p.b.addr(0), 4096, unsigned(kRemoteAll)};
    REQUIRE(p.b.qp->bind_mw(*mw, bind) == 0);
    REQUIRE(p.wait(p.b, 1).size() == 1);
    REQUIRE(post_recv(p.b, 1, 65536, 256) == 0);
    CHECK(send_inv(p, mw->rkey()).status == IBV_WC_REM_INV_REQ_ERR);
  }
}

TEST_CASE("LOCAL_INV of a type 2 window: its key then fails; of anything else a local error", "[mw]") {
  SECTION("window") {
    MwPair p(211);
    auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
    const uint32_t rkey = bind_type2(p, *mw, 0, 8192, kRemoteAll);
    const ibv_wc wb = local_inv(p, rkey, 300);
    CHECK(wb.status == IBV_WC_SUCCESS);
    CHECK(wb.opcode == IBV_WC_LOCAL_INV);
    CHECK(wb.wr_id == 300);
    CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, p.b.addr(0), rkey).status == IBV_WC_REM_ACCESS_ERR);
  }
  SECTION("a region's key") {
    MwPair p(212);
    CHECK(local_inv(p, p.b.key(), 301).status == IBV_WC_LOC_QP_OP_ERR);
    CHECK(p.b.qp->state() == IBV_QPS_ERR);
  }
}

TEST_CASE("A type 2 window rebinds after invalidation, under a new consumer key", "[mw]") {
  MwPair p(213);
  auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
  const uint32_t k1 = bind_type2(p, *mw, 0, 4096, kRemoteAll, 0x01);
  CHECK(local_inv(p, k1).status == IBV_WC_SUCCESS);
  const uint32_t k2 = bind_type2(p, *mw, 8192, 4096, kRemoteAll, 0x02);
  CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, p.b.addr(8192), k2).status == IBV_WC_SUCCESS);
}

TEST_CASE("Bind rules: each broken one completes the bind with IBV_WC_MW_BIND_ERR", "[mw]") {
  SECTION("type 2 window already bound") {
    MwPair p(220);
    auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
    bind_type2(p, *mw, 0, 4096, kRemoteAll);
    expect_bind_error(p, bind_wr(*mw, mw->rkey(), p.b.mr.get(), p.b.addr(0), 4096, kRemoteAll));
  }
  SECTION("range past the region") {
    MwPair p(221);
    auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
    expect_bind_error(p, bind_wr(*mw, mw->rkey(), p.b.mr.get(), p.b.addr(p.b.size() - 100), 4096, kRemoteAll));
  }
  SECTION("type 2 with length 0") {
    MwPair p(222);
    auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
    expect_bind_error(p, bind_wr(*mw, mw->rkey(), p.b.mr.get(), p.b.addr(0), 0, kRemoteAll));
  }
  SECTION("region without IBV_ACCESS_MW_BIND") {
    MwPair p(223);
    int err = 0;
    auto plain = p.b.pd->alloc_mr(4096, kAllAccess, err);
    REQUIRE(plain);
    auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
    expect_bind_error(p, bind_wr(*mw, mw->rkey(), plain.get(), uintptr_t(plain->addr()), 4096, kRemoteAll));
  }
  SECTION("remote write on a region without local write") {
    MwPair p(224);
    int err = 0;
    auto ro = p.b.pd->alloc_mr(4096, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND, err);
    REQUIRE(ro);
    auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
    expect_bind_error(p, bind_wr(*mw, mw->rkey(), ro.get(), uintptr_t(ro->addr()), 4096, IBV_ACCESS_REMOTE_WRITE));
  }
  SECTION("zero-based window") {
    MwPair p(226);
    auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
    expect_bind_error(p, bind_wr(*mw, mw->rkey(), p.b.mr.get(), p.b.addr(0), 4096,
                                 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED));
  }
  SECTION("local write among the flags is accepted and gives nothing") {
    MwPair p(227);
    auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
    const uint32_t k = bind_type2(p, *mw, 0, 4096, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE);
    CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, p.b.addr(0), k).status == IBV_WC_REM_ACCESS_ERR);
  }
  SECTION("type 2 window of another PD than the QP's") {
    MwPair p(225);
    auto pd2 = p.b.dev->alloc_pd();
    int err = 0;
    auto mr2 = pd2->alloc_mr(4096, kAllAccess | IBV_ACCESS_MW_BIND, err);
    REQUIRE(mr2);
    auto mw = alloc(*pd2, IBV_MW_TYPE_2);
    expect_bind_error(p, bind_wr(*mw, mw->rkey(), mr2.get(), uintptr_t(mr2->addr()), 4096, kRemoteAll));
    mw.reset();
    mr2.reset();
  }
}

TEST_CASE("A window's key is no local key", "[mw]") {
  MwPair p(226);
  auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
  const uint32_t rkey = bind_type2(p, *mw, 0, 8192, kRemoteAll);
  ibv_sge s{p.b.addr(0), 64, rkey};
  REQUIRE(post(p.b, test::make_wr(IBV_WR_SEND, 1, &s)) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_LOC_PROT_ERR);
}

TEST_CASE("Type 1 window: bind_mw gives a new key each time; the old one fails", "[mw]") {
  MwPair p(230);
  auto mw = alloc(*p.b.pd, IBV_MW_TYPE_1);
  const uint32_t k0 = mw->rkey();
  // Allocated, a type 1 window is valid but covers nothing.
  CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 8, p.b.addr(0), k0).status == IBV_WC_REM_ACCESS_ERR);
  MwPair q(231);
  auto w1 = alloc(*q.b.pd, IBV_MW_TYPE_1);
  const uint32_t before = w1->rkey();
  MwBind bind;
  bind.wr_id = 50;
  bind.send_flags = IBV_SEND_SIGNALED;
  bind.bind_info = {q.b.mr.get(), q.b.addr(0), 4096, unsigned(IBV_ACCESS_REMOTE_WRITE)};
  REQUIRE(q.b.qp->bind_mw(*w1, bind) == 0);
  const uint32_t k1 = w1->rkey();
  CHECK(k1 == ((before & ~0xFFu) | ((before + 1) & 0xFFu)));
  auto wb = q.wait(q.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].opcode == IBV_WC_BIND_MW);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(rdma(q, IBV_WR_RDMA_WRITE, 0, 64, q.b.addr(64), k1).status == IBV_WC_SUCCESS);
  bind.bind_info = {q.b.mr.get(), q.b.addr(8192), 4096, unsigned(IBV_ACCESS_REMOTE_WRITE)};
  REQUIRE(q.b.qp->bind_mw(*w1, bind) == 0);
  REQUIRE(q.wait(q.b, 1).size() == 1);
  CHECK(rdma(q, IBV_WR_RDMA_WRITE, 0, 64, q.b.addr(8192), w1->rkey()).status == IBV_WC_SUCCESS);
  CHECK(rdma(q, IBV_WR_RDMA_WRITE, 0, 64, q.b.addr(64), k1).status == IBV_WC_REM_ACCESS_ERR);
}

TEST_CASE("Type 1 window: bind_mw's own checks", "[mw]") {
  MwPair p(232);
  auto t1 = alloc(*p.b.pd, IBV_MW_TYPE_1);
  auto t2 = alloc(*p.b.pd, IBV_MW_TYPE_2);
  MwBind bind;
  bind.bind_info = {p.b.mr.get(), p.b.addr(0), 4096, unsigned(IBV_ACCESS_REMOTE_READ)};
  CHECK(p.b.qp->bind_mw(*t2, bind) == EINVAL);
  bind.bind_info = {nullptr, 0, 4096, 0};
  CHECK(p.b.qp->bind_mw(*t1, bind) == EINVAL);
  auto pd2 = p.b.dev->alloc_pd();
  int err = 0;
  auto mr2 = pd2->alloc_mr(4096, kAllAccess | IBV_ACCESS_MW_BIND, err);
  REQUIRE(mr2);
  bind.bind_info = {mr2.get(), uintptr_t(mr2->addr()), 4096, unsigned(IBV_ACCESS_REMOTE_READ)};
  CHECK(p.b.qp->bind_mw(*t1, bind) == EPERM);
  mr2.reset();
  int e = 0;
  CHECK(p.b.pd->alloc_mw(ibv_mw_type(3), e) == nullptr);
  CHECK(e == EINVAL);
}

TEST_CASE("Deallocating a bound window: its key fails; the region deregisters only without windows", "[mw]") {
  MwPair p(240);
  int err = 0;
  auto mr = p.b.pd->alloc_mr(8192, kAllAccess | IBV_ACCESS_MW_BIND, err);
  REQUIRE(mr);
  auto t1 = alloc(*p.b.pd, IBV_MW_TYPE_1);
  auto t2 = alloc(*p.b.pd, IBV_MW_TYPE_2);
  MwBind bind;
  bind.send_flags = IBV_SEND_SIGNALED;
  bind.bind_info = {mr.get(), uintptr_t(mr->addr()), 4096, unsigned(kRemoteAll)};
  REQUIRE(p.b.qp->bind_mw(*t1, bind) == 0);
  SendWr wr = bind_wr(*t2, (t2->rkey() & ~0xFFu) | 0x7, mr.get(), uintptr_t(mr->addr()) + 4096, 4096, kRemoteAll);
  REQUIRE(post(p.b, wr) == 0);
  REQUIRE(p.wait(p.b, 2).size() == 2);
  const uint32_t k1 = t1->rkey(), k2 = (t2->rkey() & ~0xFFu) | 0x7;
  const uint64_t base = uintptr_t(mr->addr());
  CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, base, k1).status == IBV_WC_SUCCESS);
  CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, base + 4096, k2).status == IBV_WC_SUCCESS);
  CHECK(p.b.pd->dereg_mr(mr) == EINVAL);  // windows bound to it
  CHECK(mr);
  CHECK(p.b.pd->dealloc_mw(t1) == 0);
  CHECK(!t1);
  CHECK(p.b.pd->dereg_mr(mr) == EINVAL);  // t2 still
  CHECK(p.b.pd->dealloc_mw(t2) == 0);
  CHECK(p.b.pd->dereg_mr(mr) == 0);
  CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, base, k1).status == IBV_WC_REM_ACCESS_ERR);
}

TEST_CASE("A bind runs in queue order: a WRITE posted after it on the peer's side sees it", "[mw]") {
  // b posts a bind behind a SEND still waiting for its ACK: the bind
  // completes after the SEND, in order.
  MwPair p(241);
  auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
  REQUIRE(post_recv(p.a, 1, 0, 4096) == 0);
  REQUIRE(post_wr(p.b, IBV_WR_SEND, 10, 0, 3000) == 0);
  SendWr wr = bind_wr(*mw, (mw->rkey() & ~0xFFu) | 0x44, p.b.mr.get(), p.b.addr(0), 4096, kRemoteAll, 11);
  REQUIRE(post(p.b, wr) == 0);
  auto wb = p.wait(p.b, 2);
  REQUIRE(wb.size() == 2);
  CHECK(wb[0].wr_id == 10);
  CHECK(wb[1].wr_id == 11);
  CHECK(wb[1].opcode == IBV_WC_BIND_MW);
  CHECK(rdma(p, IBV_WR_RDMA_WRITE, 0, 64, p.b.addr(0), (mw->rkey() & ~0xFFu) | 0x44).status == IBV_WC_SUCCESS);
}

TEST_CASE("UC: a type 2 window binds and takes WRITEs", "[mw]") {
  Opts oa = Pair::default_a(), ob = bindable_b();
  oa.type = ob.type = IBV_QPT_UC;
  Pair p(242, oa, ob);
  auto mw = alloc(*p.b.pd, IBV_MW_TYPE_2);
  SendWr wr = bind_wr(*mw, (mw->rkey() & ~0xFFu) | 0x21, p.b.mr.get(), p.b.addr(0), 4096, IBV_ACCESS_REMOTE_WRITE);
  CHECK(b_does(p, wr).status == IBV_WC_SUCCESS);
  fill(p.a.buf(), 64, 3);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 1, 0, 64, p.b.addr(128), (mw->rkey() & ~0xFFu) | 0x21) == 0);
  REQUIRE(p.wait(p.a, 1).size() == 1);
  p.run_for(kSecond / 100);
  CHECK(p.b.qp->counters().uc_msg_dropped == 0);
  CHECK(p.b.qp->counters().rcvd_pkts == 1);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(128), 64) == 0);
}

}  // namespace uroce::vt
