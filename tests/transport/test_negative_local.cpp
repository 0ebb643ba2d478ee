// SPDX-License-Identifier: BSD-3-Clause
// Errors found at the requester's own end (bad local SGE), a SEND too large
// for the receive, a receive with a bad L_Key, and dereg_mr while posted
// work still uses the region.
#include <cerrno>

#include "negative_util.h"

using namespace uroce;
using namespace uroce::vt;

TEST_CASE("SEND larger than the posted receive: REM_INV_REQ_ERR / LOC_LEN_ERR, nothing written", "[negative]") {
  Pair p(91);
  INFO("seed " << p.seed);
  const Snapshot snap = fill_and_snapshot(p);
  REQUIRE(post_recv(p.b, 77, 2000, 500) == 0);
  REQUIRE(post_send(p.a, 1, 0, 600) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 2, 0, 64, p.b.addr(0), p.b.key()) == 0);
  auto wa = p.wait(p.a, 2, kSecond);
  REQUIRE(wa.size() == 2);
  CHECK(wa[0].wr_id == 1);
  CHECK(wa[0].status == IBV_WC_REM_INV_REQ_ERR);
  CHECK(wa[1].wr_id == 2);
  CHECK(wa[1].status == IBV_WC_WR_FLUSH_ERR);
  CHECK(p.a.qp->state() == IBV_QPS_ERR);
  auto wb = p.wait(p.b, 1, kSecond);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].wr_id == 77);
  CHECK(wb[0].status == IBV_WC_LOC_LEN_ERR);
  p.run_for(50'000'000);
  CHECK(snap.changed(0) == -1);
  CHECK(snap.changed(1) == -1);
}

TEST_CASE("Local SGE the requester may not use: LOC_PROT_ERR, nothing sent", "[negative]") {
  struct Case {
    const char* what;
    ibv_wr_opcode op;
    int sge_kind;  // 0 bad lkey, 1 out of the local region, 2 region of another PD, 3 READ into a region without
                   // LOCAL_WRITE
  };
  const Case cases[] = {
      {"SEND, bad lkey", IBV_WR_SEND, 0},
      {"WRITE, bad lkey", IBV_WR_RDMA_WRITE, 0},
      {"READ, bad lkey", IBV_WR_RDMA_READ, 0},
      {"SEND, SGE past the end of the region", IBV_WR_SEND, 1},
      {"WRITE, SGE past the end of the region", IBV_WR_RDMA_WRITE, 1},
      {"SEND, region of another PD", IBV_WR_SEND, 2},
      {"READ into a region without LOCAL_WRITE", IBV_WR_RDMA_READ, 3},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.what) {
      Pair p(92);
      std::vector<uint8_t> mem(8192);
      std::unique_ptr<ProtectionDomain> other_pd = p.a.dev->alloc_pd();
      std::unique_ptr<MemoryRegion> mr;
      ibv_sge s = sge(p.a, 0, 1500);
      int err = -1;
      switch (c.sge_kind) {
        case 0: s.lkey ^= 0x00100000u; break;
        case 1: s.addr = p.a.addr(p.a.size() - 1000); break;
        case 2:
          mr = other_pd->reg_mr(mem.data(), mem.size(), kAllAccess, err);
          REQUIRE(err == 0);
          s = ibv_sge{reinterpret_cast<uintptr_t>(mem.data()), 1500, mr->lkey()};
          break;
        case 3:
          mr = p.a.pd->reg_mr(mem.data(), mem.size(), IBV_ACCESS_REMOTE_READ, err);
          REQUIRE(err == 0);
          s = ibv_sge{reinterpret_cast<uintptr_t>(mem.data()), 1500, mr->lkey()};
          break;
      }
      SendWr wr = rdma_wr(c.op, &s, p.b.addr(4096), p.b.key());
      // A READ's local buffer is checked when its response arrives; the
      // requests behind it may have run remotely by then.
      expect_fatal(p, wr, IBV_WC_LOC_PROT_ERR, mem, c.op != IBV_WR_RDMA_READ);
      if (c.op == IBV_WR_SEND || c.op == IBV_WR_RDMA_WRITE) {
        // The bad request never reached the wire.
        CHECK(p.b.qp->counters().rcvd_pkts == 0);
      }
      mr.reset();
    }
  }
}

TEST_CASE("Receive with a bad L_Key: the responder reports LOC_PROT_ERR, the requester REM_OP_ERR", "[negative]") {
  Pair p(93);
  const Snapshot snap = fill_and_snapshot(p);
  ibv_sge s = sge(p.b, 0, 1000);
  s.lkey ^= 0x00200000u;
  RecvWr r;
  r.wr_id = 55;
  r.sg_list = &s;
  r.num_sge = 1;
  const RecvWr* bad = nullptr;
  REQUIRE(p.b.qp->post_recv(&r, &bad) == 0);
  REQUIRE(post_send(p.a, 1, 0, 700) == 0);
  auto wb = p.wait(p.b, 1, kSecond);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].wr_id == 55);
  CHECK(wb[0].status == IBV_WC_LOC_PROT_ERR);
  auto wa = p.wait(p.a, 1, kSecond);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_REM_OP_ERR);
  CHECK(p.a.qp->state() == IBV_QPS_ERR);
  CHECK(snap.changed(1) == -1);
}

TEST_CASE("dereg_mr is EBUSY while posted work uses the region, fine once it completed", "[negative]") {
  Pair p(94);
  std::vector<uint8_t> src(4096), dst(4096);
  fill(src.data(), src.size(), 1);
  int err = -1;
  auto smr = p.a.pd->reg_mr(src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE, err);
  REQUIRE(err == 0);
  auto dmr = p.b.pd->reg_mr(dst.data(), dst.size(), IBV_ACCESS_LOCAL_WRITE, err);
  REQUIRE(err == 0);
  ibv_sge rs{reinterpret_cast<uintptr_t>(dst.data()), 4096, dmr->lkey()};
  RecvWr r;
  r.wr_id = 5;
  r.sg_list = &rs;
  r.num_sge = 1;
  const RecvWr* rbad = nullptr;
  REQUIRE(p.b.qp->post_recv(&r, &rbad) == 0);
  CHECK(p.b.pd->dereg_mr(dmr) == EBUSY);
  REQUIRE(dmr != nullptr);

  ibv_sge ss{reinterpret_cast<uintptr_t>(src.data()), 3000, smr->lkey()};
  REQUIRE(post(p.a, make_wr(IBV_WR_SEND, 6, &ss, 0)) == 0);  // unsignaled: no CQE to wait for
  CHECK(p.a.pd->dereg_mr(smr) == EBUSY);
  REQUIRE(smr != nullptr);
  CHECK(smr->in_use() > 0);
  // A region of another PD is not this PD's to deregister.
  CHECK(p.b.pd->dereg_mr(smr) == EINVAL);

  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(src.data(), dst.data(), 3000) == 0);
  CHECK(p.b.pd->dereg_mr(dmr) == 0);
  CHECK(dmr == nullptr);
  p.fabric.run_until([&] { return smr->in_use() == 0; }, kSecond);
  CHECK(p.a.pd->dereg_mr(smr) == 0);
  CHECK(smr == nullptr);
}
