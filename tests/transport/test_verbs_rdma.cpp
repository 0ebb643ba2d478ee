// SPDX-License-Identifier: BSD-3-Clause
// RDMA WRITE, WRITE_WITH_IMM and READ end to end on RC, zero-length
// operations, and segmentation at every path MTU.
#include "verbs_test_util.h"

using namespace uroce;
using namespace uroce::vt;

TEST_CASE("RDMA WRITE places data without consuming a receive", "[verbs]") {
  Pair p(61);
  fill(p.a.buf(), 10000, 1);
  REQUIRE(post_recv(p.b, 5, 0, 100) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 1, 0, 9999, p.b.addr(12345), p.b.key()) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(wa[0].opcode == IBV_WC_RDMA_WRITE);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(12345), 9999) == 0);
  CHECK(p.b.buf(12344)[0] == 0);
  CHECK(p.b.buf(12345 + 9999)[0] == 0);
  p.run_for(1'000'000);
  CHECK(drain(*p.b.cq).empty());  // the receive is still there
}

TEST_CASE("RDMA WRITE_WITH_IMM consumes a receive: IBV_WC_RECV_RDMA_WITH_IMM with byte_len", "[verbs]") {
  Pair p(62);
  fill(p.a.buf(), 5000, 2);
  REQUIRE(post_recv(p.b, 5, 0, 16) == 0);  // the receive buffer is not written
  ibv_sge s = sge(p.a, 0, 4321);
  SendWr wr = make_wr(IBV_WR_RDMA_WRITE_WITH_IMM, 1, &s);
  wr.wr.rdma.remote_addr = p.b.addr(100000);
  wr.wr.rdma.rkey = p.b.key();
  wr.imm_data = htonl(0xCAFEF00D);
  REQUIRE(post(p.a, wr) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].wr_id == 5);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(wb[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
  CHECK((wb[0].wc_flags & IBV_WC_WITH_IMM) != 0);
  CHECK(wb[0].imm_data == htonl(0xCAFEF00D));
  CHECK(wb[0].byte_len == 4321);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(100000), 4321) == 0);
  for (int i = 0; i < 16; ++i) CHECK(p.b.buf()[i] == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(wa[0].opcode == IBV_WC_RDMA_WRITE);
}

TEST_CASE("RDMA READ spanning many packets, not a multiple of the MTU", "[verbs]") {
  Pair p(63);
  const uint32_t len = 100037;  // 98 packets at 1024
  fill(p.b.buf(300000), len, 3);
  const uint64_t resp_before = p.b.qp->counters().sent_pkts;
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_READ, 1, 7, len, p.b.addr(300000), p.b.key()) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(wa[0].opcode == IBV_WC_RDMA_READ);
  CHECK(wa[0].byte_len == len);
  CHECK(std::memcmp(p.a.buf(7), p.b.buf(300000), len) == 0);
  CHECK(p.a.buf(6)[0] == 0);
  CHECK(p.a.buf(7 + len)[0] == 0);
  CHECK(p.b.qp->counters().sent_pkts - resp_before == 98);
}

TEST_CASE("Zero-length SEND, WRITE, WRITE_WITH_IMM and READ complete", "[verbs]") {
  Pair p(64);
  INFO("seed " << p.seed);
  REQUIRE(post_recv(p.b, 70, 0, 64) == 0);
  REQUIRE(post_recv(p.b, 71, 64, 64) == 0);
  SendWr send = make_wr(IBV_WR_SEND, 1, nullptr);
  REQUIRE(post(p.a, send) == 0);
  SendWr write = make_wr(IBV_WR_RDMA_WRITE, 2, nullptr);
  write.wr.rdma.remote_addr = p.b.addr(10);
  write.wr.rdma.rkey = p.b.key();
  REQUIRE(post(p.a, write) == 0);
  SendWr read = make_wr(IBV_WR_RDMA_READ, 3, nullptr);
  read.wr.rdma.remote_addr = p.b.addr(10);
  read.wr.rdma.rkey = p.b.key();
  REQUIRE(post(p.a, read) == 0);
  SendWr wimm = make_wr(IBV_WR_RDMA_WRITE_WITH_IMM, 4, nullptr);
  wimm.wr.rdma.remote_addr = p.b.addr(10);
  wimm.wr.rdma.rkey = p.b.key();
  wimm.imm_data = htonl(4);
  REQUIRE(post(p.a, wimm) == 0);
  auto wa = p.wait(p.a, 4);
  REQUIRE(wa.size() == 4);
  for (int i = 0; i < 4; ++i) {
    INFO("wr_id " << wa[size_t(i)].wr_id);
    CHECK(wa[size_t(i)].wr_id == uint64_t(i + 1));
    CHECK(wa[size_t(i)].status == IBV_WC_SUCCESS);
  }
  CHECK(wa[2].byte_len == 0);
  CHECK(wa[2].opcode == IBV_WC_RDMA_READ);
  auto wb = p.wait(p.b, 2);
  REQUIRE(wb.size() == 2);
  CHECK(wb[0].wr_id == 70);
  CHECK(wb[0].opcode == IBV_WC_RECV);
  CHECK(wb[0].byte_len == 0);
  CHECK(wb[1].wr_id == 71);
  CHECK(wb[1].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
  CHECK(wb[1].byte_len == 0);
  CHECK(wb[1].imm_data == htonl(4));
}

// IBA C9-88 (rxe check_rkey: "A zero-byte read or write op is not required
// to set an addr or rkey"): the responder must not validate them.
TEST_CASE("Zero-length RDMA with address 0 / R_Key 0 or garbage needs no valid key", "[verbs]") {
  struct Case {
    const char* what;
    ibv_wr_opcode op;
    uint64_t va;
    uint32_t rkey;
  };
  const Case cases[] = {
      {"WRITE, address 0, R_Key 0", IBV_WR_RDMA_WRITE, 0, 0},
      {"READ, address 0, R_Key 0", IBV_WR_RDMA_READ, 0, 0},
      {"WRITE_WITH_IMM, address 0, R_Key 0", IBV_WR_RDMA_WRITE_WITH_IMM, 0, 0},
      {"WRITE, garbage address and R_Key", IBV_WR_RDMA_WRITE, 0xDEADBEEF00ull, 0x12345678},
      {"READ, garbage address and R_Key", IBV_WR_RDMA_READ, 0xDEADBEEF00ull, 0x12345678},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.what) {
      Pair p(65);
      REQUIRE(post_recv(p.b, 70, 0, 64) == 0);
      SendWr wr = make_wr(c.op, 1, nullptr);
      wr.wr.rdma.remote_addr = c.va;
      wr.wr.rdma.rkey = c.rkey;
      wr.imm_data = htonl(9);
      REQUIRE(post(p.a, wr) == 0);
      auto wa = p.wait(p.a, 1);
      REQUIRE(wa.size() == 1);
      CHECK(wa[0].status == IBV_WC_SUCCESS);
      CHECK(p.a.qp->state() == IBV_QPS_RTS);
      CHECK(p.b.qp->state() == IBV_QPS_RTS);
      if (c.op == IBV_WR_RDMA_WRITE_WITH_IMM) {
        auto wb = p.wait(p.b, 1);
        REQUIRE(wb.size() == 1);
        CHECK(wb[0].status == IBV_WC_SUCCESS);
        CHECK(wb[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
        CHECK(wb[0].byte_len == 0);
      }
    }
  }
}

namespace {

// SEND, WRITE and READ of `len` bytes at path MTU `mtu`; checks the data and
// that requests / responses were cut into ceil(len / mtu) packets.
void exercise_mtu(ibv_mtu mtu, uint32_t mtu_bytes, uint16_t eth_mtu, uint64_t seed) {
  Opts oa = Pair::default_a(), ob = Pair::default_b();
  oa.mtu = ob.mtu = mtu;
  oa.bytes = ob.bytes = 4 << 20;
  Pair p(seed, oa, ob, eth_mtu);
  INFO("path MTU " << mtu_bytes << " seed " << seed);
  for (uint32_t len : {mtu_bytes, mtu_bytes + 1, 3 * mtu_bytes - 1, 7 * mtu_bytes + 5}) {
    INFO("len " << len);
    const uint32_t pkts = (len + mtu_bytes - 1) / mtu_bytes;
    fill(p.a.buf(), len, len);
    fill(p.b.buf(1 << 21), len, len + 1);
    REQUIRE(post_recv(p.b, 1, 0, len) == 0);
    uint64_t before = p.a.qp->counters().sent_pkts;
    REQUIRE(post_send(p.a, 2, 0, len) == 0);
    auto wb = p.wait(p.b, 1);
    REQUIRE(wb.size() == 1);
    CHECK(wb[0].status == IBV_WC_SUCCESS);
    CHECK(wb[0].byte_len == len);
    CHECK(std::memcmp(p.a.buf(), p.b.buf(), len) == 0);
    REQUIRE(p.wait(p.a, 1).size() == 1);
    CHECK(p.a.qp->counters().sent_pkts - before == pkts);

    before = p.a.qp->counters().sent_pkts;
    REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 3, 0, len, p.b.addr(1 << 20), p.b.key()) == 0);
    auto wa = p.wait(p.a, 1);
    REQUIRE(wa.size() == 1);
    CHECK(wa[0].status == IBV_WC_SUCCESS);
    CHECK(std::memcmp(p.a.buf(), p.b.buf(1 << 20), len) == 0);
    CHECK(p.a.qp->counters().sent_pkts - before == pkts);

    before = p.b.qp->counters().sent_pkts;
    REQUIRE(post_wr(p.a, IBV_WR_RDMA_READ, 4, 3 << 20, len, p.b.addr(1 << 21), p.b.key()) == 0);
    wa = p.wait(p.a, 1);
    REQUIRE(wa.size() == 1);
    CHECK(wa[0].status == IBV_WC_SUCCESS);
    CHECK(std::memcmp(p.a.buf(3 << 20), p.b.buf(1 << 21), len) == 0);
    CHECK(p.b.qp->counters().sent_pkts - before == pkts);
  }
  CHECK(p.fabric.wire().totals().oversize == 0);
}

}  // namespace

TEST_CASE("Every path MTU from 256 to 1024 on a 1500-byte wire", "[verbs]") {
  exercise_mtu(IBV_MTU_256, 256, 1500, 65);
  exercise_mtu(IBV_MTU_512, 512, 1500, 66);
  exercise_mtu(IBV_MTU_1024, 1024, 1500, 67);
}

TEST_CASE("Path MTU 2048 and 4096 on a 9000-byte wire", "[verbs]") {
  exercise_mtu(IBV_MTU_2048, 2048, 9000, 68);
  exercise_mtu(IBV_MTU_4096, 4096, 9000, 69);
}

TEST_CASE("A region registered under another IOVA is named by it, locally and remotely", "[verbs]") {
  Pair p(65);
  std::vector<uint8_t> mem(8192);
  const uint64_t iova = 0x7e5700000000ull;  // no mapping of this process
  int err = -1;
  auto mr = p.b.pd->reg_mr_iova(mem.data(), mem.size(), iova, kAllAccess, err);
  REQUIRE(err == 0);
  CHECK(mr->iova() == iova);
  CHECK(mr->addr() == mem.data());
  CHECK(mr->contains(iova + 100, 8092));
  CHECK_FALSE(mr->contains(reinterpret_cast<uintptr_t>(mem.data()), 1));
  // WRITE by the IOVA lands in the bytes; READ by it returns them.
  fill(p.a.buf(), 3000, 5);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 1, 0, 3000, iova + 1000, mr->rkey()) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(p.a.buf(), mem.data() + 1000, 3000) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_READ, 2, 5000, 3000, iova + 1000, mr->rkey()) == 0);
  wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(p.a.buf(5000), mem.data() + 1000, 3000) == 0);
  // A local SGE names it by the IOVA too: b SENDs from it.
  REQUIRE(post_recv(p.a, 3, 10000, 64) == 0);
  ibv_sge s{iova + 1000, 64, mr->lkey()};
  SendWr send = make_wr(IBV_WR_SEND, 4, &s);
  REQUIRE(post(p.b, send) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(std::memcmp(p.a.buf(10000), mem.data() + 1000, 64) == 0);
  // The host address is not the region's name: a remote access error.
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 5, 0, 64, reinterpret_cast<uintptr_t>(mem.data()), mr->rkey()) == 0);
  wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_REM_ACCESS_ERR);
  // An IOVA range that wraps: EINVAL.
  CHECK(p.b.pd->reg_mr_iova(mem.data(), mem.size(), ~uint64_t(0) - 100, kAllAccess, err) == nullptr);
  CHECK(err == EINVAL);
}
