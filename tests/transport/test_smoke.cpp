// SPDX-License-Identifier: BSD-3-Clause
#include "../common/mbuf_test_util.h"
#include "rc_pair.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/opcode.h"

using namespace uroce;
using namespace uroce::test;

TEST_CASE("RC SEND, WRITE and READ move bytes between two devices", "[smoke]") {
  RcPair p;
  for (size_t i = 0; i < 10000; ++i) p.a.buf()[i] = uint8_t(i * 13 + 7);
  REQUIRE(post_recv(p.b, 1, 0, 8192) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_SEND, 10, 0, 5000) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(wb[0].opcode == IBV_WC_RECV);
  CHECK(wb[0].byte_len == 5000);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(), 5000) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].wr_id == 10);
  CHECK(wa[0].status == IBV_WC_SUCCESS);

  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 11, 0, 9000, p.b.addr(100000), p.b.mr->rkey()) == 0);
  wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(p.a.buf(), p.b.buf() + 100000, 9000) == 0);

  REQUIRE(post_wr(p.a, IBV_WR_RDMA_READ, 12, 200000, 9000, p.b.addr(100000), p.b.mr->rkey()) == 0);
  wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(wa[0].opcode == IBV_WC_RDMA_READ);
  CHECK(std::memcmp(p.a.buf(), p.a.buf() + 200000, 9000) == 0);
}

TEST_CASE("A QPN that shares a table slot with a live QP does not reach it", "[smoke]") {
  // The engine finds QPs by the low 16 bits of the QPN; the rest must
  // still be checked: b's QPN + 0x10000 is nobody on b.
  RcPair p;
  QpOptions o;
  o.timeout = 5;
  o.retry_cnt = 1;
  Side x = make_side(*p.a.dev, 1 << 16, o);
  const uint32_t ghost = (p.b.qp->qp_num() + 0x10000) & 0xFFFFFF;
  connect(*x.qp, with_psn(o, 0xFFFFF0), *p.b.dev, ghost, 0x000100);
  std::memset(p.b.buf(), 0, 4096);
  std::memset(x.buf(), 0xAB, 4096);
  REQUIRE(post_wr(x, IBV_WR_RDMA_WRITE, 1, 0, 4096, p.b.addr(0), p.b.mr->rkey()) == 0);
  auto wx = p.wait(x, 1);
  REQUIRE(wx.size() == 1);
  CHECK(wx[0].status == IBV_WC_RETRY_EXC_ERR);
  CHECK(p.b.dev->counters().rx_unknown_qp >= 8);  // 4 packets, sent twice
  CHECK(p.b.qp->counters().rcvd_pkts == 0);
  CHECK(p.b.buf()[0] == 0);
  CHECK(p.b.qp->state() == IBV_QPS_RTS);
}

TEST_CASE("A connected QP ignores a valid request from another address than its peer's", "[smoke]") {
  // Right QPN, right PSN, right rkey, valid ICRC: only the source differs
  // (rxe's check_addr). It must not be executed, nor break the real flow.
  RcPair p;
  TestPool pool(63);
  sim::SimPort& intruder = p.fabric.wire().add_port(wire::MacAddr{{0x02, 0, 0, 0, 0, 0x99}});
  std::memset(p.b.buf(), 0, 64);
  wire::PacketFields f;
  wire::MacAddr b_mac;
  REQUIRE(p.a.dev->neighbor_mac(p.b.dev->gids()[0], b_mac));
  f.eth.dst = b_mac;
  f.eth.src = intruder.mac();
  REQUIRE(wire::IpAddr::parse("10.0.0.99", f.ip.src));
  f.ip.dst = p.b.dev->gids()[0];
  f.bth.opcode = wire::op::RC_RDMA_WRITE_ONLY;
  f.bth.dest_qp = p.b.qp->qp_num();
  f.bth.psn = 0x000100;  // b's expected PSN (RcPair)
  f.bth.ack_req = true;
  f.ext.reth_va = p.b.addr(0);
  f.ext.reth_rkey = p.b.mr->rkey();
  f.ext.reth_dma_len = 64;
  f.payload_len = 64;
  const std::vector<uint8_t> payload(64, 0xEE);
  std::vector<uint8_t> frame(512);
  wire::FrameLayout lay;
  REQUIRE(wire::build_frame(f, payload, frame, lay) == wire::BuildError::ok);
  frame.resize(lay.frame_len);
  rte_mbuf* m = mbuf_from_bytes(pool.get(), frame);
  REQUIRE(intruder.tx_burst(&m, 1) == 1);
  p.fabric.run_for(1'000'000);
  CHECK(p.b.dev->counters().rx_not_from_peer == 1);
  CHECK(p.b.buf()[0] == 0);
  CHECK(p.b.qp->counters().rcvd_pkts == 0);
  // The real peer's WRITE at the same PSN still goes through.
  std::memset(p.a.buf(), 0x11, 64);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 1, 0, 64, p.b.addr(0), p.b.mr->rkey()) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(p.b.buf()[0] == 0x11);
}
