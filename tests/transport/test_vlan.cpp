// SPDX-License-Identifier: BSD-3-Clause
// 802.1Q on the simulated wire: a device with a VLAN id tags every frame it
// sends (RoCE of RC and UD QPs, ARP and ND) with that id and its priority,
// or the address vector's service level; it takes frames of its own VLAN
// only, whether the tag is in the frame or was taken out by the port (the
// mbuf says so, as af_packet and NICs that strip tags do); and an untagged
// device takes priority-tagged frames (VLAN id 0) but no other VLAN's.
#include <rte_mbuf.h>

#include "../common/mbuf_test_util.h"
#include "verbs_test_util.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/byte_order.h"
#include "uroce/wire/parser.h"

using namespace uroce;
using namespace uroce::vt;

namespace {

DeviceConfig on_vlan(int vid, uint8_t pcp) {
  DeviceConfig c = small_device();
  c.vlan_id = vid;
  c.vlan_pcp = pcp;
  return c;
}

constexpr wire::MacAddr kObserverMac{{0x02, 0, 0, 0, 0, 0x99}};

struct Tag {
  bool present = false;
  uint16_t vid = 0;
  uint8_t pcp = 0;
  uint16_t inner = 0;  // the ethertype after the tag (or the only one)
};

Tag tag_of(const rte_mbuf* m) {
  const auto* p = rte_pktmbuf_mtod(m, const uint8_t*);
  Tag t;
  t.inner = wire::load_be16(p + 12);
  if (t.inner != wire::kEtherTypeVlan) return t;
  t.present = true;
  const uint16_t tci = wire::load_be16(p + 14);
  t.vid = tci & 0xFFF;
  t.pcp = uint8_t(tci >> 13);
  t.inner = wire::load_be16(p + 16);
  return t;
}

// Every frame that reached `port` since the last call, freed.
std::vector<Tag> received(sim::SimPort& port, std::vector<std::vector<uint8_t>>* frames = nullptr) {
  std::vector<Tag> out;
  rte_mbuf* m[32];
  uint16_t n;
  while ((n = port.rx_burst(m, 32)) > 0)
    for (uint16_t i = 0; i < n; ++i) {
      out.push_back(tag_of(m[i]));
      if (frames) {
        const auto* p = rte_pktmbuf_mtod(m[i], const uint8_t*);
        frames->emplace_back(p, p + m[i]->data_len);
      }
      rte_pktmbuf_free(m[i]);
    }
  return out;
}

}  // namespace

TEST_CASE("Two devices on one VLAN: ARP, then RC and UD traffic, all tagged", "[vlan]") {
  for (const char* family : {"IPv4", "IPv6"}) {
    DYNAMIC_SECTION(family) {
      const bool v6 = std::string(family) == "IPv6";
      sim::SimFabric f(701, 1500);
      f.static_neighbors = false;
      Device& da = f.add_device(v6 ? "fd00::1" : "10.0.0.1", on_vlan(100, 5));
      Device& db = f.add_device(v6 ? "fd00::2" : "10.0.0.2", on_vlan(100, 5));
      sim::SimPort& observer = f.wire().add_port(kObserverMac, 1500);
      // The requests go out as broadcasts (ARP) or to a group (ND): the
      // observer sees them, tagged.
      f.run_until([&] { return da.resolve_neighbor(db.gids()[0]) == NeighborState::reachable; }, kSecond);
      REQUIRE(da.resolve_neighbor(db.gids()[0]) == NeighborState::reachable);
      const std::vector<Tag> asked = received(observer);
      REQUIRE_FALSE(asked.empty());
      for (const Tag& t : asked) {
        CHECK(t.present);
        CHECK(t.vid == 100);
        CHECK(t.pcp == 5);
        CHECK(t.inner == (v6 ? wire::kEtherTypeIpv6 : wire::kEtherTypeArp));
      }
      f.run_until([&] { return db.resolve_neighbor(da.gids()[0]) == NeighborState::reachable; }, kSecond);

      Opts o;
      Node a, b;
      test::connect_pair(a, da, with_psn(o, 10), b, db, with_psn(o, 20));
      fill(a.buf(), 8192, 3);
      REQUIRE(post_wr(a, IBV_WR_RDMA_WRITE, 1, 0, 8192, b.addr(0), b.key()) == 0);
      REQUIRE(post_wr(a, IBV_WR_RDMA_READ, 2, 16384, 8192, b.addr(0), b.key()) == 0);
      auto wa = wait_cq(f, *a.cq, 2);
      REQUIRE(wa.size() == 2);
      CHECK(wa[0].status == IBV_WC_SUCCESS);
      CHECK(wa[1].status == IBV_WC_SUCCESS);
      CHECK(std::memcmp(a.buf(), b.buf(), 8192) == 0);
      CHECK(std::memcmp(a.buf(16384), b.buf(), 8192) == 0);
      CHECK(da.counters().rx_other_host == 0);
      CHECK(db.counters().rx_other_host == 0);

      Opts ud;
      ud.type = IBV_QPT_UD;
      ud.qkey = 0x1111;
      Node ua, ub;
      test::connect_pair(ua, da, ud, ub, db, ud);
      REQUIRE(post_recv(ub, 5, 0, 40 + 256) == 0);
      ibv_sge s = ua.sge(0, 256);
      SendWr wr = make_wr(IBV_WR_SEND, 6, &s);
      wr.wr.ud.ah = ua.ah.get();
      wr.wr.ud.remote_qpn = ub.qp->qp_num();
      wr.wr.ud.remote_qkey = 0x1111;
      const SendWr* bad = nullptr;
      REQUIRE(ua.qp->post_send(&wr, &bad) == 0);
      auto wb = wait_cq(f, *ub.cq, 1);
      REQUIRE(wb.size() == 1);
      CHECK(wb[0].status == IBV_WC_SUCCESS);
      CHECK(wb[0].byte_len == 40 + 256);
    }
  }
}

TEST_CASE("A tagged device's RoCE frames: its VLAN id, its PCP or the service level", "[vlan]") {
  // c's address leads to the observer, which sees what a sends to c.
  for (ibv_qp_type type : {IBV_QPT_RC, IBV_QPT_UD}) {
    for (uint8_t sl : {0, 3}) {
      DYNAMIC_SECTION((type == IBV_QPT_RC ? "RC" : "UD") << ", service level " << int(sl)) {
        sim::SimFabric f(702, 1500);
        f.static_neighbors = false;
        Device& da = f.add_device("10.0.0.1", on_vlan(42, 6));
        Device& dc = f.add_device("10.0.0.3", on_vlan(42, 6));
        sim::SimPort& observer = f.wire().add_port(kObserverMac, 1500);
        da.add_neighbor(dc.gids()[0], kObserverMac);
        dc.add_neighbor(da.gids()[0], f.port(0).mac());
        Opts o;
        o.type = type;
        o.qkey = 0x2222;
        o.sl = sl;
        Node a, c;
        test::connect_pair(a, da, o, c, dc, o);
        ibv_sge s = a.sge(0, 64);
        SendWr wr = make_wr(IBV_WR_SEND, 1, &s);
        if (type == IBV_QPT_UD) {
          wr.wr.ud.ah = a.ah.get();
          wr.wr.ud.remote_qpn = c.qp->qp_num();
          wr.wr.ud.remote_qkey = 0x2222;
        }
        const SendWr* bad = nullptr;
        REQUIRE(a.qp->post_send(&wr, &bad) == 0);
        // The observer never answers: drained as the fabric runs, so that
        // its frames do not stay in flight.
        std::vector<std::vector<uint8_t>> frames;
        std::vector<Tag> seen;
        f.run_until(
            [&] {
              for (const Tag& t : received(observer, &frames)) seen.push_back(t);
              return !seen.empty();
            },
            1'000'000);
        REQUIRE_FALSE(seen.empty());
        CHECK(seen[0].present);
        CHECK(seen[0].vid == 42);
        CHECK(seen[0].pcp == (sl ? sl : 6));
        // An independent reading of the frame: the parser's, ICRC and all.
        wire::PacketView v;
        wire::ParseOptions po;
        po.verify_icrc = true;
        REQUIRE(wire::parse_frame(frames[0], v, po) == wire::ParseError::ok);
        CHECK(v.vlan);
        CHECK(v.l3_off == wire::kEthHeaderLen + wire::kVlanTagLen);
        CHECK(v.bth().dest_qp() == c.qp->qp_num());
      }
    }
  }
}

namespace {

// b on VLAN `vid_b` (-1: untagged) and a WRITE into it from a third port,
// built with a's addresses: tagged with `frame_vid` (-1: untagged), in
// the frame or, with `stripped`, in the mbuf as a port that strips tags
// hands it over.
struct Intruder {
  Intruder(int vid_b) : f(703, 1500) {
    da = &f.add_device("10.0.0.1", on_vlan(vid_b, 0));
    db = &f.add_device("10.0.0.2", on_vlan(vid_b, 0));
    Opts o;
    test::connect_pair(a, *da, with_psn(o, 10), b, *db, with_psn(o, 20));
    port = &f.wire().add_port(kObserverMac, 1500);
  }

  void write(int frame_vid, bool stripped, uint8_t fill_byte) {
    wire::PacketFields p;
    p.eth.dst = f.port(1).mac();
    p.eth.src = f.port(0).mac();
    p.eth.has_vlan = frame_vid >= 0 && !stripped;
    p.eth.vlan_tci = uint16_t(frame_vid < 0 ? 0 : frame_vid);
    p.ip.src = da->gids()[0];
    p.ip.dst = db->gids()[0];
    p.bth.opcode = wire::op::RC_RDMA_WRITE_ONLY;
    p.bth.dest_qp = b.qp->qp_num();
    p.bth.psn = 10;
    p.bth.ack_req = true;
    p.payload_len = 64;
    p.ext.reth_va = b.addr(0);
    p.ext.reth_rkey = b.mr->rkey();
    p.ext.reth_dma_len = 64;
    const std::vector<uint8_t> payload(64, fill_byte);
    std::vector<uint8_t> frame(512);
    wire::FrameLayout lay;
    REQUIRE(wire::build_frame(p, payload, frame, lay) == wire::BuildError::ok);
    frame.resize(lay.frame_len);
    rte_mbuf* m = test::mbuf_from_bytes(pool.get(), frame);
    if (stripped) {
      m->ol_flags |= RTE_MBUF_F_RX_VLAN | RTE_MBUF_F_RX_VLAN_STRIPPED;
      m->vlan_tci = uint16_t(frame_vid);
    }
    REQUIRE(port->tx_burst(&m, 1) == 1);
    f.run_for(1'000'000);
  }

  sim::SimFabric f;
  Device* da = nullptr;
  Device* db = nullptr;
  Node a, b;
  sim::SimPort* port = nullptr;
  test::TestPool pool{15, 2048};
};

}  // namespace

TEST_CASE("A device takes frames of its own VLAN only, tag in the frame or stripped by the port", "[vlan]") {
  struct Case {
    const char* what;
    int device_vid;
    int frame_vid;
    bool stripped;
    bool taken;
  };
  const Case cases[] = {
      {"VLAN 100 device, VLAN 100 frame", 100, 100, false, true},
      {"VLAN 100 device, VLAN 100 stripped into the mbuf", 100, 100, true, true},
      {"VLAN 100 device, VLAN 200 frame", 100, 200, false, false},
      {"VLAN 100 device, VLAN 200 stripped into the mbuf", 100, 200, true, false},
      {"VLAN 100 device, untagged frame", 100, -1, false, false},
      {"VLAN 100 device, priority-tagged frame", 100, 0, false, false},
      {"untagged device, untagged frame", -1, -1, false, true},
      {"untagged device, priority-tagged frame", -1, 0, false, true},
      {"untagged device, priority tag stripped into the mbuf", -1, 0, true, true},
      {"untagged device, VLAN 100 frame", -1, 100, false, false},
      {"untagged device, VLAN 100 stripped into the mbuf", -1, 100, true, false},
      {"priority-tagging device (VLAN id 0), untagged frame", 0, -1, false, true},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.what) {
      Intruder x(c.device_vid);
      std::memset(x.b.buf(), 0, 64);
      const uint64_t other_before = x.db->counters().rx_other_host;
      x.write(c.frame_vid, c.stripped, 0xEE);
      CHECK(x.b.qp->counters().rcvd_pkts == (c.taken ? 1u : 0u));
      CHECK(x.b.buf()[0] == (c.taken ? 0xEE : 0));
      CHECK(x.db->counters().rx_other_host == other_before + (c.taken ? 0u : 1u));
    }
  }
}

TEST_CASE("Two QPs of one tagged device: the looped-back frames carry the device's own tag", "[vlan]") {
  sim::SimFabric f(705, 1500);
  Device& d = f.add_device("10.0.0.1", on_vlan(300, 2));
  Opts o;
  Node a, b;
  test::connect_pair(a, d, with_psn(o, 1), b, d, with_psn(o, 2));
  fill(a.buf(), 4096, 9);
  REQUIRE(post_wr(a, IBV_WR_RDMA_WRITE, 1, 0, 4096, b.addr(0), b.key()) == 0);
  auto wa = wait_cq(f, *a.cq, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(a.buf(), b.buf(), 4096) == 0);
  CHECK(d.counters().rx_other_host == 0);
}

TEST_CASE("A device's VLAN id and PCP are checked when it opens", "[vlan]") {
  sim::SimFabric f(704, 1500);
  for (auto [vid, pcp] : {std::pair{4095, 0}, std::pair{-2, 0}, std::pair{5, 8}}) {
    DYNAMIC_SECTION("VLAN " << vid << " PCP " << pcp) {
      std::string msg;
      try {
        f.add_device("10.0.0.1", on_vlan(vid, uint8_t(pcp)));
      } catch (const std::runtime_error& e) {
        msg = e.what();
      }
      CHECK(msg.find("out of range") != std::string::npos);
    }
  }
}
