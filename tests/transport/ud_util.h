// UD QPs and address handles for the UD tests.
#pragma once

#include "verbs_test_util.h"

namespace uroce::vt {

struct UdNode {
  Device* dev = nullptr;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mr;
  std::unique_ptr<QueuePair> qp;
  std::unique_ptr<AddressHandle> ah;  // towards the other node

  uint8_t* buf(size_t off = 0) const { return static_cast<uint8_t*>(mr->addr()) + off; }
  ibv_sge sge(size_t off, uint32_t len) const {
    return ibv_sge{reinterpret_cast<uintptr_t>(mr->addr()) + off, len, mr->lkey()};
  }
};

inline void ud_up(QueuePair& qp, uint32_t qkey, uint32_t sq_psn) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qkey = qkey;
  REQUIRE(qp.modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) == 0);
  a = {};
  a.qp_state = IBV_QPS_RTR;
  REQUIRE(qp.modify(a, IBV_QP_STATE) == 0);
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = sq_psn;
  REQUIRE(qp.modify(a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0);
  REQUIRE(qp.state() == IBV_QPS_RTS);
}

inline std::unique_ptr<AddressHandle> make_ah(ProtectionDomain& pd, const Device& remote) {
  ibv_ah_attr at{};
  at.is_global = 1;
  at.port_num = 1;
  at.grh.sgid_index = 0;
  at.grh.hop_limit = 64;
  std::memcpy(at.grh.dgid.raw, remote.gids()[0].bytes.data(), 16);
  int err = -1;
  auto ah = pd.create_ah(at, err);
  REQUIRE(err == 0);
  REQUIRE(ah);
  return ah;
}

struct UdPair {
  explicit UdPair(uint64_t seed_ = 1, uint32_t qkey_a = 0x1111, uint32_t qkey_b = 0x1111, uint16_t mtu = 1500,
                  const char* ip_a = "10.0.0.1", const char* ip_b = "10.0.0.2")
      : seed(seed_), fabric(seed_, mtu) {
    Device& da = fabric.add_device(ip_a, small_device());
    Device& db = fabric.add_device(ip_b, small_device());
    setup(a, da, db, qkey_a);
    setup(b, db, da, qkey_b);
  }

  void setup(UdNode& n, Device& dev, Device& remote, uint32_t qkey) {
    n.dev = &dev;
    n.pd = dev.alloc_pd();
    int err = -1;
    n.cq = dev.create_cq(1024, err);
    REQUIRE(err == 0);
    n.mr = n.pd->alloc_mr(1 << 20, kAllAccess, err);
    REQUIRE(err == 0);
    Opts o;
    n.qp = make_rc_qp(*n.pd, n.cq.get(), o, nullptr, IBV_QPT_UD);
    ud_up(*n.qp, qkey, 0x10);
    n.ah = make_ah(*n.pd, remote);
  }

  int send(UdNode& from, UdNode& to, uint64_t wr_id, size_t off, uint32_t len, uint32_t qkey,
           ibv_wr_opcode op = IBV_WR_SEND, uint32_t imm = 0) {
    ibv_sge s = from.sge(off, len);
    SendWr wr = make_wr(op, wr_id, &s);
    wr.imm_data = imm;
    wr.wr.ud.ah = from.ah.get();
    wr.wr.ud.remote_qpn = to.qp->qp_num();
    wr.wr.ud.remote_qkey = qkey;
    const SendWr* bad = nullptr;
    return from.qp->post_send(&wr, &bad);
  }

  int recv(UdNode& n, uint64_t wr_id, size_t off, uint32_t len) {
    ibv_sge s = n.sge(off, len);
    RecvWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = &s;
    wr.num_sge = 1;
    const RecvWr* bad = nullptr;
    return n.qp->post_recv(&wr, &bad);
  }

  std::vector<ibv_wc> wait(UdNode& n, size_t count, uint64_t max_ns = kSecond) {
    return wait_cq(fabric, *n.cq, count, max_ns);
  }

  uint64_t seed;
  sim::SimFabric fabric;
  UdNode a, b;
};

}  // namespace uroce::vt
