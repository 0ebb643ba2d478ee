// SPDX-License-Identifier: BSD-3-Clause
// The RC QP state machine through QueuePair::modify/query: exact masks
// succeed, a missing required attribute or a bad value is EINVAL and leaves
// the QP (state and attributes) as it was.
#include <cerrno>

#include "verbs_test_util.h"

using namespace uroce;
using namespace uroce::vt;

namespace {

struct Lone {
  explicit Lone(uint16_t mtu = 1500) : fabric(31, mtu) {
    Device& da = fabric.add_device("10.0.0.1", small_device());
    remote = &fabric.add_device("10.0.0.2", small_device());
    a = make_node(da, opts);
  }
  ibv_qp_attr query() {
    ibv_qp_attr at{};
    QpInitAttr init;
    REQUIRE(a.qp->query(at, -1, init) == 0);
    return at;
  }
  sim::SimFabric fabric;
  Opts opts;
  Device* remote = nullptr;
  Node a;
};

constexpr int kRequiredBits[] = {IBV_QP_PKEY_INDEX,   IBV_QP_PORT,        IBV_QP_ACCESS_FLAGS,   IBV_QP_AV,
                                 IBV_QP_PATH_MTU,     IBV_QP_DEST_QPN,    IBV_QP_RQ_PSN,         IBV_QP_MAX_DEST_RD_ATOMIC,
                                 IBV_QP_MIN_RNR_TIMER, IBV_QP_SQ_PSN,     IBV_QP_TIMEOUT,        IBV_QP_RETRY_CNT,
                                 IBV_QP_RNR_RETRY,    IBV_QP_MAX_QP_RD_ATOMIC};

// Each required bit of `mask` left out in turn: EINVAL, state unchanged.
void each_missing_fails(QueuePair& qp, const ibv_qp_attr& a, int mask) {
  const ibv_qp_state before = qp.state();
  for (int bit : kRequiredBits) {
    if (!(mask & bit)) continue;
    INFO("without bit 0x" << std::hex << bit);
    CHECK(qp.modify(a, mask & ~bit) == EINVAL);
    CHECK(qp.state() == before);
  }
  CHECK(qp.modify(a, mask & ~IBV_QP_STATE) == EINVAL);
  CHECK(qp.state() == before);
}

}  // namespace

TEST_CASE("RESET->INIT->RTR->RTS: each missing attribute is EINVAL, exact masks succeed", "[qp-state]") {
  Lone l;
  QueuePair& qp = *l.a.qp;
  CHECK(qp.state() == IBV_QPS_RESET);
  const ibv_qp_attr init = init_attr(l.opts);
  each_missing_fails(qp, init, kRcInitMask);
  REQUIRE(qp.modify(init, kRcInitMask) == 0);
  CHECK(qp.state() == IBV_QPS_INIT);

  const ibv_qp_attr rtr = rtr_attr(l.opts, *l.remote, 0x77, 0x1234);
  each_missing_fails(qp, rtr, kRcRtrMask);
  // Skipping a state is refused too.
  CHECK(qp.modify(rts_attr(l.opts), kRcRtsMask) == EINVAL);
  CHECK(qp.state() == IBV_QPS_INIT);
  REQUIRE(qp.modify(rtr, kRcRtrMask) == 0);
  CHECK(qp.state() == IBV_QPS_RTR);

  const ibv_qp_attr rts = rts_attr(l.opts);
  each_missing_fails(qp, rts, kRcRtsMask);
  REQUIRE(qp.modify(rts, kRcRtsMask) == 0);
  CHECK(qp.state() == IBV_QPS_RTS);
}

TEST_CASE("RESET->INIT refuses port 2, pkey_index 1 and unknown access bits", "[qp-state]") {
  Lone l;
  QueuePair& qp = *l.a.qp;
  ibv_qp_attr a = init_attr(l.opts);
  a.port_num = 2;
  CHECK(qp.modify(a, kRcInitMask) == EINVAL);
  a = init_attr(l.opts);
  a.port_num = 0;
  CHECK(qp.modify(a, kRcInitMask) == EINVAL);
  a = init_attr(l.opts);
  a.pkey_index = 1;
  CHECK(qp.modify(a, kRcInitMask) == EINVAL);
  a = init_attr(l.opts);
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | (1 << 20);
  CHECK(qp.modify(a, kRcInitMask) == EINVAL);
  CHECK(qp.state() == IBV_QPS_RESET);
  REQUIRE(qp.modify(init_attr(l.opts), kRcInitMask) == 0);
}

TEST_CASE("INIT->RTR refuses a path MTU the port cannot carry and out-of-range values", "[qp-state]") {
  Lone l;
  QueuePair& qp = *l.a.qp;
  REQUIRE(qp.modify(init_attr(l.opts), kRcInitMask) == 0);
  const ibv_qp_attr good = rtr_attr(l.opts, *l.remote, 0x77, 0x1234);
  // A 1500-byte Ethernet MTU carries at most a 1024-byte path MTU.
  for (ibv_mtu m : {IBV_MTU_2048, IBV_MTU_4096, ibv_mtu(0), ibv_mtu(6)}) {
    INFO("path_mtu enum " << int(m));
    ibv_qp_attr a = good;
    a.path_mtu = m;
    CHECK(qp.modify(a, kRcRtrMask) == EINVAL);
    CHECK(qp.state() == IBV_QPS_INIT);
  }
  ibv_qp_attr a = good;
  a.min_rnr_timer = 32;
  CHECK(qp.modify(a, kRcRtrMask) == EINVAL);
  a = good;
  a.dest_qp_num = 0x1000000;
  CHECK(qp.modify(a, kRcRtrMask) == EINVAL);
  a = good;
  a.max_dest_rd_atomic = uint8_t(l.a.dev->limits().max_qp_rd_atom + 1);
  CHECK(qp.modify(a, kRcRtrMask) == EINVAL);
  a = good;
  a.ah_attr.is_global = 0;  // RoCE needs a GRH
  CHECK(qp.modify(a, kRcRtrMask) != 0);
  a = good;
  a.ah_attr.grh.sgid_index = 5;  // no such GID
  CHECK(qp.modify(a, kRcRtrMask) != 0);
  CHECK(qp.state() == IBV_QPS_INIT);
  // Nothing of the refused attempts stuck.
  ibv_qp_attr q{};
  QpInitAttr init;
  REQUIRE(qp.query(q, -1, init) == 0);
  CHECK(q.dest_qp_num != 0x1000000u);
  CHECK(q.min_rnr_timer != 32);
  for (ibv_mtu m : {IBV_MTU_256, IBV_MTU_512, IBV_MTU_1024}) {
    ibv_qp_attr ok = good;
    ok.path_mtu = m;
    // INIT -> RTR succeeds; go back to INIT for the next MTU.
    CHECK(qp.modify(ok, kRcRtrMask) == 0);
    CHECK(l.query().path_mtu == m);
    ibv_qp_attr r{};
    r.qp_state = IBV_QPS_RESET;
    REQUIRE(qp.modify(r, IBV_QP_STATE) == 0);
    REQUIRE(qp.modify(init_attr(l.opts), kRcInitMask) == 0);
  }
}

TEST_CASE("A 9000-byte Ethernet MTU allows path MTU 4096", "[qp-state]") {
  Lone l(9000);
  QueuePair& qp = *l.a.qp;
  REQUIRE(qp.modify(init_attr(l.opts), kRcInitMask) == 0);
  ibv_qp_attr a = rtr_attr(l.opts, *l.remote, 0x77, 0);
  a.path_mtu = IBV_MTU_4096;
  CHECK(qp.modify(a, kRcRtrMask) == 0);
  CHECK(l.query().path_mtu == IBV_MTU_4096);
}

TEST_CASE("RTR->RTS refuses timeout 32, retry_cnt 8, rnr_retry 8 and a wrong cur_qp_state", "[qp-state]") {
  Lone l;
  QueuePair& qp = *l.a.qp;
  REQUIRE(qp.modify(init_attr(l.opts), kRcInitMask) == 0);
  REQUIRE(qp.modify(rtr_attr(l.opts, *l.remote, 0x77, 0x1234), kRcRtrMask) == 0);
  const ibv_qp_attr good = rts_attr(l.opts);
  ibv_qp_attr a = good;
  a.sq_psn = 0x4321;
  a.timeout = 32;
  CHECK(qp.modify(a, kRcRtsMask) == EINVAL);
  a = good;
  a.sq_psn = 0x4321;
  a.retry_cnt = 8;
  CHECK(qp.modify(a, kRcRtsMask) == EINVAL);
  a = good;
  a.sq_psn = 0x4321;
  a.rnr_retry = 8;
  CHECK(qp.modify(a, kRcRtsMask) == EINVAL);
  a = good;
  a.sq_psn = 0x4321;
  a.max_rd_atomic = uint8_t(l.a.dev->limits().max_qp_rd_atom + 1);
  CHECK(qp.modify(a, kRcRtsMask) == EINVAL);
  a = good;
  a.sq_psn = 0x4321;
  a.cur_qp_state = IBV_QPS_INIT;  // it is in RTR
  CHECK(qp.modify(a, kRcRtsMask | IBV_QP_CUR_STATE) == EINVAL);
  CHECK(qp.state() == IBV_QPS_RTR);
  CHECK(l.query().sq_psn != 0x4321u);  // no partial update
  a = good;
  a.cur_qp_state = IBV_QPS_RTR;
  CHECK(qp.modify(a, kRcRtsMask | IBV_QP_CUR_STATE) == 0);
  CHECK(qp.state() == IBV_QPS_RTS);
}

TEST_CASE("query returns what modify set", "[qp-state]") {
  Lone l;
  QueuePair& qp = *l.a.qp;
  ibv_qp_attr i = init_attr(l.opts);
  i.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE;
  REQUIRE(qp.modify(i, kRcInitMask) == 0);
  ibv_qp_attr r = rtr_attr(l.opts, *l.remote, 0xABCDE, 0x123456);
  r.path_mtu = IBV_MTU_512;
  r.max_dest_rd_atomic = 5;
  r.min_rnr_timer = 17;
  REQUIRE(qp.modify(r, kRcRtrMask) == 0);
  ibv_qp_attr s = rts_attr(l.opts);
  s.sq_psn = 0xFEDCBA;
  s.timeout = 19;
  s.retry_cnt = 3;
  s.rnr_retry = 6;
  s.max_rd_atomic = 9;
  REQUIRE(qp.modify(s, kRcRtsMask) == 0);

  ibv_qp_attr q{};
  QpInitAttr init;
  REQUIRE(qp.query(q, -1, init) == 0);
  CHECK(q.qp_state == IBV_QPS_RTS);
  CHECK(q.qp_access_flags == (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE));
  CHECK(q.pkey_index == 0);
  CHECK(q.port_num == 1);
  CHECK(q.path_mtu == IBV_MTU_512);
  CHECK(q.dest_qp_num == 0xABCDEu);
  CHECK(q.rq_psn == 0x123456u);
  CHECK(q.max_dest_rd_atomic == 5);
  CHECK(q.min_rnr_timer == 17);
  CHECK(q.sq_psn == 0xFEDCBAu);
  CHECK(q.timeout == 19);
  CHECK(q.retry_cnt == 3);
  CHECK(q.rnr_retry == 6);
  CHECK(q.max_rd_atomic == 9);
  CHECK(q.ah_attr.is_global == 1);
  CHECK(std::memcmp(q.ah_attr.grh.dgid.raw, l.remote->gids()[0].bytes.data(), 16) == 0);
  CHECK(q.cap.max_send_wr >= l.opts.max_send_wr);
  CHECK(q.cap.max_recv_wr >= l.opts.max_recv_wr);
  CHECK(q.cap.max_inline_data >= l.opts.max_inline);
  CHECK(init.qp_type == IBV_QPT_RC);
  CHECK(init.send_cq == l.a.cq.get());

  // RTS -> RTS with an optional attribute.
  ibv_qp_attr m{};
  m.min_rnr_timer = 3;
  REQUIRE(qp.modify(m, IBV_QP_MIN_RNR_TIMER) == 0);
  CHECK(l.query().min_rnr_timer == 3);
  CHECK(qp.state() == IBV_QPS_RTS);
  // RTS -> RTS with an attribute that may not change there.
  m.path_mtu = IBV_MTU_256;
  CHECK(qp.modify(m, IBV_QP_PATH_MTU) == EINVAL);
  CHECK(l.query().path_mtu == IBV_MTU_512);
}
