// SPDX-License-Identifier: BSD-3-Clause
// The drop-in libibverbs called the way a verbs program calls it: linked
// against the drop-in itself (so every call binds to the version a program
// built with Debian's header binds to), on device uroce0 over a null port
// (net_null: nothing on the wire) given by the test's environment
// (UROCE_DEV, UROCE_IP, UROCE_MAC).
#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

#include "abi_test.h"


#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

// IBVERBS_PRIVATE_34, which ibv_devinfo calls; not in the public header.
extern "C" int ibv_query_gid_type(ibv_context*, uint8_t, unsigned int, int*);
// IBVERBS_1.0, which ibv_devinfo and librdmacm call; declared by no installed header.
extern "C" int ibv_read_sysfs_file(const char*, const char*, char*, size_t);

namespace {

using abi_test::Opened;
using abi_test::readable;
using abi_test::set_nonblocking;

// An RC QP on `cq` (and `srq`, if any) moved to INIT.
ibv_qp* init_qp(ibv_pd* pd, ibv_cq* cq, ibv_srq* srq) {
  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.srq = srq;
  init.cap.max_send_wr = 8;
  init.cap.max_recv_wr = 8;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.qp_type = IBV_QPT_RC;
  ibv_qp* qp = ibv_create_qp(pd, &init);
  REQUIRE(qp);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  REQUIRE(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
  return qp;
}

void to_error(ibv_qp* qp) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  REQUIRE(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == 0);
}

}  // namespace

TEST_CASE("device list, names, GUID and index", "[abi-calls]") {
  int n = -1;
  ibv_device** list = ibv_get_device_list(&n);
  REQUIRE(list);
  REQUIRE(n == 1);
  CHECK(list[1] == nullptr);
  CHECK(std::strcmp(ibv_get_device_name(list[0]), "uroce0") == 0);
  CHECK(ibv_get_device_index(list[0]) == 0);
  CHECK(list[0]->node_type == IBV_NODE_CA);
  CHECK(list[0]->transport_type == IBV_TRANSPORT_IB);
  // EUI-64 of UROCE_MAC 02:00:00:00:00:05: 00:00:00:ff:fe:00:00:05.
  const uint8_t eui[8] = {0x00, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x05};
  uint64_t guid = ibv_get_device_guid(list[0]);
  CHECK(std::memcmp(&guid, eui, 8) == 0);
  // A foreign, non-NULL pointer follows struct ibv_device (providers
  // recognise their own devices there).
  const void* after;
  std::memcpy(&after, reinterpret_cast<const char*>(list[0]) + sizeof(ibv_device), sizeof after);
  CHECK(after != nullptr);
  ibv_free_device_list(list);
}

TEST_CASE("device and port queries, both ibv_query_port forms", "[abi-calls]") {
  Opened o;
  ibv_device_attr dev{};
  REQUIRE(ibv_query_device(o.ctx, &dev) == 0);
  CHECK(dev.phys_port_cnt == 1);
  CHECK(dev.vendor_id == 0);
  CHECK(dev.atomic_cap == IBV_ATOMIC_HCA);
  CHECK(dev.max_qp > 0);
  ibv_device_attr_ex ex{};
  REQUIRE(ibv_query_device_ex(o.ctx, nullptr, &ex) == 0);
  CHECK(ex.orig_attr.max_qp == dev.max_qp);

  ibv_port_attr inl{};
  REQUIRE(ibv_query_port(o.ctx, 1, &inl) == 0);  // verbs.h's inline form, through verbs_context
  CHECK(inl.link_layer == IBV_LINK_LAYER_ETHERNET);
  CHECK(inl.gid_tbl_len == 2);
  CHECK(inl.active_mtu == IBV_MTU_1024);  // Ethernet MTU 1500
  ibv_port_attr exported;
  std::memset(&exported, 0xee, sizeof exported);
  // The exported function: the older struct, which ends after `flags`.
  REQUIRE((ibv_query_port)(o.ctx, 1, reinterpret_cast<_compat_ibv_port_attr*>(&exported)) == 0);
  CHECK(exported.link_layer == IBV_LINK_LAYER_ETHERNET);
  CHECK(exported.active_mtu == inl.active_mtu);
  CHECK(exported.port_cap_flags2 == 0xeeee);  // past the compat struct: untouched
  CHECK(ibv_query_port(o.ctx, 2, &inl) != 0);
}

TEST_CASE("GIDs: link-local GID 0, the address at GID 1, RoCE v2", "[abi-calls]") {
  Opened o;
  ibv_gid gid;
  REQUIRE(ibv_query_gid(o.ctx, 1, 1, &gid) == 0);
  const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
  CHECK(std::memcmp(gid.raw, mapped, 16) == 0);
  REQUIRE(ibv_query_gid(o.ctx, 1, 0, &gid) == 0);
  CHECK(gid.raw[0] == 0xfe);
  CHECK(gid.raw[1] == 0x80);
  CHECK(ibv_query_gid(o.ctx, 1, 2, &gid) != 0);

  ibv_gid_entry e{};
  REQUIRE(ibv_query_gid_ex(o.ctx, 1, 1, &e, 0) == 0);
  CHECK(e.gid_type == IBV_GID_TYPE_ROCE_V2);
  CHECK(e.gid_index == 1);
  CHECK(std::memcmp(e.gid.raw, mapped, 16) == 0);
  ibv_gid_entry table[4];
  CHECK(ibv_query_gid_table(o.ctx, table, 4, 0) == 2);
  CHECK(ibv_query_gid_table(o.ctx, table, 1, 0) < 0);
  int type = -1;
  REQUIRE(ibv_query_gid_type(o.ctx, 1, 0, &type) == 0);
  CHECK(type == 1);  // RoCE v2

  __be16 pkey = 0;
  REQUIRE(ibv_query_pkey(o.ctx, 1, 0, &pkey) == 0);
  CHECK(pkey == 0xffff);
  CHECK(ibv_get_pkey_index(o.ctx, 1, pkey) == 0);
}

TEST_CASE("sysfs answers for uroce's devices", "[abi-calls]") {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  REQUIRE(n == 1);
  char buf[64];
  CHECK(ibv_read_sysfs_file(list[0]->ibdev_path, "board_id", buf, sizeof buf) == 5);
  CHECK(std::string(buf) == "uroce");
  CHECK(ibv_read_sysfs_file(list[0]->ibdev_path, "no_such_file", buf, sizeof buf) < 0);
  ibv_free_device_list(list);
}

TEST_CASE("objects: PD, MR with optional flags, CQ, QP, SRQ; refusals", "[abi-calls]") {
  Opened o;
  ibv_pd* pd = ibv_alloc_pd(o.ctx);
  REQUIRE(pd);
  std::vector<char> buf(8192);
  // perftest's flags: relaxed ordering is optional and ignored.
  ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(),
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_RELAXED_ORDERING);
  REQUIRE(mr);
  CHECK(mr->lkey != 0);
  CHECK(mr->addr == buf.data());
  // Another IOVA: the ibv_mr still gives the buffer's address.
  ibv_mr* iova_mr = ibv_reg_mr_iova(pd, buf.data(), buf.size(), 0x1000, IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(iova_mr);
  CHECK(iova_mr->addr == buf.data());
  CHECK(iova_mr->length == buf.size());
  CHECK(iova_mr->lkey != mr->lkey);
  CHECK(ibv_dereg_mr(iova_mr) == 0);
  errno = 0;
  CHECK(ibv_reg_mr_iova(pd, buf.data(), buf.size(), ~uint64_t(0) - 100, IBV_ACCESS_LOCAL_WRITE) == nullptr);
  CHECK(errno == EINVAL);

  ibv_cq* cq = ibv_create_cq(o.ctx, 16, nullptr, nullptr, 0);
  REQUIRE(cq);
  ibv_wc wc;
  CHECK(ibv_poll_cq(cq, 1, &wc) == 0);
  CHECK(ibv_req_notify_cq(cq, 0) == 0);  // no completion channel: nothing to arm, as rdma-core's providers
  CHECK(o.ctx->num_comp_vectors == 1);

  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap.max_send_wr = 8;
  init.cap.max_recv_wr = 8;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.qp_type = IBV_QPT_UC;
  ibv_qp* uc = ibv_create_qp(pd, &init);
  REQUIRE(uc);
  CHECK(uc->qp_type == IBV_QPT_UC);
  CHECK(ibv_destroy_qp(uc) == 0);
  init.qp_type = IBV_QPT_XRC_SEND;
  errno = 0;
  CHECK(ibv_create_qp(pd, &init) == nullptr);
  CHECK(errno == EOPNOTSUPP);
  init.qp_type = IBV_QPT_RC;
  ibv_qp* qp = ibv_create_qp(pd, &init);
  REQUIRE(qp);
  CHECK(qp->qp_num != 0);
  CHECK(qp->state == IBV_QPS_RESET);
  CHECK(init.cap.max_send_wr >= 8);

  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  REQUIRE(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
  CHECK(qp->state == IBV_QPS_INIT);
  ibv_qp_attr got{};
  ibv_qp_init_attr got_init{};
  REQUIRE(ibv_query_qp(qp, &got, IBV_QP_STATE, &got_init) == 0);
  CHECK(got.qp_state == IBV_QPS_INIT);
  CHECK(got_init.send_cq == cq);

  // A receive posted in INIT, flushed by ERR, comes back through the CQ.
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf.data()), 64, mr->lkey};
  ibv_recv_wr rwr{};
  rwr.wr_id = 42;
  rwr.sg_list = &sge;
  rwr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  REQUIRE(ibv_post_recv(qp, &rwr, &bad) == 0);
  attr.qp_state = IBV_QPS_ERR;
  REQUIRE(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == 0);
  int polled = 0;
  for (int i = 0; i < 100000 && polled == 0; ++i) polled = ibv_poll_cq(cq, 1, &wc);
  REQUIRE(polled == 1);
  CHECK(wc.wr_id == 42);
  CHECK(wc.status == IBV_WC_WR_FLUSH_ERR);

  ibv_srq_init_attr sattr{};
  sattr.attr.max_wr = 16;
  sattr.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd, &sattr);
  REQUIRE(srq);
  REQUIRE(ibv_post_srq_recv(srq, &rwr, &bad) == 0);
  ibv_srq_attr sq{};
  REQUIRE(ibv_query_srq(srq, &sq) == 0);
  CHECK(sq.max_wr >= 16);

  CHECK(ibv_destroy_srq(srq) == 0);
  CHECK(ibv_destroy_qp(qp) == 0);
  CHECK(ibv_destroy_cq(cq) == 0);
  CHECK(ibv_dereg_mr(mr) == 0);
  CHECK(ibv_dealloc_pd(pd) == 0);
}

TEST_CASE("text helpers and rates", "[abi-calls]") {
  CHECK(std::string(ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR)) == "transport retry counter exceeded");
  CHECK(std::string(ibv_port_state_str(IBV_PORT_ACTIVE)) == "active");
  CHECK(std::string(ibv_node_type_str(IBV_NODE_CA)) == "InfiniBand channel adapter");
  CHECK(std::string(ibv_event_type_str(IBV_EVENT_SRQ_LIMIT_REACHED)) == "SRQ limit reached");
  CHECK(ibv_rate_to_mult(IBV_RATE_10_GBPS) == 4);
  CHECK(mult_to_ibv_rate(4) == IBV_RATE_10_GBPS);
  CHECK(ibv_rate_to_mbps(IBV_RATE_100_GBPS) == 103125);
  CHECK(mbps_to_ibv_rate(2500) == IBV_RATE_2_5_GBPS);
  CHECK(ibv_fork_init() == 0);
  CHECK(ibv_is_fork_initialized() == IBV_FORK_UNNEEDED);
}

TEST_CASE("a reply address from a UD receive's GRH slot", "[abi-calls]") {
  Opened o;
  ibv_wc wc{};
  wc.wc_flags = IBV_WC_GRH;
  wc.sl = 0;
  // IPv4: 20 zero bytes, then the IPv4 header from 10.0.0.2 to 10.0.0.1 (GID 1), TOS 0x68.
  uint8_t grh[40] = {};
  uint8_t* ip = grh + 20;
  ip[0] = 0x45;
  ip[1] = 0x68;
  ip[8] = 64;
  const uint8_t src[4] = {10, 0, 0, 2}, dst[4] = {10, 0, 0, 1};
  std::memcpy(ip + 12, src, 4);
  std::memcpy(ip + 16, dst, 4);
  ibv_ah_attr ah{};
  REQUIRE(ibv_init_ah_from_wc(o.ctx, 1, &wc, reinterpret_cast<ibv_grh*>(grh), &ah) == 0);
  CHECK(ah.is_global == 1);
  CHECK(ah.grh.sgid_index == 1);
  CHECK(ah.grh.traffic_class == 0x68);
  CHECK(ah.grh.hop_limit == 0xff);
  const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
  CHECK(std::memcmp(ah.grh.dgid.raw, mapped, 16) == 0);
  // Addressed to no GID of this device: refused.
  ip[19] = 9;
  CHECK(ibv_init_ah_from_wc(o.ctx, 1, &wc, reinterpret_cast<ibv_grh*>(grh), &ah) != 0);
  // No GRH: refused.
  wc.wc_flags = 0;
  CHECK(ibv_init_ah_from_wc(o.ctx, 1, &wc, reinterpret_cast<ibv_grh*>(grh), &ah) != 0);
}

TEST_CASE("two contexts share the device; the port stays open until the last close", "[abi-calls]") {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  REQUIRE(n == 1);
  ibv_context* a = ibv_open_device(list[0]);
  ibv_context* b = ibv_open_device(list[0]);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a != b);
  ibv_pd* pd = ibv_alloc_pd(b);
  REQUIRE(pd);
  CHECK(ibv_close_device(a) == 0);
  ibv_port_attr port{};
  CHECK(ibv_query_port(b, 1, &port) == 0);  // b still reaches the open port
  ibv_cq* cq = ibv_create_cq(b, 4, nullptr, nullptr, 0);
  CHECK(cq);
  CHECK(ibv_destroy_cq(cq) == 0);
  CHECK(ibv_dealloc_pd(pd) == 0);
  CHECK(ibv_close_device(b) == 0);
  // Opened again after the last close: the port is opened anew.
  ibv_context* c = ibv_open_device(list[0]);
  REQUIRE(c);
  CHECK(ibv_query_port(c, 1, &port) == 0);
  CHECK(ibv_close_device(c) == 0);
  ibv_free_device_list(list);
}

TEST_CASE("completion channel: arm, event by fd, EAGAIN, EBUSY", "[abi-calls]") {
  Opened o;
  ibv_pd* pd = ibv_alloc_pd(o.ctx);
  REQUIRE(pd);
  std::vector<char> buf(4096);
  ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(mr);
  ibv_comp_channel* ch = ibv_create_comp_channel(o.ctx);
  REQUIRE(ch);
  CHECK(ch->fd >= 0);
  CHECK(ch->context == o.ctx);
  int tag = 0;
  errno = 0;
  CHECK(ibv_create_cq(o.ctx, 16, &tag, ch, o.ctx->num_comp_vectors) == nullptr);
  CHECK(errno == EINVAL);
  ibv_cq* cq = ibv_create_cq(o.ctx, 16, &tag, ch, 0);
  REQUIRE(cq);
  CHECK(cq->channel == ch);
  CHECK(ibv_destroy_comp_channel(ch) == EBUSY);

  // Nothing pending on a non-blocking channel: EAGAIN, not a wait.
  set_nonblocking(ch->fd, true);
  ibv_cq* ev_cq = nullptr;
  void* ev_ctx = nullptr;
  errno = 0;
  CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == -1);
  CHECK(errno == EAGAIN);
  CHECK_FALSE(readable(ch->fd, 0));

  // Armed, then a completion (a receive flushed by ERR): one event.
  REQUIRE(ibv_req_notify_cq(cq, 0) == 0);
  ibv_qp* qp = init_qp(pd, cq, nullptr);
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf.data()), 64, mr->lkey};
  ibv_recv_wr rwr{};
  rwr.wr_id = 7;
  rwr.sg_list = &sge;
  rwr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  REQUIRE(ibv_post_recv(qp, &rwr, &bad) == 0);
  to_error(qp);
  REQUIRE(readable(ch->fd, 5000));
  REQUIRE(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0);
  CHECK(ev_cq == cq);
  CHECK(ev_ctx == &tag);
  ibv_ack_cq_events(cq, 1);
  CHECK(cq->comp_events_completed == 1);
  ibv_wc wc{};
  int polled = 0;
  for (int i = 0; i < 100000 && polled == 0; ++i) polled = ibv_poll_cq(cq, 1, &wc);
  REQUIRE(polled == 1);
  CHECK(wc.wr_id == 7);
  // Not armed again: a second completion queues no event.
  ibv_qp* qp2 = init_qp(pd, cq, nullptr);
  REQUIRE(ibv_post_recv(qp2, &rwr, &bad) == 0);
  to_error(qp2);
  polled = 0;
  for (int i = 0; i < 100000 && polled == 0; ++i) polled = ibv_poll_cq(cq, 1, &wc);
  REQUIRE(polled == 1);
  errno = 0;
  CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == -1);
  CHECK(errno == EAGAIN);

  // Blocking again: an event already queued is returned at once.
  set_nonblocking(ch->fd, false);
  REQUIRE(ibv_req_notify_cq(cq, 0) == 0);
  ibv_qp* qp3 = init_qp(pd, cq, nullptr);
  REQUIRE(ibv_post_recv(qp3, &rwr, &bad) == 0);
  to_error(qp3);
  REQUIRE(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0);
  CHECK(ev_cq == cq);
  ibv_ack_cq_events(cq, 1);
  CHECK(cq->comp_events_completed == 2);

  CHECK(ibv_destroy_qp(qp3) == 0);
  CHECK(ibv_destroy_qp(qp2) == 0);
  CHECK(ibv_destroy_qp(qp) == 0);
  CHECK(ibv_destroy_cq(cq) == 0);
  CHECK(ibv_destroy_comp_channel(ch) == 0);
  CHECK(ibv_dereg_mr(mr) == 0);
  CHECK(ibv_dealloc_pd(pd) == 0);
}

TEST_CASE("asynchronous events: the context's fd, the shim's ibv_qp, EAGAIN", "[abi-calls]") {
  Opened o;
  ibv_pd* pd = ibv_alloc_pd(o.ctx);
  REQUIRE(pd);
  ibv_cq* cq = ibv_create_cq(o.ctx, 16, nullptr, nullptr, 0);
  REQUIRE(cq);
  ibv_srq_init_attr sattr{};
  sattr.attr.max_wr = 16;
  sattr.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd, &sattr);
  REQUIRE(srq);
  REQUIRE(o.ctx->async_fd >= 0);
  set_nonblocking(o.ctx->async_fd, true);
  ibv_async_event ev{};
  errno = 0;
  CHECK(ibv_get_async_event(o.ctx, &ev) == -1);
  CHECK(errno == EAGAIN);

  // A QP on an SRQ that enters the error state: "last WQE reached".
  ibv_qp* qp = init_qp(pd, cq, srq);
  to_error(qp);
  REQUIRE(readable(o.ctx->async_fd, 5000));
  REQUIRE(ibv_get_async_event(o.ctx, &ev) == 0);
  CHECK(ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED);
  CHECK(ev.element.qp == qp);
  ibv_ack_async_event(&ev);
  CHECK(qp->events_completed == 1);
  errno = 0;
  CHECK(ibv_get_async_event(o.ctx, &ev) == -1);
  CHECK(errno == EAGAIN);
  set_nonblocking(o.ctx->async_fd, false);

  // As Linux: an SRQ a QP still uses stays (EBUSY), and goes after the QP.
  CHECK(ibv_destroy_srq(srq) == EBUSY);
  CHECK(ibv_destroy_cq(cq) == EBUSY);
  CHECK(ibv_destroy_qp(qp) == 0);
  CHECK(ibv_destroy_srq(srq) == 0);
  CHECK(ibv_destroy_cq(cq) == 0);
  CHECK(ibv_dealloc_pd(pd) == 0);
}
