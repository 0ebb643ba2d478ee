// SPDX-License-Identifier: BSD-3-Clause
// UD QPs and address handles for the UD tests.
#pragma once

#include "verbs_test_util.h"

namespace uroce::vt {

using test::make_ah;

// A UD end: its QP in RTS and an address handle towards the other end.
using UdNode = test::PairSide;

struct UdPair {
  explicit UdPair(uint64_t seed_ = 1, uint32_t qkey_a = 0x1111, uint32_t qkey_b = 0x1111, uint16_t mtu = 1500,
                  const char* ip_a = "10.0.0.1", const char* ip_b = "10.0.0.2")
      : seed(seed_), fabric(seed_, mtu) {
    Device& da = fabric.add_device(ip_a, small_device());
    Device& db = fabric.add_device(ip_b, small_device());
    test::connect_pair(a, da, options(qkey_a), b, db, options(qkey_b));
  }

  static Opts options(uint32_t qkey) {
    Opts o;
    o.type = IBV_QPT_UD;
    o.qkey = qkey;
    o.sq_psn = 0x10;
    o.cq_entries = 1024;
    return o;
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

  int recv(UdNode& n, uint64_t wr_id, size_t off, uint32_t len) { return post_recv(n, wr_id, off, len); }

  std::vector<ibv_wc> wait(UdNode& n, size_t count, uint64_t max_ns = kSecond) {
    return wait_cq(fabric, *n.cq, count, max_ns);
  }

  uint64_t seed;
  sim::SimFabric fabric;
  UdNode a, b;
};

}  // namespace uroce::vt
