// SPDX-License-Identifier: BSD-3-Clause
#include "attack_run.h"

#include <cstring>

#include "connected_pair.h"

namespace uroce::attack {

Run::Run(Rig& r, const Setup& s) : rig(r), setup(s) {
  Device& d = *rig.dev;
  pd = d.alloc_pd();
  pd2 = d.alloc_pd();
  int err = -1;
  cq = d.create_cq(256, err);
  REQUIRE(err == 0);
  rw = std::make_unique<GuardedRegion>(*pd, kRwLen, kAllRemote | IBV_ACCESS_MW_BIND);
  ro = std::make_unique<GuardedRegion>(*pd, 4096, IBV_ACCESS_REMOTE_READ);
  wo = std::make_unique<GuardedRegion>(*pd, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  other = std::make_unique<GuardedRegion>(*pd2, 4096, kAllRemote);
  recv = std::make_unique<GuardedRegion>(*pd, 8192, IBV_ACCESS_LOCAL_WRITE);
  local = std::make_unique<GuardedRegion>(*pd, 8192, IBV_ACCESS_LOCAL_WRITE);
  QpInitAttr init;
  init.send_cq = init.recv_cq = cq.get();
  init.qp_type = s.type;
  init.cap.max_send_wr = init.cap.max_recv_wr = 16;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  qp = pd->create_qp(init, err);
  INFO("create_qp errno " << err);
  REQUIRE(qp);
  connect();
  if (s.recv_len) {
    ibv_sge sge{recv->va(), s.recv_len, recv->key()};
    RecvWr wr;
    wr.wr_id = 500;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    const RecvWr* bad = nullptr;
    REQUIRE(qp->post_recv(&wr, &bad) == 0);
  }
}

Run::~Run() {
  qp.reset();  // sends an ACK still held back
  rig.run_for_us(50);
  rig.drain();
}

void Run::connect() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = setup.qp_access;
  a.qkey = kQkey;
  const bool ud = setup.type == IBV_QPT_UD, uc = setup.type == IBV_QPT_UC;
  REQUIRE(qp->modify(a, ud ? test::kUdInitMask : test::kRcInitMask) == 0);
  a = {};
  a.qp_state = IBV_QPS_RTR;
  if (!ud) {
    a.path_mtu = rig.cfg.mtu;
    a.dest_qp_num = kAttackerQpn;
    a.rq_psn = kRqPsn;
    a.max_dest_rd_atomic = setup.max_dest_rd_atomic;
    a.min_rnr_timer = 1;  // 10 us
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, rig.peer_ip.bytes.data(), 16);
  }
  REQUIRE(qp->modify(a, ud ? IBV_QP_STATE : uc ? test::kUcRtrMask : test::kRcRtrMask) == 0);
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = kSqPsn;
  a.timeout = 18;  // 1 s: no retransmission unless an attack asks for one
  a.retry_cnt = 7;
  a.rnr_retry = setup.rnr_retry;
  a.max_rd_atomic = 16;
  REQUIRE(qp->modify(a, ud || uc ? test::kUcRtsMask : test::kRcRtsMask) == 0);
}

wire::PacketFields Run::req(uint8_t opcode, int32_t psn_off, uint32_t payload) const {
  wire::PacketFields f;
  f.eth.dst = rig.vport->mac();
  f.eth.src = rig.aport->mac();
  f.ip.ipv6 = rig.cfg.ipv6;
  f.ip.src = rig.peer_ip;
  f.ip.dst = rig.victim_ip;
  f.bth.opcode = opcode;
  f.bth.dest_qp = qp->qp_num();
  f.bth.psn = E(psn_off);
  f.bth.ack_req = true;
  f.payload_len = payload;
  return f;
}

wire::PacketFields Run::write(uint8_t opcode, int32_t psn_off, size_t off, uint32_t payload, uint32_t dma_len) const {
  wire::PacketFields f = req(opcode, psn_off, payload);
  f.ext.reth_va = rw->va(off);
  f.ext.reth_rkey = rw->key();
  f.ext.reth_dma_len = dma_len ? dma_len : payload;
  return f;
}

wire::PacketFields Run::read(int32_t psn_off, uint64_t va, uint32_t rkey, uint32_t len) const {
  wire::PacketFields f = req(wire::op::RC_RDMA_READ_REQUEST, psn_off);
  f.ext.reth_va = va;
  f.ext.reth_rkey = rkey;
  f.ext.reth_dma_len = len;
  return f;
}

wire::PacketFields Run::atomic(uint8_t opcode, int32_t psn_off, uint64_t va, uint32_t rkey, uint64_t add_or_swap,
                               uint64_t compare) const {
  wire::PacketFields f = req(opcode, psn_off);
  f.ext.atomic_va = va;
  f.ext.atomic_rkey = rkey;
  f.ext.atomic_swap_add = add_or_swap;
  f.ext.atomic_compare = compare;
  return f;
}

wire::PacketFields Run::resp(uint8_t opcode, int32_t psn_off, uint8_t syndrome, uint32_t payload) const {
  wire::PacketFields f = req(opcode, 0, payload);
  f.bth.psn = S(psn_off);
  f.bth.ack_req = false;
  f.ext.aeth_syndrome = syndrome;
  f.ext.aeth_msn = 1;
  return f;
}

std::vector<uint8_t> Run::build(const wire::PacketFields& f, uint8_t fill, const wire::BuildOptions& opts) const {
  wire::PacketFields g = f;
  const uint32_t extra = f.payload_len > 4096 ? f.payload_len - 4096 : 0;
  g.payload_len -= extra;
  const std::vector<uint8_t> payload(g.payload_len, fill);
  std::vector<uint8_t> frame(g.payload_len + 256);
  wire::FrameLayout lay;
  REQUIRE(wire::build_frame(g, payload, frame, lay, opts) == wire::BuildError::ok);
  frame.resize(lay.frame_len);
  if (extra) {
    REQUIRE(!opts.compute_udp_checksum);
    REQUIRE(extra % 4 == 0);
    frame.insert(frame.end() - 4, extra, fill);
    reseal(frame);
  }
  return frame;
}

void Run::send_frame(const std::vector<uint8_t>& frame) {
  rig.inject(frame);
  ++sent;
}

void Run::post_write(uint32_t len, uint64_t wr_id) { post_rdma(IBV_WR_RDMA_WRITE, len, wr_id); }

void Run::post_read(uint32_t len, uint64_t wr_id) { post_rdma(IBV_WR_RDMA_READ, len, wr_id); }

void Run::post_rdma(ibv_wr_opcode op, uint32_t len, uint64_t wr_id) {
  ibv_sge sge{local->va(), len, local->key()};
  SendWr wr = test::make_wr(op, wr_id, &sge);
  wr.wr.rdma.remote_addr = 0x10000;
  wr.wr.rdma.rkey = 0x4321;
  const SendWr* bad = nullptr;
  REQUIRE(qp->post_send(&wr, &bad) == 0);
}

void Run::bind_window(size_t off, size_t len) {
  int err = -1;
  mw = pd->alloc_mw(IBV_MW_TYPE_2, err);
  INFO("alloc_mw errno " << err);
  REQUIRE(mw);
  mw_key = (mw->rkey() & ~0xFFu) | 0xA7;
  SendWr wr = test::make_wr(IBV_WR_BIND_MW, 700, nullptr);
  wr.bind_mw.mw = mw.get();
  wr.bind_mw.rkey = mw_key;
  wr.bind_mw.bind_info.mr = &rw->mr();
  wr.bind_mw.bind_info.addr = rw->va(off);
  wr.bind_mw.bind_info.length = len;
  wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
  const SendWr* bad = nullptr;
  REQUIRE(qp->post_send(&wr, &bad) == 0);
  const auto wcs = completions(1);
  REQUIRE(wcs.size() == 1);
  CHECK(wcs[0].wr_id == 700);
  CHECK(wcs[0].opcode == IBV_WC_BIND_MW);
  REQUIRE(wcs[0].status == IBV_WC_SUCCESS);
}

void Run::local_inv(uint32_t key) {
  SendWr wr = test::make_wr(IBV_WR_LOCAL_INV, 701, nullptr);
  wr.invalidate_rkey = key;
  const SendWr* bad = nullptr;
  REQUIRE(qp->post_send(&wr, &bad) == 0);
  const auto wcs = completions(1);
  REQUIRE(wcs.size() == 1);
  CHECK(wcs[0].wr_id == 701);
  CHECK(wcs[0].opcode == IBV_WC_LOCAL_INV);
  REQUIRE(wcs[0].status == IBV_WC_SUCCESS);
}

Frame Run::take_request(uint8_t opcode, uint32_t psn) {
  std::vector<Frame> got = rig.collect(1);
  REQUIRE(got.size() == 1);
  CHECK(int(got[0].opcode()) == int(opcode));
  CHECK(got[0].psn() == psn);
  CHECK(got[0].v.bth().dest_qp() == kAttackerQpn);
  return std::move(got[0]);
}

std::vector<ibv_wc> Run::completions(size_t want) {
  std::vector<ibv_wc> out;
  ibv_wc wc[16];
  // Up to 5 s for `want` of them (a threaded engine may be napping), then
  // a little longer for any that should not be there.
  for (int i = 0; i < 25000 && out.size() < want; ++i) {
    rig.run_for_us(200);
    for (int k; (k = cq->poll(16, wc)) > 0;) out.insert(out.end(), wc, wc + k);
  }
  rig.run_for_us(200);
  for (int k; (k = cq->poll(16, wc)) > 0;) out.insert(out.end(), wc, wc + k);
  return out;
}

void Run::probe(int32_t psn_off) {
  INFO("probe: a WRITE at the PSN the victim must expect now");
  const size_t off = kRwLen - 16;
  const uint64_t rx = rig.dev->counters().rx_frames;
  send(write(wire::op::RC_RDMA_WRITE_ONLY, psn_off, off, 16), 0x5C);
  rig.wait_rx(rx, 1);
  std::vector<Frame> got = rig.collect(1);
  REQUIRE(got.size() == 1);
  CHECK(int(got[0].opcode()) == int(wire::op::RC_ACKNOWLEDGE));
  CHECK(int(got[0].syndrome()) == int(wire::kAethAckNoCredit));
  CHECK(got[0].psn() == E(psn_off));
  for (size_t i = 0; i < 16; ++i) CHECK(int(rw->data()[off + i]) == 0x5C);
}

}  // namespace uroce::attack
