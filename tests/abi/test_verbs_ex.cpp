// SPDX-License-Identifier: BSD-3-Clause
// The extended verbs of the drop-in libibverbs, called through verbs.h's
// inline functions as a program built with Debian's header calls them:
// ibv_create_cq_ex and its polling API, ibv_create_qp_ex and the ibv_wr_*
// post API, and asynchronous events routed to the context that owns their
// object; [abi-threads]: several threads posting to one QP and polling
// one CQ, and a thread asleep in ibv_get_cq_event. Data moves between two
// RC QPs of one device (the engine's loopback: nothing reaches the null
// port).
#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

#include "abi_test.h"

#include <arpa/inet.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using abi_test::Opened;
using abi_test::readable;
using abi_test::set_nonblocking;

constexpr int kAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

ibv_qp_init_attr_ex qp_attr(ibv_pd* pd, ibv_cq* scq, ibv_cq* rcq, ibv_qp_type type = IBV_QPT_RC) {
  ibv_qp_init_attr_ex a{};
  a.send_cq = scq;
  a.recv_cq = rcq;
  a.cap.max_send_wr = 8;
  a.cap.max_recv_wr = 8;
  a.cap.max_send_sge = 2;
  a.cap.max_recv_sge = 2;
  a.cap.max_inline_data = 64;
  a.qp_type = type;
  a.comp_mask = IBV_QP_INIT_ATTR_PD;
  a.pd = pd;
  return a;
}

// RESET -> INIT -> RTR -> RTS towards `remote` on this device's GID 1.
void connect(ibv_context* ctx, ibv_qp* qp, uint32_t remote) {
  ibv_gid gid;
  REQUIRE(ibv_query_gid(ctx, 1, 1, &gid) == 0);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = kAccess;
  REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = remote;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = gid;
  a.ah_attr.grh.sgid_index = 1;
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = 1;
  REQUIRE(ibv_modify_qp(qp, &a,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0);
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  REQUIRE(ibv_modify_qp(qp, &a,
                        IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                            IBV_QP_MAX_QP_RD_ATOMIC) == 0);
}

// Up to `n` completions within two seconds.
std::vector<ibv_wc> wait_wc(ibv_cq* cq, int n, int ms = 2000) {
  std::vector<ibv_wc> out;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (int(out.size()) < n && std::chrono::steady_clock::now() < until) {
    ibv_wc wc;
    if (ibv_poll_cq(cq, 1, &wc) == 1) out.push_back(wc);
  }
  return out;
}

void post_recv(ibv_qp* qp, uint64_t wr_id, void* addr, uint32_t len, uint32_t lkey) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(addr), len, lkey};
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = len ? 1 : 0;
  ibv_recv_wr* bad = nullptr;
  REQUIRE(ibv_post_recv(qp, &wr, &bad) == 0);
}

// Two RC QPs of one device joined to each other: `a` posts through the
// ibv_wr_* API, `b` receives on an extended CQ.
struct Pair {
  Opened o;
  ibv_pd* pd = nullptr;
  std::vector<uint8_t> abuf = std::vector<uint8_t>(8192), bbuf = std::vector<uint8_t>(8192);
  ibv_mr* amr = nullptr;
  ibv_mr* bmr = nullptr;
  ibv_cq* acq = nullptr;
  ibv_cq_ex* bcqx = nullptr;
  ibv_qp* a = nullptr;
  ibv_qp* b = nullptr;
  ibv_qp_ex* ax = nullptr;
  explicit Pair(uint64_t wc_flags = IBV_WC_STANDARD_FLAGS) {
    pd = ibv_alloc_pd(o.ctx);
    REQUIRE(pd);
    amr = ibv_reg_mr(pd, abuf.data(), abuf.size(), kAccess);
    bmr = ibv_reg_mr(pd, bbuf.data(), bbuf.size(), kAccess);
    REQUIRE(amr);
    REQUIRE(bmr);
    acq = ibv_create_cq(o.ctx, 32, nullptr, nullptr, 0);
    REQUIRE(acq);
    ibv_cq_init_attr_ex cqa{};
    cqa.cqe = 32;
    cqa.wc_flags = wc_flags;
    bcqx = ibv_create_cq_ex(o.ctx, &cqa);
    REQUIRE(bcqx);
    ibv_qp_init_attr_ex qa = qp_attr(pd, acq, acq);
    qa.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    qa.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
                        IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
                        IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
    a = ibv_create_qp_ex(o.ctx, &qa);
    REQUIRE(a);
    ax = ibv_qp_to_qp_ex(a);
    REQUIRE(ax);
    CHECK(&ax->qp_base == a);
    ibv_qp_init_attr_ex qb = qp_attr(pd, ibv_cq_ex_to_cq(bcqx), ibv_cq_ex_to_cq(bcqx));
    b = ibv_create_qp_ex(o.ctx, &qb);  // the PD alone: ibv_create_qp underneath
    REQUIRE(b);
    connect(o.ctx, a, b->qp_num);
    connect(o.ctx, b, a->qp_num);
  }
  ~Pair() {
    ibv_destroy_qp(a);
    ibv_destroy_qp(b);
    ibv_destroy_cq(acq);
    ibv_destroy_cq(ibv_cq_ex_to_cq(bcqx));
    ibv_dereg_mr(amr);
    ibv_dereg_mr(bmr);
    ibv_dealloc_pd(pd);
  }
  uint64_t baddr(size_t off = 0) { return reinterpret_cast<uintptr_t>(bbuf.data() + off); }
  uint64_t aaddr(size_t off = 0) { return reinterpret_cast<uintptr_t>(abuf.data() + off); }
  ibv_cq* bcq() { return ibv_cq_ex_to_cq(bcqx); }
  // One signalled WR built by `build` between wr_start and wr_complete;
  // its completion on a's CQ.
  template <class Build>
  ibv_wc post(uint64_t wr_id, Build&& build) {
    ibv_wr_start(ax);
    ax->wr_id = wr_id;
    ax->wr_flags = IBV_SEND_SIGNALED;
    build();
    REQUIRE(ibv_wr_complete(ax) == 0);
    auto wc = wait_wc(acq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].wr_id == wr_id);
    CHECK(wc[0].status == IBV_WC_SUCCESS);
    return wc[0];
  }
};

void fill(std::vector<uint8_t>& v, size_t off, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i) v[off + i] = uint8_t(seed + i * 7);
}

}  // namespace

TEST_CASE("ibv_create_cq_ex: refusals of what uroce's completions do not record", "[abi-ex]") {
  Opened o;
  ibv_cq_init_attr_ex a{};
  a.cqe = 8;
  for (uint64_t flag : {uint64_t(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP), uint64_t(IBV_WC_EX_WITH_CVLAN),
                        uint64_t(IBV_WC_EX_WITH_FLOW_TAG), uint64_t(IBV_WC_EX_WITH_TM_INFO),
                        uint64_t(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)}) {
    a.wc_flags = IBV_WC_STANDARD_FLAGS | flag;
    errno = 0;
    CHECK(ibv_create_cq_ex(o.ctx, &a) == nullptr);
    CHECK(errno == EOPNOTSUPP);
  }
  a.wc_flags = IBV_WC_STANDARD_FLAGS;
  a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
  a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
  errno = 0;
  CHECK(ibv_create_cq_ex(o.ctx, &a) == nullptr);
  CHECK(errno == EOPNOTSUPP);
  a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
  ibv_cq_ex* cq = ibv_create_cq_ex(o.ctx, &a);
  REQUIRE(cq);
  ibv_poll_cq_attr pa{};
  CHECK(ibv_start_poll(cq, &pa) == ENOENT);  // empty; no end_poll owed
  ibv_wc wc;
  CHECK(ibv_poll_cq(ibv_cq_ex_to_cq(cq), 1, &wc) == 0);
  CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0);
}

TEST_CASE("ibv_cq_ex: every read_* agrees with ibv_poll_cq on the same completion", "[abi-ex]") {
  Pair p;
  fill(p.abuf, 0, 300, 1);
  // Two receives take two identical SENDs with immediate: the first polled
  // by ibv_poll_cq, the second through the extended API.
  post_recv(p.b, 11, p.bbuf.data(), 1024, p.bmr->lkey);
  post_recv(p.b, 11, p.bbuf.data() + 1024, 1024, p.bmr->lkey);
  for (int i = 0; i < 2; ++i)
    p.post(20 + i, [&] {
      ibv_wr_send_imm(p.ax, htonl(0xabcd0123));
      ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(), 300);
    });
  std::vector<ibv_wc> first;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  ibv_wc wc{};
  while (ibv_poll_cq(p.bcq(), 1, &wc) == 0 && std::chrono::steady_clock::now() < until) {
  }
  REQUIRE(wc.wr_id == 11);
  REQUIRE(wc.status == IBV_WC_SUCCESS);
  ibv_poll_cq_attr pa{};
  int rc = ENOENT;
  while ((rc = ibv_start_poll(p.bcqx, &pa)) == ENOENT && std::chrono::steady_clock::now() < until) {
  }
  REQUIRE(rc == 0);
  CHECK(p.bcqx->wr_id == wc.wr_id);
  CHECK(p.bcqx->status == wc.status);
  CHECK(ibv_wc_read_opcode(p.bcqx) == wc.opcode);
  CHECK(ibv_wc_read_opcode(p.bcqx) == IBV_WC_RECV);
  CHECK(ibv_wc_read_vendor_err(p.bcqx) == wc.vendor_err);
  CHECK(ibv_wc_read_byte_len(p.bcqx) == wc.byte_len);
  CHECK(ibv_wc_read_byte_len(p.bcqx) == 300);
  CHECK(ibv_wc_read_imm_data(p.bcqx) == wc.imm_data);
  CHECK(ntohl(ibv_wc_read_imm_data(p.bcqx)) == 0xabcd0123);
  CHECK(ibv_wc_read_qp_num(p.bcqx) == wc.qp_num);
  CHECK(ibv_wc_read_qp_num(p.bcqx) == p.b->qp_num);
  CHECK(ibv_wc_read_src_qp(p.bcqx) == wc.src_qp);
  CHECK(ibv_wc_read_wc_flags(p.bcqx) == wc.wc_flags);
  CHECK((ibv_wc_read_wc_flags(p.bcqx) & IBV_WC_WITH_IMM));
  CHECK(ibv_wc_read_slid(p.bcqx) == wc.slid);
  CHECK(ibv_wc_read_sl(p.bcqx) == wc.sl);
  CHECK(ibv_wc_read_dlid_path_bits(p.bcqx) == wc.dlid_path_bits);
  CHECK(ibv_next_poll(p.bcqx) == ENOENT);
  ibv_end_poll(p.bcqx);
  CHECK(std::memcmp(p.abuf.data(), p.bbuf.data(), 300) == 0);
  CHECK(std::memcmp(p.abuf.data(), p.bbuf.data() + 1024, 300) == 0);

  // next_poll steps through several completions in one start/end.
  post_recv(p.b, 31, p.bbuf.data(), 64, p.bmr->lkey);
  post_recv(p.b, 32, p.bbuf.data(), 64, p.bmr->lkey);
  p.post(40, [&] {
    ibv_wr_send(p.ax);
    ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(), 8);
  });
  p.post(41, [&] {
    ibv_wr_send(p.ax);
    ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(), 16);
  });
  while ((rc = ibv_start_poll(p.bcqx, &pa)) == ENOENT) {
  }
  REQUIRE(rc == 0);
  CHECK(p.bcqx->wr_id == 31);
  CHECK(ibv_wc_read_byte_len(p.bcqx) == 8);
  while ((rc = ibv_next_poll(p.bcqx)) == ENOENT) {
  }
  CHECK(p.bcqx->wr_id == 32);
  CHECK(ibv_wc_read_byte_len(p.bcqx) == 16);
  CHECK((ibv_wc_read_wc_flags(p.bcqx) & IBV_WC_WITH_IMM) == 0);
  ibv_end_poll(p.bcqx);
  // A comp_mask the API does not define: EINVAL.
  pa.comp_mask = 1;
  CHECK(ibv_start_poll(p.bcqx, &pa) == EINVAL);
}

TEST_CASE("ibv_cq_ex with a completion channel", "[abi-ex]") {
  Opened o;
  ibv_comp_channel* ch = ibv_create_comp_channel(o.ctx);
  REQUIRE(ch);
  int tag = 0;
  ibv_cq_init_attr_ex a{};
  a.cqe = 8;
  a.cq_context = &tag;
  a.channel = ch;
  a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
  ibv_cq_ex* cqx = ibv_create_cq_ex(o.ctx, &a);
  REQUIRE(cqx);
  ibv_cq* cq = ibv_cq_ex_to_cq(cqx);
  CHECK(cq->channel == ch);
  CHECK(cq->cq_context == &tag);
  ibv_pd* pd = ibv_alloc_pd(o.ctx);
  REQUIRE(pd);
  std::vector<char> buf(64);
  ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(mr);
  REQUIRE(ibv_req_notify_cq(cq, 0) == 0);
  ibv_qp_init_attr_ex qa = qp_attr(pd, cq, cq);
  ibv_qp* qp = ibv_create_qp_ex(o.ctx, &qa);
  REQUIRE(qp);
  CHECK(ibv_qp_to_qp_ex(qp) == nullptr);  // made without send_ops_flags
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  REQUIRE(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
  post_recv(qp, 5, buf.data(), 64, mr->lkey);
  attr.qp_state = IBV_QPS_ERR;
  REQUIRE(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == 0);
  ibv_cq* ev_cq = nullptr;
  void* ev_ctx = nullptr;
  REQUIRE(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0);
  CHECK(ev_cq == cq);
  CHECK(ev_ctx == &tag);
  ibv_ack_cq_events(cq, 1);
  ibv_poll_cq_attr pa{};
  int rc;
  while ((rc = ibv_start_poll(cqx, &pa)) == ENOENT) {
  }
  REQUIRE(rc == 0);
  CHECK(cqx->wr_id == 5);
  CHECK(cqx->status == IBV_WC_WR_FLUSH_ERR);
  ibv_end_poll(cqx);
  CHECK(ibv_destroy_qp(qp) == 0);
  CHECK(ibv_destroy_cq(cq) == 0);
  CHECK(ibv_destroy_comp_channel(ch) == 0);
  CHECK(ibv_dereg_mr(mr) == 0);
  CHECK(ibv_dealloc_pd(pd) == 0);
}

TEST_CASE("ibv_wr_*: each operation moves its data", "[abi-ex]") {
  Pair p;
  SECTION("RDMA WRITE, one SGE and a list") {
    fill(p.abuf, 0, 2000, 3);
    p.post(1, [&] {
      ibv_wr_rdma_write(p.ax, p.bmr->rkey, p.baddr(100));
      ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(), 2000);
    });
    CHECK(std::memcmp(p.bbuf.data() + 100, p.abuf.data(), 2000) == 0);
    const ibv_sge list[2] = {{p.aaddr(10), 5, p.amr->lkey}, {p.aaddr(500), 7, p.amr->lkey}};
    p.post(2, [&] {
      ibv_wr_rdma_write(p.ax, p.bmr->rkey, p.baddr(4000));
      ibv_wr_set_sge_list(p.ax, 2, list);
    });
    CHECK(std::memcmp(p.bbuf.data() + 4000, p.abuf.data() + 10, 5) == 0);
    CHECK(std::memcmp(p.bbuf.data() + 4005, p.abuf.data() + 500, 7) == 0);
  }
  SECTION("RDMA WRITE with immediate") {
    fill(p.abuf, 0, 40, 9);
    post_recv(p.b, 77, nullptr, 0, 0);
    const ibv_wc wc = p.post(3, [&] {
      ibv_wr_rdma_write_imm(p.ax, p.bmr->rkey, p.baddr(8), htonl(0x55aa));
      ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(), 40);
    });
    CHECK(wc.opcode == IBV_WC_RDMA_WRITE);
    auto r = wait_wc(p.bcq(), 1);
    REQUIRE(r.size() == 1);
    CHECK(r[0].wr_id == 77);
    CHECK(r[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
    CHECK(ntohl(r[0].imm_data) == 0x55aa);
    CHECK(std::memcmp(p.bbuf.data() + 8, p.abuf.data(), 40) == 0);
  }
  SECTION("RDMA READ") {
    fill(p.bbuf, 200, 1500, 5);
    const ibv_wc wc = p.post(4, [&] {
      ibv_wr_rdma_read(p.ax, p.bmr->rkey, p.baddr(200));
      ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(64), 1500);
    });
    CHECK(wc.opcode == IBV_WC_RDMA_READ);
    CHECK(std::memcmp(p.abuf.data() + 64, p.bbuf.data() + 200, 1500) == 0);
  }
  SECTION("SEND, SEND with immediate, inline data and an inline list") {
    fill(p.abuf, 0, 100, 7);
    post_recv(p.b, 1, p.bbuf.data(), 256, p.bmr->lkey);
    p.post(5, [&] {
      ibv_wr_send(p.ax);
      ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(), 100);
    });
    auto r = wait_wc(p.bcq(), 1);
    REQUIRE(r.size() == 1);
    CHECK(r[0].byte_len == 100);
    CHECK(std::memcmp(p.bbuf.data(), p.abuf.data(), 100) == 0);

    // Inline: the bytes are taken at the call; the buffer is reused before
    // wr_complete.
    char text[] = "inline bytes";
    post_recv(p.b, 2, p.bbuf.data() + 1024, 256, p.bmr->lkey);
    p.post(6, [&] {
      ibv_wr_send_imm(p.ax, htonl(7));
      ibv_wr_set_inline_data(p.ax, text, sizeof text);
      std::memset(text, 'x', sizeof text - 1);
    });
    r = wait_wc(p.bcq(), 1);
    REQUIRE(r.size() == 1);
    CHECK(r[0].byte_len == sizeof "inline bytes");
    CHECK(ntohl(r[0].imm_data) == 7);
    CHECK(std::string(reinterpret_cast<char*>(p.bbuf.data() + 1024)) == "inline bytes");

    char one[] = "abc", two[] = "defgh";
    const ibv_data_buf bufs[2] = {{one, 3}, {two, 5}};
    post_recv(p.b, 3, p.bbuf.data() + 2048, 256, p.bmr->lkey);
    p.post(7, [&] {
      ibv_wr_send(p.ax);
      ibv_wr_set_inline_data_list(p.ax, 2, bufs);
    });
    r = wait_wc(p.bcq(), 1);
    REQUIRE(r.size() == 1);
    CHECK(r[0].byte_len == 8);
    CHECK(std::memcmp(p.bbuf.data() + 2048, "abcdefgh", 8) == 0);
  }
  SECTION("atomics: compare-and-swap and fetch-and-add") {
    uint64_t remote = 40;
    std::memcpy(p.bbuf.data() + 64, &remote, 8);
    const ibv_wc wc = p.post(8, [&] {
      ibv_wr_atomic_cmp_swp(p.ax, p.bmr->rkey, p.baddr(64), 40, 1000);
      ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(0), 8);
    });
    CHECK(wc.opcode == IBV_WC_COMP_SWAP);
    uint64_t v;
    std::memcpy(&v, p.abuf.data(), 8);
    CHECK(v == 40);  // the old value
    std::memcpy(&v, p.bbuf.data() + 64, 8);
    CHECK(v == 1000);
    p.post(9, [&] {
      ibv_wr_atomic_fetch_add(p.ax, p.bmr->rkey, p.baddr(64), 5);
      ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(8), 8);
    });
    std::memcpy(&v, p.abuf.data() + 8, 8);
    CHECK(v == 1000);
    std::memcpy(&v, p.bbuf.data() + 64, 8);
    CHECK(v == 1005);
  }
}

TEST_CASE("ibv_wr_*: a batch is posted whole or not at all; wr_abort posts nothing", "[abi-ex]") {
  Pair p;
  fill(p.abuf, 0, 64, 1);
  // Aborted: nothing completes, nothing is written.
  ibv_wr_start(p.ax);
  p.ax->wr_id = 1;
  p.ax->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(p.ax, p.bmr->rkey, p.baddr());
  ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(), 64);
  ibv_wr_abort(p.ax);
  CHECK(wait_wc(p.acq, 1, 300).empty());
  CHECK(p.bbuf[0] == 0);

  // A valid WR, then one with too many SGEs: EINVAL, and neither goes.
  const ibv_sge three[3] = {{p.aaddr(), 1, p.amr->lkey}, {p.aaddr(), 1, p.amr->lkey}, {p.aaddr(), 1, p.amr->lkey}};
  ibv_wr_start(p.ax);
  p.ax->wr_id = 2;
  ibv_wr_rdma_write(p.ax, p.bmr->rkey, p.baddr());
  ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(), 64);
  ibv_wr_rdma_write(p.ax, p.bmr->rkey, p.baddr(100));
  ibv_wr_set_sge_list(p.ax, 3, three);
  CHECK(ibv_wr_complete(p.ax) == EINVAL);
  // The same with an error only the QP's own checks see (an atomic's SGE
  // must be 8 bytes): the valid WR before it is not posted either.
  ibv_wr_start(p.ax);
  p.ax->wr_id = 2;
  p.ax->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(p.ax, p.bmr->rkey, p.baddr());
  ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(), 64);
  ibv_wr_atomic_fetch_add(p.ax, p.bmr->rkey, p.baddr(512), 1);
  ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(), 4);
  CHECK(ibv_wr_complete(p.ax) == EINVAL);
  // Inline data longer than max_inline_data: EINVAL.
  std::vector<char> big(4096, 'z');
  ibv_wr_start(p.ax);
  ibv_wr_send(p.ax);
  ibv_wr_set_inline_data(p.ax, big.data(), big.size());
  CHECK(ibv_wr_complete(p.ax) == EINVAL);
  // More WRs than the send queue holds: ENOMEM, none posted.
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  REQUIRE(ibv_query_qp(p.a, &qa, IBV_QP_CAP, &qi) == 0);
  ibv_wr_start(p.ax);
  for (uint32_t i = 0; i <= qi.cap.max_send_wr; ++i) {
    ibv_wr_rdma_write(p.ax, p.bmr->rkey, p.baddr());
    ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(), 64);
  }
  CHECK(ibv_wr_complete(p.ax) == ENOMEM);
  CHECK(wait_wc(p.acq, 1, 300).empty());
  CHECK(p.bbuf[0] == 0);

  // The queue still works, and a batch of two goes in one wr_complete.
  ibv_wr_start(p.ax);
  p.ax->wr_id = 3;
  p.ax->wr_flags = 0;
  ibv_wr_rdma_write(p.ax, p.bmr->rkey, p.baddr());
  ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(), 32);
  p.ax->wr_id = 4;
  p.ax->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(p.ax, p.bmr->rkey, p.baddr(32));
  ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(32), 32);
  REQUIRE(ibv_wr_complete(p.ax) == 0);
  auto wc = wait_wc(p.acq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].wr_id == 4);  // only the signalled one completes
  CHECK(std::memcmp(p.bbuf.data(), p.abuf.data(), 64) == 0);

  // A receive posted by the thread that is building a batch (as providers
  // allow: their receive side does not wait for the send side's batch).
  ibv_wr_start(p.ax);
  p.ax->wr_id = 5;
  ibv_wr_rdma_write(p.ax, p.bmr->rkey, p.baddr(64));
  ibv_wr_set_sge(p.ax, p.amr->lkey, p.aaddr(), 8);
  post_recv(p.a, 6, p.abuf.data() + 4096, 64, p.amr->lkey);
  REQUIRE(ibv_wr_complete(p.ax) == 0);
  wc = wait_wc(p.acq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].wr_id == 5);
}

// abi-daemon: also run through uroced (tests/daemon, the shim case).
TEST_CASE("ibv_wr_* on UD: ibv_wr_set_ud_addr names the destination", "[abi-ex][abi-daemon]") {
  Opened o;
  ibv_pd* pd = ibv_alloc_pd(o.ctx);
  REQUIRE(pd);
  std::vector<uint8_t> buf(4096);
  ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(mr);
  ibv_cq* cq = ibv_create_cq(o.ctx, 16, nullptr, nullptr, 0);
  REQUIRE(cq);
  ibv_qp_init_attr_ex qa = qp_attr(pd, cq, cq, IBV_QPT_UD);
  qa.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  qa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
  ibv_qp* a = ibv_create_qp_ex(o.ctx, &qa);
  REQUIRE(a);
  ibv_qp_init_attr_ex qb = qp_attr(pd, cq, cq, IBV_QPT_UD);
  ibv_qp* b = ibv_create_qp_ex(o.ctx, &qb);
  REQUIRE(b);
  constexpr uint32_t kQkey = 0x11111111;
  for (ibv_qp* q : {a, b}) {
    ibv_qp_attr at{};
    at.qp_state = IBV_QPS_INIT;
    at.port_num = 1;
    at.qkey = kQkey;
    REQUIRE(ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) == 0);
    at = {};
    at.qp_state = IBV_QPS_RTR;
    REQUIRE(ibv_modify_qp(q, &at, IBV_QP_STATE) == 0);
    at.qp_state = IBV_QPS_RTS;
    REQUIRE(ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0);
  }
  ibv_ah_attr ah_attr{};
  ah_attr.is_global = 1;
  REQUIRE(ibv_query_gid(o.ctx, 1, 1, &ah_attr.grh.dgid) == 0);
  ah_attr.grh.sgid_index = 1;
  ah_attr.grh.hop_limit = 64;
  ah_attr.port_num = 1;
  ibv_ah* ah = ibv_create_ah(pd, &ah_attr);
  REQUIRE(ah);
  post_recv(b, 9, buf.data() + 1024, 40 + 256, mr->lkey);
  const char text[] = "datagram";
  std::memcpy(buf.data(), text, sizeof text);
  ibv_qp_ex* ax = ibv_qp_to_qp_ex(a);
  REQUIRE(ax);
  ibv_wr_start(ax);
  ax->wr_id = 3;
  ax->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_send_imm(ax, htonl(99));
  ibv_wr_set_ud_addr(ax, ah, b->qp_num, kQkey);
  ibv_wr_set_sge(ax, mr->lkey, reinterpret_cast<uintptr_t>(buf.data()), sizeof text);
  REQUIRE(ibv_wr_complete(ax) == 0);
  auto wc = wait_wc(cq, 2);
  REQUIRE(wc.size() == 2);
  const ibv_wc& recv = wc[0].wr_id == 9 ? wc[0] : wc[1];
  const ibv_wc& send = wc[0].wr_id == 9 ? wc[1] : wc[0];
  CHECK(send.wr_id == 3);
  CHECK(send.status == IBV_WC_SUCCESS);
  CHECK(recv.status == IBV_WC_SUCCESS);
  CHECK(recv.byte_len == 40 + sizeof text);
  CHECK(recv.src_qp == a->qp_num);
  CHECK(ntohl(recv.imm_data) == 99);
  CHECK(std::memcmp(buf.data() + 1024 + 40, text, sizeof text) == 0);
  // A datagram larger than the port's MTU is refused at wr_complete.
  ibv_port_attr pa{};
  REQUIRE(ibv_query_port(o.ctx, 1, &pa) == 0);
  ibv_wr_start(ax);
  ibv_wr_send(ax);
  ibv_wr_set_ud_addr(ax, ah, b->qp_num, kQkey);
  ibv_wr_set_sge(ax, mr->lkey, reinterpret_cast<uintptr_t>(buf.data()), (128u << pa.active_mtu) + 1);
  CHECK(ibv_wr_complete(ax) == EINVAL);
  ibv_wr_start(ax);
  ibv_wr_send(ax);
  ibv_wr_set_ud_addr(ax, ah, b->qp_num, kQkey);
  ibv_wr_set_sge(ax, mr->lkey, reinterpret_cast<uintptr_t>(buf.data()), 128u << pa.active_mtu);
  REQUIRE(ibv_wr_complete(ax) == 0);
  wc = wait_wc(cq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_SUCCESS);  // sent; no receive waits for it at b
  // Without an address a UD SEND is refused at wr_complete.
  ibv_wr_start(ax);
  ibv_wr_send(ax);
  ibv_wr_set_sge(ax, mr->lkey, reinterpret_cast<uintptr_t>(buf.data()), 8);
  CHECK(ibv_wr_complete(ax) == EINVAL);
  CHECK(ibv_destroy_ah(ah) == 0);
  CHECK(ibv_destroy_qp(a) == 0);
  CHECK(ibv_destroy_qp(b) == 0);
  CHECK(ibv_destroy_cq(cq) == 0);
  CHECK(ibv_dereg_mr(mr) == 0);
  CHECK(ibv_dealloc_pd(pd) == 0);
}

TEST_CASE("ibv_create_qp_ex: operations and attributes uroce does not offer are refused", "[abi-ex]") {
  Opened o;
  ibv_pd* pd = ibv_alloc_pd(o.ctx);
  REQUIRE(pd);
  ibv_cq* cq = ibv_create_cq(o.ctx, 8, nullptr, nullptr, 0);
  REQUIRE(cq);
  for (uint64_t op : {uint64_t(IBV_QP_EX_WITH_TSO), uint64_t(IBV_QP_EX_WITH_ATOMIC_WRITE)}) {
    ibv_qp_init_attr_ex a = qp_attr(pd, cq, cq);
    a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    a.send_ops_flags = IBV_QP_EX_WITH_SEND | op;
    errno = 0;
    CHECK(ibv_create_qp_ex(o.ctx, &a) == nullptr);
    CHECK(errno == EOPNOTSUPP);
  }
  ibv_qp_init_attr_ex a = qp_attr(pd, cq, cq);
  a.comp_mask |= IBV_QP_INIT_ATTR_XRCD;
  errno = 0;
  CHECK(ibv_create_qp_ex(o.ctx, &a) == nullptr);
  CHECK(errno == EOPNOTSUPP);
  a = qp_attr(pd, cq, cq, IBV_QPT_XRC_SEND);
  a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  a.send_ops_flags = IBV_QP_EX_WITH_SEND;
  errno = 0;
  CHECK(ibv_create_qp_ex(o.ctx, &a) == nullptr);
  CHECK(errno == EOPNOTSUPP);
  a = qp_attr(pd, cq, cq);
  a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
  a.create_flags = IBV_QP_CREATE_SCATTER_FCS;
  errno = 0;
  CHECK(ibv_create_qp_ex(o.ctx, &a) == nullptr);
  CHECK(errno == EOPNOTSUPP);
  CHECK(ibv_destroy_cq(cq) == 0);
  CHECK(ibv_dealloc_pd(pd) == 0);
}

namespace {

// An RC QP of `ctx` on an SRQ, moved to the error state: the device
// raises "last WQE reached" for it.
struct ErrorQp {
  ibv_pd* pd;
  ibv_cq* cq;
  ibv_srq* srq;
  ibv_qp* qp;
  explicit ErrorQp(ibv_context* ctx) {
    pd = ibv_alloc_pd(ctx);
    REQUIRE(pd);
    cq = ibv_create_cq(ctx, 8, nullptr, nullptr, 0);
    REQUIRE(cq);
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 4;
    sa.attr.max_sge = 1;
    srq = ibv_create_srq(pd, &sa);
    REQUIRE(srq);
    ibv_qp_init_attr init{};
    init.send_cq = cq;
    init.recv_cq = cq;
    init.srq = srq;
    init.cap.max_send_wr = 4;
    init.cap.max_send_sge = 1;
    init.qp_type = IBV_QPT_RC;
    qp = ibv_create_qp(pd, &init);
    REQUIRE(qp);
  }
  void fail() {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
    a.qp_state = IBV_QPS_ERR;
    REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
  }
  void destroy() {
    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(ibv_destroy_srq(srq) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
    CHECK(ibv_dealloc_pd(pd) == 0);
  }
};

}  // namespace

TEST_CASE("asynchronous events go to the context that owns the object", "[abi-ex]") {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  REQUIRE(n == 1);
  ibv_context* a = ibv_open_device(list[0]);
  ibv_context* b = ibv_open_device(list[0]);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->async_fd != b->async_fd);
  set_nonblocking(a->async_fd, true);
  set_nonblocking(b->async_fd, true);

  ErrorQp qb(b);
  qb.fail();
  REQUIRE(readable(b->async_fd, 5000));
  CHECK_FALSE(readable(a->async_fd, 200));
  ibv_async_event ev{};
  errno = 0;
  CHECK(ibv_get_async_event(a, &ev) == -1);
  CHECK(errno == EAGAIN);
  REQUIRE(ibv_get_async_event(b, &ev) == 0);
  CHECK(ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED);
  CHECK(ev.element.qp == qb.qp);
  ibv_ack_async_event(&ev);
  CHECK_FALSE(readable(b->async_fd, 0));

  ErrorQp qa(a);
  qa.fail();
  REQUIRE(readable(a->async_fd, 5000));
  CHECK_FALSE(readable(b->async_fd, 200));
  REQUIRE(ibv_get_async_event(a, &ev) == 0);
  CHECK(ev.element.qp == qa.qp);
  ibv_ack_async_event(&ev);

  // An event never taken is withdrawn when its QP goes: the destroy does
  // not wait for it, and the descriptor stops being readable.
  ErrorQp qb2(b);
  qb2.fail();
  REQUIRE(readable(b->async_fd, 5000));
  qb2.destroy();
  CHECK_FALSE(readable(b->async_fd, 0));
  errno = 0;
  CHECK(ibv_get_async_event(b, &ev) == -1);
  CHECK(errno == EAGAIN);

  qa.destroy();
  qb.destroy();
  CHECK(ibv_close_device(a) == 0);
  CHECK(ibv_close_device(b) == 0);
  ibv_free_device_list(list);
}

namespace {

ibv_qp* mw_qp(ibv_context* ctx, ibv_pd* pd, ibv_cq* cq) {
  ibv_qp_init_attr_ex a = qp_attr(pd, cq, cq);
  a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_BIND_MW |
                     IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV;
  errno = 0;
  ibv_qp* qp = ibv_create_qp_ex(ctx, &a);
  INFO("errno " << errno);
  REQUIRE(qp);
  return qp;
}

// Both QPs back to RESET and connected to each other again.
void reconnect(ibv_context* ctx, ibv_qp* a, ibv_qp* b) {
  ibv_qp_attr r{};
  r.qp_state = IBV_QPS_RESET;
  REQUIRE(ibv_modify_qp(a, &r, IBV_QP_STATE) == 0);
  REQUIRE(ibv_modify_qp(b, &r, IBV_QP_STATE) == 0);
  connect(ctx, a, b->qp_num);
  connect(ctx, b, a->qp_num);
}

ibv_wc one_wc(ibv_cq* cq) {
  auto wc = wait_wc(cq, 1);
  REQUIRE(wc.size() == 1);
  return wc[0];
}

// One signalled RDMA WRITE (or READ) of len bytes between `from` (in mr)
// and `to` (under rkey), and its completion.
ibv_wc write_via(ibv_qp* qp, ibv_cq* cq, ibv_mr* mr, void* from, uint64_t to, uint32_t rkey, uint32_t len,
                 ibv_wr_opcode op = IBV_WR_RDMA_WRITE) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(from), len, mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 77;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = to;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  REQUIRE(ibv_post_send(qp, &wr, &bad) == 0);
  return one_wc(cq);
}

}  // namespace

// abi-daemon: also run through uroced (tests/daemon, the shim case).
TEST_CASE("ibv_reg_mr_iova2: work requests and peers name a region by its IOVA", "[abi-ex][abi-daemon]") {
  Opened o;
  ibv_pd* pd = ibv_alloc_pd(o.ctx);
  REQUIRE(pd);
  std::vector<uint8_t> abuf(8192), bbuf(8192, 0);
  fill(abuf, 0, abuf.size(), 7);
  // Addresses this process has no mapping at: only the regions give them meaning.
  const uint64_t a_iova = 0x7e5700100000ull, b_iova = 0x7e5700000000ull;
  ibv_mr* amr = ibv_reg_mr_iova2(pd, abuf.data(), abuf.size(), a_iova, kAccess);
  ibv_mr* bmr = ibv_reg_mr_iova2(pd, bbuf.data(), bbuf.size(), b_iova, kAccess);
  REQUIRE(amr);
  REQUIRE(bmr);
  CHECK(bmr->addr == bbuf.data());
  CHECK(bmr->length == bbuf.size());
  ibv_cq* acq = ibv_create_cq(o.ctx, 16, nullptr, nullptr, 0);
  ibv_cq* bcq = ibv_create_cq(o.ctx, 16, nullptr, nullptr, 0);
  REQUIRE(acq);
  REQUIRE(bcq);
  ibv_qp_init_attr_ex aa = qp_attr(pd, acq, acq), ba = qp_attr(pd, bcq, bcq);
  ibv_qp* a = ibv_create_qp_ex(o.ctx, &aa);
  ibv_qp* b = ibv_create_qp_ex(o.ctx, &ba);
  REQUIRE(a);
  REQUIRE(b);
  connect(o.ctx, a, b->qp_num);
  connect(o.ctx, b, a->qp_num);

  // The local SGE and the remote address both in IOVA terms.
  ibv_wc wc = write_via(a, acq, amr, reinterpret_cast<void*>(a_iova + 100), b_iova + 1000, bmr->rkey, 3000);
  CHECK(wc.status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(bbuf.data() + 1000, abuf.data() + 100, 3000) == 0);
  CHECK(bbuf[999] == 0);
  CHECK(bbuf[4000] == 0);

  bbuf[1000] ^= 0xFF;
  wc = write_via(a, acq, amr, reinterpret_cast<void*>(a_iova + 5000), b_iova + 1000, bmr->rkey, 3000,
                 IBV_WR_RDMA_READ);
  CHECK(wc.status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(abuf.data() + 5000, bbuf.data() + 1000, 3000) == 0);

  // The buffer's own address is not inside the region any more.
  wc = write_via(a, acq, amr, reinterpret_cast<void*>(a_iova), reinterpret_cast<uintptr_t>(bbuf.data()), bmr->rkey,
                 64);
  CHECK(wc.status == IBV_WC_REM_ACCESS_ERR);

  errno = 0;
  CHECK(ibv_reg_mr_iova2(pd, abuf.data(), abuf.size(), ~uint64_t(0) - 100, kAccess) == nullptr);
  CHECK(errno == EINVAL);
  CHECK(ibv_destroy_qp(a) == 0);
  CHECK(ibv_destroy_qp(b) == 0);
  CHECK(ibv_dereg_mr(amr) == 0);
  CHECK(ibv_dereg_mr(bmr) == 0);
  CHECK(ibv_destroy_cq(acq) == 0);
  CHECK(ibv_destroy_cq(bcq) == 0);
  CHECK(ibv_dealloc_pd(pd) == 0);
}

// abi-daemon: also run through uroced (tests/daemon, the shim case).
TEST_CASE("memory windows: ibv_alloc_mw, ibv_bind_mw, IBV_WR_BIND_MW, invalidation, ibv_wr_*", "[abi-ex][abi-daemon]") {
  Opened o;
  ibv_device_attr da;
  REQUIRE(ibv_query_device(o.ctx, &da) == 0);
  CHECK((da.device_cap_flags & IBV_DEVICE_MEM_WINDOW) != 0);
  CHECK((da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) != 0);
  CHECK(da.max_mw > 0);
  ibv_pd* pd = ibv_alloc_pd(o.ctx);
  REQUIRE(pd);
  std::vector<uint8_t> abuf(8192, 0x3C), bbuf(16384, 0);
  ibv_mr* amr = ibv_reg_mr(pd, abuf.data(), abuf.size(), kAccess);
  ibv_mr* bmr = ibv_reg_mr(pd, bbuf.data(), bbuf.size(), kAccess | IBV_ACCESS_MW_BIND);
  REQUIRE(amr);
  REQUIRE(bmr);
  ibv_cq* acq = ibv_create_cq(o.ctx, 32, nullptr, nullptr, 0);
  ibv_cq* bcq = ibv_create_cq(o.ctx, 32, nullptr, nullptr, 0);
  REQUIRE(acq);
  REQUIRE(bcq);
  ibv_qp* a = mw_qp(o.ctx, pd, acq);
  ibv_qp* b = mw_qp(o.ctx, pd, bcq);
  connect(o.ctx, a, b->qp_num);
  connect(o.ctx, b, a->qp_num);
  const uint64_t base = reinterpret_cast<uintptr_t>(bbuf.data());

  // Type 1, bound by the bind verb: a new rkey, a BIND_MW completion.
  ibv_mw* mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
  REQUIRE(mw1);
  CHECK(mw1->type == IBV_MW_TYPE_1);
  CHECK(mw1->pd == pd);
  const uint32_t k0 = mw1->rkey;
  ibv_mw_bind bind{};
  bind.wr_id = 1;
  bind.send_flags = IBV_SEND_SIGNALED;
  bind.bind_info.mr = bmr;
  bind.bind_info.addr = base;
  bind.bind_info.length = 4096;
  bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
  REQUIRE(ibv_bind_mw(b, mw1, &bind) == 0);
  CHECK(mw1->rkey == ibv_inc_rkey(k0));
  ibv_wc wc = one_wc(bcq);
  CHECK(wc.status == IBV_WC_SUCCESS);
  CHECK(wc.opcode == IBV_WC_BIND_MW);
  CHECK(write_via(a, acq, amr, abuf.data(), base + 100, mw1->rkey, 64).status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(bbuf.data() + 100, abuf.data(), 64) == 0);

  // Type 2, bound by IBV_WR_BIND_MW through ibv_post_send, then
  // invalidated by the peer's SEND with invalidate (ibv_wr_send_inv).
  ibv_mw* mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  REQUIRE(mw2);
  CHECK(ibv_bind_mw(b, mw2, &bind) == EINVAL);  // the bind verb is for type 1
  const uint32_t k2 = ibv_inc_rkey(mw2->rkey);
  ibv_send_wr bw{};
  bw.wr_id = 2;
  bw.opcode = IBV_WR_BIND_MW;
  bw.send_flags = IBV_SEND_SIGNALED;
  bw.bind_mw.mw = mw2;
  bw.bind_mw.rkey = k2;
  bw.bind_mw.bind_info = bind.bind_info;
  bw.bind_mw.bind_info.addr = base + 4096;
  ibv_send_wr* bad = nullptr;
  REQUIRE(ibv_post_send(b, &bw, &bad) == 0);
  wc = one_wc(bcq);
  CHECK(wc.status == IBV_WC_SUCCESS);
  CHECK(wc.opcode == IBV_WC_BIND_MW);
  CHECK(write_via(a, acq, amr, abuf.data(), base + 4096, k2, 64).status == IBV_WC_SUCCESS);
  post_recv(b, 3, bbuf.data() + 12288, 256, bmr->lkey);
  ibv_qp_ex* ax = ibv_qp_to_qp_ex(a);
  ibv_wr_start(ax);
  ax->wr_id = 4;
  ax->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_send_inv(ax, k2);
  ibv_wr_set_sge(ax, amr->lkey, reinterpret_cast<uintptr_t>(abuf.data()), 32);
  REQUIRE(ibv_wr_complete(ax) == 0);
  CHECK(one_wc(acq).status == IBV_WC_SUCCESS);
  wc = one_wc(bcq);
  CHECK(wc.status == IBV_WC_SUCCESS);
  CHECK(wc.opcode == IBV_WC_RECV);
  CHECK((wc.wc_flags & IBV_WC_WITH_INV) != 0);
  CHECK(wc.invalidated_rkey == k2);

  // Another type 2 window bound with ibv_wr_bind_mw and invalidated by
  // ibv_wr_local_inv, in one batch.
  ibv_mw* mw3 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  REQUIRE(mw3);
  const uint32_t k3 = ibv_inc_rkey(mw3->rkey);
  ibv_qp_ex* bx = ibv_qp_to_qp_ex(b);
  ibv_wr_start(bx);
  bx->wr_id = 5;
  bx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_bind_mw(bx, mw3, k3, &bw.bind_mw.bind_info);
  bx->wr_id = 6;
  ibv_wr_local_inv(bx, k3);
  REQUIRE(ibv_wr_complete(bx) == 0);
  auto two = wait_wc(bcq, 2);
  REQUIRE(two.size() == 2);
  CHECK(two[0].wr_id == 5);
  CHECK(two[0].opcode == IBV_WC_BIND_MW);
  CHECK(two[0].status == IBV_WC_SUCCESS);
  CHECK(two[1].wr_id == 6);
  CHECK(two[1].opcode == IBV_WC_LOCAL_INV);
  CHECK(two[1].status == IBV_WC_SUCCESS);

  // The region cannot go while windows are bound to it (mw1 is).
  CHECK(ibv_dereg_mr(bmr) == EINVAL);
  // A key invalidated by ibv_wr_send_inv: the peer's WRITE through it is a
  // remote access error, and not one byte lands.
  std::fill(abuf.begin(), abuf.end(), uint8_t(0x77));
  CHECK(write_via(a, acq, amr, abuf.data(), base + 4096, k2, 64).status == IBV_WC_REM_ACCESS_ERR);
  CHECK(bbuf[4096] == 0x3C);
  CHECK(bbuf[4096 + 63] == 0x3C);
  // The same for the key ibv_wr_local_inv invalidated, on the pair made anew
  // (the access error took both QPs to ERR).
  reconnect(o.ctx, a, b);
  CHECK(write_via(a, acq, amr, abuf.data(), base + 4096, k3, 64).status == IBV_WC_REM_ACCESS_ERR);
  CHECK(bbuf[4096] == 0x3C);
  // SEND with invalidate naming an ordinary region's key: the sender's WQE
  // fails (the responder NAKs it as an invalid request), and so does the
  // receive it took.
  reconnect(o.ctx, a, b);
  post_recv(b, 7, bbuf.data() + 12288, 256, bmr->lkey);
  ibv_wr_start(ax);
  ax->wr_id = 8;
  ax->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_send_inv(ax, amr->rkey);
  ibv_wr_set_sge(ax, amr->lkey, reinterpret_cast<uintptr_t>(abuf.data()), 32);
  REQUIRE(ibv_wr_complete(ax) == 0);
  wc = one_wc(acq);
  CHECK(wc.wr_id == 8);
  CHECK(wc.status == IBV_WC_REM_INV_REQ_ERR);
  wc = one_wc(bcq);
  CHECK(wc.wr_id == 7);
  CHECK(wc.status == IBV_WC_REM_INV_REQ_ERR);
  CHECK(bbuf[12288] == 0x3C);  // what the SEND before it left there
  // amr was not invalidated: a's own WRITE through it still works on a new pair.
  reconnect(o.ctx, a, b);
  CHECK(write_via(b, bcq, bmr, bbuf.data(), reinterpret_cast<uintptr_t>(abuf.data()), amr->rkey, 16).status ==
        IBV_WC_SUCCESS);
  CHECK(std::memcmp(abuf.data(), bbuf.data(), 16) == 0);

  CHECK(ibv_dealloc_mw(mw1) == 0);
  CHECK(ibv_dealloc_mw(mw2) == 0);
  CHECK(ibv_dealloc_mw(mw3) == 0);
  CHECK(ibv_destroy_qp(a) == 0);
  CHECK(ibv_destroy_qp(b) == 0);
  CHECK(ibv_destroy_cq(acq) == 0);
  CHECK(ibv_destroy_cq(bcq) == 0);
  CHECK(ibv_dereg_mr(amr) == 0);
  CHECK(ibv_dereg_mr(bmr) == 0);
  CHECK(ibv_dealloc_pd(pd) == 0);
}

// libibverbs promises that verbs objects may be used from several threads
// at once: posts to one QP and polls of one CQ from many threads must lose,
// duplicate or mix up nothing (the drop-in's per-QP and per-CQ locks, and
// callers that drive the engine while other callers do the same).
namespace {

constexpr int kThreadMsg = 64;

// Posts `n` signalled WRs from one thread: RDMA WRITEs into its own slots
// of `dst`, or SENDs; a full send queue (ENOMEM) is retried.
void post_many(ibv_qp* qp, ibv_mr* src, uint64_t dst, uint32_t rkey, int thread, int n, bool send,
               std::atomic<int>& errors) {
  for (int i = 0; i < n; ++i) {
    const size_t slot = size_t(thread) * n + i;
    ibv_sge sge{reinterpret_cast<uintptr_t>(src->addr) + slot * kThreadMsg, kThreadMsg, src->lkey};
    ibv_send_wr wr{};
    wr.wr_id = (uint64_t(thread) << 32) | uint32_t(i);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = dst + slot * kThreadMsg;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    int rc;
    while ((rc = ibv_post_send(qp, &wr, &bad)) == ENOMEM) std::this_thread::yield();
    if (rc != 0) {
      ++errors;
      return;
    }
  }
}

// Posts `n` receives of one message each into slots `first`.. of `mr`.
void post_recvs(ibv_qp* qp, ibv_mr* mr, size_t first, int n, std::atomic<int>& errors) {
  for (int i = 0; i < n; ++i) {
    const size_t slot = first + i;
    ibv_sge sge{reinterpret_cast<uintptr_t>(mr->addr) + slot * kThreadMsg, kThreadMsg, mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    int rc;
    while ((rc = ibv_post_recv(qp, &wr, &bad)) == ENOMEM) std::this_thread::yield();
    if (rc != 0) {
      ++errors;
      return;
    }
  }
}

// Polls `cq` into `out` until `remaining` reaches zero (shared by the
// threads polling the same CQ) or the deadline passes.
void poll_until(ibv_cq* cq, std::atomic<int>& remaining, std::vector<ibv_wc>& out,
                std::chrono::steady_clock::time_point until) {
  ibv_wc wc[16];
  while (remaining.load() > 0 && std::chrono::steady_clock::now() < until) {
    const int n = ibv_poll_cq(cq, 16, wc);
    if (n < 0) return;
    out.insert(out.end(), wc, wc + n);
    remaining -= n;
  }
}

}  // namespace

TEST_CASE("threads: four threads post to one QP, two poll its CQ, two post receives", "[abi-threads]") {
  constexpr int kPerThread = 1500;
  constexpr int kWriters = 2, kSenders = 2, kMsgs = (kWriters + kSenders) * kPerThread;
  Opened o;
  ibv_pd* pd = ibv_alloc_pd(o.ctx);
  REQUIRE(pd);
  std::vector<uint8_t> src(size_t(kMsgs) * kThreadMsg), dst(src.size()), rbuf(src.size());
  // Each slot starts with its own number, so a received payload names the
  // slot it was sent from.
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i * 131 + (i >> 6));
  for (uint32_t slot = 0; slot < uint32_t(kMsgs); ++slot) std::memcpy(src.data() + size_t(slot) * kThreadMsg, &slot, 4);
  ibv_mr* smr = ibv_reg_mr(pd, src.data(), src.size(), kAccess);
  ibv_mr* dmr = ibv_reg_mr(pd, dst.data(), dst.size(), kAccess);
  ibv_mr* rmr = ibv_reg_mr(pd, rbuf.data(), rbuf.size(), kAccess);
  REQUIRE(smr);
  REQUIRE(dmr);
  REQUIRE(rmr);
  ibv_cq* scq = ibv_create_cq(o.ctx, 512, nullptr, nullptr, 0);
  ibv_cq* rcq = ibv_create_cq(o.ctx, 512, nullptr, nullptr, 0);
  REQUIRE(scq);
  REQUIRE(rcq);
  ibv_qp_init_attr_ex qa = qp_attr(pd, scq, scq);
  qa.cap.max_send_wr = 128;
  qa.cap.max_recv_wr = 128;
  ibv_qp* a = ibv_create_qp_ex(o.ctx, &qa);
  qa = qp_attr(pd, rcq, rcq);
  qa.cap.max_recv_wr = 128;
  ibv_qp* b = ibv_create_qp_ex(o.ctx, &qa);
  REQUIRE(a);
  REQUIRE(b);
  connect(o.ctx, a, b->qp_num);
  connect(o.ctx, b, a->qp_num);

  std::atomic<int> errors{0}, send_left{kMsgs}, recv_left{kSenders * kPerThread};
  std::vector<ibv_wc> polled[2], received;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters + kSenders; ++t)
    threads.emplace_back(post_many, a, smr, reinterpret_cast<uintptr_t>(dst.data()), dmr->rkey, t, kPerThread,
                         t >= kWriters, std::ref(errors));
  for (int t = 0; t < kSenders; ++t)
    threads.emplace_back(post_recvs, b, rmr, size_t(t) * kPerThread, kPerThread, std::ref(errors));
  for (auto& out : polled) threads.emplace_back(poll_until, scq, std::ref(send_left), std::ref(out), until);
  threads.emplace_back(poll_until, rcq, std::ref(recv_left), std::ref(received), until);
  for (auto& t : threads) t.join();

  REQUIRE(errors == 0);
  // Every send-side WR completed exactly once, successfully, whichever
  // thread polled it.
  std::vector<int> seen(kMsgs, 0);
  for (const auto& out : polled)
    for (const ibv_wc& wc : out) {
      CHECK(wc.status == IBV_WC_SUCCESS);
      const uint64_t t = wc.wr_id >> 32, i = wc.wr_id & 0xffffffffu;
      REQUIRE(t < uint64_t(kWriters + kSenders));
      REQUIRE(i < uint64_t(kPerThread));
      ++seen[t * kPerThread + i];
      CHECK(wc.opcode == (t >= uint64_t(kWriters) ? IBV_WC_SEND : IBV_WC_RDMA_WRITE));
    }
  CHECK(std::count(seen.begin(), seen.end(), 1) == kMsgs);
  // The writers' slots hold their source bytes.
  const size_t wbytes = size_t(kWriters) * kPerThread * kThreadMsg;
  CHECK(std::memcmp(dst.data(), src.data(), wbytes) == 0);
  // Each SEND arrived once: every receive completed with 64 bytes, and the
  // received payloads are the senders' slots, each once.
  REQUIRE(received.size() == size_t(kSenders) * kPerThread);
  std::vector<int> got(size_t(kSenders) * kPerThread, 0);
  for (const ibv_wc& wc : received) {
    CHECK(wc.status == IBV_WC_SUCCESS);
    CHECK(wc.byte_len == uint32_t(kThreadMsg));
    REQUIRE(wc.wr_id < got.size());
    const uint8_t* payload = rbuf.data() + wc.wr_id * kThreadMsg;
    uint32_t slot = 0;
    std::memcpy(&slot, payload, 4);
    const size_t sender = size_t(slot) - size_t(kWriters) * kPerThread;
    REQUIRE(sender < got.size());
    CHECK(std::memcmp(payload, src.data() + size_t(slot) * kThreadMsg, kThreadMsg) == 0);
    ++got[sender];
  }
  CHECK(std::count(got.begin(), got.end(), 1) == kSenders * kPerThread);

  CHECK(ibv_destroy_qp(a) == 0);
  CHECK(ibv_destroy_qp(b) == 0);
  CHECK(ibv_destroy_cq(scq) == 0);
  CHECK(ibv_destroy_cq(rcq) == 0);
  CHECK(ibv_dereg_mr(smr) == 0);
  CHECK(ibv_dereg_mr(dmr) == 0);
  CHECK(ibv_dereg_mr(rmr) == 0);
  CHECK(ibv_dealloc_pd(pd) == 0);
}

namespace {

// CPU time (user + system) of the whole process so far.
std::chrono::microseconds process_cpu() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return std::chrono::seconds(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         std::chrono::microseconds(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

}  // namespace

TEST_CASE("threads: a thread blocked in ibv_get_cq_event costs no CPU and wakes on a completion", "[abi-threads]") {
  Opened o;
  ibv_comp_channel* ch = ibv_create_comp_channel(o.ctx);
  REQUIRE(ch);
  ibv_pd* pd = ibv_alloc_pd(o.ctx);
  REQUIRE(pd);
  std::vector<uint8_t> buf(256);
  ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), kAccess);
  REQUIRE(mr);
  ibv_cq* scq = ibv_create_cq(o.ctx, 8, nullptr, nullptr, 0);
  ibv_cq* rcq = ibv_create_cq(o.ctx, 8, nullptr, ch, 0);
  REQUIRE(scq);
  REQUIRE(rcq);
  ibv_qp_init_attr_ex qa = qp_attr(pd, scq, scq);
  ibv_qp* a = ibv_create_qp_ex(o.ctx, &qa);
  qa = qp_attr(pd, rcq, rcq);
  ibv_qp* b = ibv_create_qp_ex(o.ctx, &qa);
  REQUIRE(a);
  REQUIRE(b);
  connect(o.ctx, a, b->qp_num);
  connect(o.ctx, b, a->qp_num);
  post_recv(b, 9, buf.data() + 128, 64, mr->lkey);
  REQUIRE(ibv_req_notify_cq(rcq, 0) == 0);

  std::atomic<bool> woke{false};
  ibv_cq* ev_cq = nullptr;
  int ev_rc = -2;
  std::thread waiter([&] {
    void* ev_ctx = nullptr;
    ev_rc = ibv_get_cq_event(ch, &ev_cq, &ev_ctx);  // blocking: the channel's fd is left as made
    woke = true;
  });
  // A second of waiting: the blocked thread and the idle engine together
  // use a small fraction of one CPU (the engine thread naps when idle).
  const auto cpu0 = process_cpu();
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double cpu = double((process_cpu() - cpu0).count()) /
                     double(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());
  CHECK_FALSE(woke.load());
  INFO("process CPU while waiting: " << cpu * 100 << " % of one CPU");
  CHECK(cpu < 0.10);

  // A SEND from a completes b's receive: the armed CQ's event wakes the waiter.
  std::memcpy(buf.data(), "wake up", 8);
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf.data()), 8, mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  REQUIRE(ibv_post_send(a, &wr, &bad) == 0);
  REQUIRE(wait_wc(scq, 1).size() == 1);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!woke && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!woke) {
    // Unblock the waiter before failing: a second event needs an armed CQ.
    ibv_req_notify_cq(rcq, 0);
    post_recv(b, 10, buf.data() + 192, 64, mr->lkey);
    ibv_post_send(a, &wr, &bad);
  }
  waiter.join();
  REQUIRE(woke);
  CHECK(ev_rc == 0);
  CHECK(ev_cq == rcq);
  ibv_ack_cq_events(rcq, 1);
  auto wc = wait_wc(rcq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].wr_id == 9);
  CHECK(std::memcmp(buf.data() + 128, "wake up", 8) == 0);

  CHECK(ibv_destroy_qp(a) == 0);
  CHECK(ibv_destroy_qp(b) == 0);
  CHECK(ibv_destroy_cq(scq) == 0);
  CHECK(ibv_destroy_cq(rcq) == 0);
  CHECK(ibv_destroy_comp_channel(ch) == 0);
  CHECK(ibv_dereg_mr(mr) == 0);
  CHECK(ibv_dealloc_pd(pd) == 0);
}
