// SPDX-License-Identifier: BSD-3-Clause
// Remote access violations (IBA 9.7.5.2.x, rxe check_rkey / check_op_valid):
// the responder NAKs, the requester completes with the matching status and
// flushes the rest, and not one byte is written on either side.
#include "negative_util.h"

using namespace uroce;
using namespace uroce::vt;

TEST_CASE("Wrong R_Key: REM_ACCESS_ERR for WRITE, READ and atomics", "[negative]") {
  for (ibv_wr_opcode op : {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
                           IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP}) {
    for (uint32_t flip : {0x00010000u, 0xFFFF0000u, 0x00000001u}) {
      DYNAMIC_SECTION("opcode " << int(op) << " key xor " << std::hex << flip) {
        Pair p(81);
        const bool atomic = op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP;
        ibv_sge s = sge(p.a, 4096, atomic ? 8 : 3000);
        if (op == IBV_WR_RDMA_WRITE_WITH_IMM) REQUIRE(post_recv(p.b, 800, 500, 10) == 0);
        SendWr wr = atomic ? atomic_wr(op, &s, p.b.addr(8192), p.b.key() ^ flip)
                           : rdma_wr(op, &s, p.b.addr(8192), p.b.key() ^ flip);
        expect_fatal(p, wr, IBV_WC_REM_ACCESS_ERR);
        CHECK(p.b.qp->counters().nak_sent >= 1);
        CHECK(p.a.qp->counters().rcvd_nak >= 1);
      }
    }
  }
}

TEST_CASE("Out of bounds, va + len overflowing included: REM_ACCESS_ERR", "[negative]") {
  struct Case {
    const char* what;
    ibv_wr_opcode op;
    int64_t off;  // from the start of b's region; the end is size
    bool from_end;
    uint32_t len;
  };
  const Case cases[] = {
      {"WRITE crossing the end", IBV_WR_RDMA_WRITE, -10, true, 20},
      {"multi-packet WRITE crossing the end", IBV_WR_RDMA_WRITE, -3000, true, 5000},
      {"WRITE before the start", IBV_WR_RDMA_WRITE, -8, false, 100},
      {"WRITE just past the end", IBV_WR_RDMA_WRITE, 0, true, 1},
      {"READ crossing the end", IBV_WR_RDMA_READ, -100, true, 4000},
      {"READ before the start", IBV_WR_RDMA_READ, -1, false, 10},
      {"FETCH_ADD at the end", IBV_WR_ATOMIC_FETCH_AND_ADD, 0, true, 8},
      {"CMP_SWP before the start", IBV_WR_ATOMIC_CMP_AND_SWP, -8, false, 8},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.what) {
      Pair p(82);
      const uint64_t raddr = (c.from_end ? p.b.addr(p.b.size()) : p.b.addr()) + uint64_t(c.off);
      ibv_sge s = sge(p.a, 0, c.len);
      const bool atomic = c.op == IBV_WR_ATOMIC_FETCH_AND_ADD || c.op == IBV_WR_ATOMIC_CMP_AND_SWP;
      expect_fatal(p, atomic ? atomic_wr(c.op, &s, raddr, p.b.key()) : rdma_wr(c.op, &s, raddr, p.b.key()),
                   IBV_WC_REM_ACCESS_ERR);
    }
  }
  SECTION("WRITE whose va + len wraps around 2^64") {
    Pair p(83);
    ibv_sge s = sge(p.a, 0, 200);
    expect_fatal(p, rdma_wr(IBV_WR_RDMA_WRITE, &s, UINT64_MAX - 99, p.b.key()), IBV_WC_REM_ACCESS_ERR);
  }
  SECTION("READ whose va + len wraps around 2^64") {
    Pair p(84);
    ibv_sge s = sge(p.a, 0, 4000);
    expect_fatal(p, rdma_wr(IBV_WR_RDMA_READ, &s, UINT64_MAX - 1000, p.b.key()), IBV_WC_REM_ACCESS_ERR);
  }
}

TEST_CASE("Region without the remote right: REM_ACCESS_ERR", "[negative]") {
  struct Case {
    const char* what;
    ibv_wr_opcode op;
    int mr_access;  // everything but the right op needs
  };
  const Case cases[] = {
      {"WRITE, no REMOTE_WRITE", IBV_WR_RDMA_WRITE,
       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC},
      {"READ, no REMOTE_READ", IBV_WR_RDMA_READ,
       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC},
      {"FETCH_ADD, no REMOTE_ATOMIC", IBV_WR_ATOMIC_FETCH_AND_ADD,
       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ},
      {"CMP_SWP, no REMOTE_ATOMIC", IBV_WR_ATOMIC_CMP_AND_SWP,
       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.what) {
      Pair p(85);
      std::vector<uint8_t> mem(16384);
      int err = -1;
      auto mr = p.b.pd->reg_mr(mem.data(), mem.size(), c.mr_access, err);
      REQUIRE(err == 0);
      const uint64_t raddr = reinterpret_cast<uintptr_t>(mem.data()) + 64;
      const bool atomic = c.op == IBV_WR_ATOMIC_FETCH_AND_ADD || c.op == IBV_WR_ATOMIC_CMP_AND_SWP;
      ibv_sge s = sge(p.a, 0, atomic ? 8 : 2000);
      expect_fatal(p, atomic ? atomic_wr(c.op, &s, raddr, mr->rkey()) : rdma_wr(c.op, &s, raddr, mr->rkey()),
                   IBV_WC_REM_ACCESS_ERR, mem);
    }
  }
}

TEST_CASE("QP without the remote access flag: REM_INV_REQ_ERR", "[negative]") {
  struct Case {
    const char* what;
    ibv_wr_opcode op;
    int qp_access;
  };
  const Case cases[] = {
      {"WRITE to a QP without REMOTE_WRITE", IBV_WR_RDMA_WRITE,
       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC},
      {"WRITE_WITH_IMM to a QP without REMOTE_WRITE", IBV_WR_RDMA_WRITE_WITH_IMM,
       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC},
      {"READ from a QP without REMOTE_READ", IBV_WR_RDMA_READ,
       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC},
      {"atomic on a QP without REMOTE_ATOMIC", IBV_WR_ATOMIC_FETCH_AND_ADD,
       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.what) {
      Opts ob = Pair::default_b();
      ob.qp_access = c.qp_access;
      Pair p(86, Pair::default_a(), ob);
      if (c.op == IBV_WR_RDMA_WRITE_WITH_IMM) REQUIRE(post_recv(p.b, 800, 500, 10) == 0);
      const bool atomic = c.op == IBV_WR_ATOMIC_FETCH_AND_ADD;
      ibv_sge s = sge(p.a, 0, atomic ? 8 : 1500);
      const uint64_t raddr = p.b.addr(65536);
      expect_fatal(p, atomic ? atomic_wr(c.op, &s, raddr, p.b.key()) : rdma_wr(c.op, &s, raddr, p.b.key()),
                   IBV_WC_REM_INV_REQ_ERR);
    }
  }
}

TEST_CASE("Region of another PD on the responder: REM_ACCESS_ERR", "[negative]") {
  for (ibv_wr_opcode op : {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD}) {
    DYNAMIC_SECTION("opcode " << int(op)) {
      Pair p(87);
      auto other_pd = p.b.dev->alloc_pd();
      std::vector<uint8_t> mem(8192);
      int err = -1;
      auto mr = other_pd->reg_mr(mem.data(), mem.size(), kAllAccess, err);
      REQUIRE(err == 0);
      const uint64_t raddr = reinterpret_cast<uintptr_t>(mem.data()) + 128;
      const bool atomic = op == IBV_WR_ATOMIC_FETCH_AND_ADD;
      ibv_sge s = sge(p.a, 0, atomic ? 8 : 1000);
      expect_fatal(p, atomic ? atomic_wr(op, &s, raddr, mr->rkey()) : rdma_wr(op, &s, raddr, mr->rkey()),
                   IBV_WC_REM_ACCESS_ERR, mem);
      mr.reset();
    }
  }
}

TEST_CASE("Region deregistered before the request: REM_ACCESS_ERR", "[negative]") {
  for (ibv_wr_opcode op : {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP}) {
    DYNAMIC_SECTION("opcode " << int(op)) {
      Pair p(88);
      std::vector<uint8_t> mem(8192);
      int err = -1;
      auto mr = p.b.pd->reg_mr(mem.data(), mem.size(), kAllAccess, err);
      REQUIRE(err == 0);
      const uint32_t rkey = mr->rkey();
      REQUIRE(p.b.pd->dereg_mr(mr) == 0);
      const uint64_t raddr = reinterpret_cast<uintptr_t>(mem.data()) + 256;
      const bool atomic = op == IBV_WR_ATOMIC_CMP_AND_SWP;
      ibv_sge s = sge(p.a, 0, atomic ? 8 : 3000);
      expect_fatal(p, atomic ? atomic_wr(op, &s, raddr, rkey) : rdma_wr(op, &s, raddr, rkey),
                   IBV_WC_REM_ACCESS_ERR, mem);
    }
  }
}

TEST_CASE("Misaligned atomic: REM_INV_REQ_ERR", "[negative]") {
  for (uint64_t off : {4ull, 1ull, 7ull}) {
    for (ibv_wr_opcode op : {IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP}) {
      DYNAMIC_SECTION("offset " << off << " opcode " << int(op)) {
        Pair p(89);
        ibv_sge s = sge(p.a, 0, 8);
        expect_fatal(p, atomic_wr(op, &s, p.b.addr(4096 + off), p.b.key()), IBV_WC_REM_INV_REQ_ERR);
      }
    }
  }
}

TEST_CASE("Atomic at an aligned IOVA whose host address is not aligned: REM_INV_REQ_ERR, nothing written",
          "[negative]") {
  // reg_mr_iova lets a region's IOVA and address differ in alignment: the
  // locked 8-byte operation must never run across the host's word boundary.
  for (uint64_t misalign : {1ull, 3ull, 4ull}) {
    for (ibv_wr_opcode op : {IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP}) {
      DYNAMIC_SECTION("address + " << misalign << " opcode " << int(op)) {
        Pair p(96);
        alignas(8) static uint8_t backing[4096 + 8];
        std::span<uint8_t> mem(backing + misalign, 4096);
        int err = -1;
        auto mr = p.b.pd->reg_mr_iova(mem.data(), mem.size(), 0x10000, kAllAccess, err);
        REQUIRE(err == 0);
        ibv_sge s = sge(p.a, 0, 8);
        expect_fatal(p, atomic_wr(op, &s, 0x10000 + 64, mr->rkey()), IBV_WC_REM_INV_REQ_ERR, mem);
        mr.reset();
      }
    }
  }
}

TEST_CASE("READ or atomic to a responder with max_dest_rd_atomic 0: REM_INV_REQ_ERR", "[negative]") {
  for (ibv_wr_opcode op : {IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD}) {
    DYNAMIC_SECTION("opcode " << int(op)) {
      Opts ob = Pair::default_b();
      ob.max_dest_rd_atomic = 0;
      Pair p(90, Pair::default_a(), ob);
      const bool atomic = op == IBV_WR_ATOMIC_FETCH_AND_ADD;
      ibv_sge s = sge(p.a, 0, atomic ? 8 : 100);
      expect_fatal(p, atomic ? atomic_wr(op, &s, p.b.addr(64), p.b.key()) : rdma_wr(op, &s, p.b.addr(64), p.b.key()),
                   IBV_WC_REM_INV_REQ_ERR);
    }
  }
}

TEST_CASE("Remote write access revoked in RTS (RTS->RTS): the next WRITE is REM_INV_REQ_ERR", "[negative]") {
  Pair p(95);
  fill(p.a.buf(), 100, 1);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 1, 0, 100, p.b.addr(0), p.b.key()) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  REQUIRE(wa[0].status == IBV_WC_SUCCESS);
  ibv_qp_attr m{};
  m.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
  REQUIRE(p.b.qp->modify(m, IBV_QP_ACCESS_FLAGS) == 0);
  ibv_sge s = sge(p.a, 0, 100);
  expect_fatal(p, rdma_wr(IBV_WR_RDMA_WRITE, &s, p.b.addr(0), p.b.key()), IBV_WC_REM_INV_REQ_ERR);
}
