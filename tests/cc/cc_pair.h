// SPDX-License-Identifier: BSD-3-Clause
// Two devices on the simulated wire with a connected RC pair, where the
// receiver's port can CE-mark the ECN-capable frames it receives (as a
// congested switch would) and records the CNPs the receiver sends.
#pragma once

#include <rte_mbuf.h>

#include <vector>

#include "../transport/rc_pair.h"
#include "uroce/sim/sim_wire.h"
#include "uroce/wire/ipv4.h"
#include "uroce/wire/opcode.h"

namespace uroce::test {

class MarkingPort : public PacketPort {
 public:
  explicit MarkingPort(PacketPort& inner) : in_(inner) {}
  bool marking = false;
  uint64_t marked = 0;
  std::vector<std::vector<uint8_t>> cnps;  // CNP frames sent, as on the wire

  uint16_t rx_burst(rte_mbuf** pkts, uint16_t n) override {
    const uint16_t k = in_.rx_burst(pkts, n);
    if (marking)
      for (uint16_t i = 0; i < k; ++i) mark(pkts[i]);
    return k;
  }
  uint16_t tx_burst(rte_mbuf** pkts, uint16_t n) override {
    for (uint16_t i = 0; i < n; ++i) {
      const auto* p = rte_pktmbuf_mtod(pkts[i], const uint8_t*);
      if (is_cnp(pkts[i])) cnps.emplace_back(p, p + pkts[i]->data_len);
    }
    return in_.tx_burst(pkts, n);
  }
  wire::MacAddr mac() const override { return in_.mac(); }
  uint16_t mtu() const override { return in_.mtu(); }
  TxChains tx_chains() const override { return in_.tx_chains(); }

 private:
  static constexpr size_t kIp = 14;
  static bool ipv6(const uint8_t* p) { return p[12] == 0x86 && p[13] == 0xDD; }
  // Offset of the BTH of an untagged RoCEv2 frame, 0 if it is not one.
  static size_t bth_offset(const rte_mbuf* m) {
    const auto* p = rte_pktmbuf_mtod(m, const uint8_t*);
    const bool v4 = p[12] == 0x08 && p[13] == 0x00;
    if (!v4 && !ipv6(p)) return 0;
    const size_t udp = kIp + (v4 ? 20 : 40);
    const bool is_udp = v4 ? p[kIp + 9] == 17 : p[kIp + 6] == 17;
    if (m->data_len <= udp + 8 || !is_udp || p[udp + 2] != 0x12 || p[udp + 3] != 0xB7) return 0;  // 4791
    return udp + 8;
  }
  static bool is_cnp(const rte_mbuf* m) {
    const size_t bth = bth_offset(m);
    return bth && rte_pktmbuf_mtod(m, const uint8_t*)[bth] == wire::op::CNP;
  }
  // ECT -> CE (IPv4 with its checksum fixed; the ICRC masks these bits).
  void mark(rte_mbuf* m) {
    if (!bth_offset(m)) return;
    uint8_t* ip = rte_pktmbuf_mtod(m, uint8_t*) + kIp;
    if (ipv6(ip - kIp)) {
      const uint8_t ecn = (ip[1] >> 4) & 3;  // traffic class straddles bytes 0 and 1
      if (ecn == 0 || ecn == 3) return;
      ip[1] |= 0x30;
    } else {
      if ((ip[1] & 3) == 0 || (ip[1] & 3) == 3) return;
      ip[1] |= 3;
      ip[10] = ip[11] = 0;
      wire::store_be16(ip + 10, wire::ipv4_header_checksum(ip, 20));
    }
    ++marked;
  }
  PacketPort& in_;
};

// The sender `a` (10.0.0.1 or fd00::1) and the receiver `b` (10.0.0.2 or
// fd00::2, marking port).
struct CcPair {
  explicit CcPair(const cc::CcConfig& cfg, QpOptions o = {}, bool v6 = false) : wire(clock, 7) {
    sim::SimPort& pa = wire.add_port(wire::MacAddr{{0x02, 0, 0, 0, 0, 1}});
    sim::SimPort& pb = wire.add_port(wire::MacAddr{{0x02, 0, 0, 0, 0, 2}});
    marker = std::make_unique<MarkingPort>(pb);
    da = open(pa, v6 ? "fd00::1" : "10.0.0.1", cfg);
    db = open(*marker, v6 ? "fd00::2" : "10.0.0.2", cfg);
    da->add_neighbor(db->gids()[0], pb.mac());
    db->add_neighbor(da->gids()[0], pa.mac());
    o.bytes = 8 << 20;
    connect_pair(a, *da, with_psn(o, 100), b, *db, with_psn(o, 200));
  }
  ~CcPair() {
    for (Side* s : {&a, &b}) {
      s->qp.reset();
      s->mr.reset();
      s->cq.reset();
      s->pd.reset();
    }
    wire.drop_all();
  }

  std::unique_ptr<Device> open(PacketPort& port, const char* ip, const cc::CcConfig& cfg) {
    DeviceConfig c;
    c.port = &port;
    c.clock = &clock;
    wire::IpAddr addr;
    REQUIRE(wire::IpAddr::parse(ip, addr));
    c.gids = {addr};
    c.seed = 0xCC;
    c.cc = cfg;
    std::string error;
    auto d = Device::open(c, error);
    REQUIRE(d);
    return d;
  }

  // Polls both devices, jumping virtual time when idle, until pred().
  template <class Pred>
  bool run_until(Pred pred, uint64_t max_ns) {
    const uint64_t end = clock.now_ns() + max_ns;
    while (!pred()) {
      if (da->poll() + db->poll() > 0) continue;
      const uint64_t t = std::min({wire.next_delivery_ns(), da->next_deadline_ns(), db->next_deadline_ns()});
      if (t == kNever || t > end) return pred();
      clock.advance_to(std::max(t, clock.now_ns() + 1));
    }
    return true;
  }

  // `n` signalled WRs of `op` (WRITE or READ) and `len` bytes from `from`
  // to `to`, 32 at a time; true when all completed successfully in time.
  bool post_n(Side& from, Side& to, ibv_wr_opcode op, uint32_t n, uint32_t len, uint64_t max_ns) {
    uint32_t posted = 0, done = 0;
    bool ok = true;
    return run_until(
               [&] {
                 while (posted < n && posted - done < 32 &&
                        post_wr(from, op, posted, 0, len, to.addr(), to.mr->rkey()) == 0)
                   ++posted;
                 ibv_wc wc[16];
                 for (int k; (k = from.cq->poll(16, wc)) > 0;)
                   for (int i = 0; i < k; ++i) {
                     ok &= wc[i].status == IBV_WC_SUCCESS;
                     ++done;
                   }
                 return done == n || !ok;
               },
               max_ns) &&
           ok;
  }
  bool write_n(uint32_t n, uint32_t len, uint64_t max_ns = 5'000'000'000ull) {
    return post_n(a, b, IBV_WR_RDMA_WRITE, n, len, max_ns);
  }

  sim::VirtualClock clock;
  sim::SimWire wire;
  std::unique_ptr<MarkingPort> marker;
  std::unique_ptr<Device> da, db;
  Side a, b;
};

}  // namespace uroce::test
