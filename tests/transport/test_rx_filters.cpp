// SPDX-License-Identifier: BSD-3-Clause
// What a device must refuse although the packet names the right QP, PSN
// and key with a valid ICRC: frames for another host (MAC or IP), RoCE in
// a broadcast or group frame, a wrong
// IPv4 header checksum (unless the port vouches for it), a wrong
// non-zero UDP checksum, a payload that breaks the path MTU (ONLY, FIRST
// or MIDDLE), a SEND with invalidate naming a key that cannot be
// invalidated, an ACK with a reserved AETH syndrome, and a READ response or
// atomic ACK whose AETH is not an ACK. Hand-built frames enter the
// simulated wire from a port of their own, as a third host (or a
// promiscuous port) would.
#include <rte_mbuf.h>

#include <algorithm>

#include "../common/frame_reseal.h"
#include "../common/mbuf_test_util.h"
#include "negative_util.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/ext_headers.h"
#include "uroce/wire/icrc.h"
#include "uroce/wire/parser.h"
#include "uroce/wire/opcode.h"

using namespace uroce;
using namespace uroce::vt;

namespace {

// A third port on the pair's wire that sends hand-built frames.
struct Injector {
  explicit Injector(Pair& p) : pair(p), port(p.fabric.wire().add_port(wire::MacAddr{{0x02, 0, 0, 0, 0, 0x99}}, 9000)) {}

  // A request to b's QP as a would send it: a's addresses, b's QPN, the
  // PSN b expects.
  wire::PacketFields request_to_b(uint8_t opcode, uint32_t payload_len) const {
    wire::PacketFields f;
    f.eth.dst = pair.port_b().mac();
    f.eth.src = pair.port_a().mac();
    f.ip.ipv6 = !pair.b.dev->gids()[0].is_v4_mapped();
    f.ip.src = pair.a.dev->gids()[0];
    f.ip.dst = pair.b.dev->gids()[0];
    f.bth.opcode = opcode;
    f.bth.dest_qp = pair.b.qp->qp_num();
    f.bth.psn = pair.optsa.sq_psn;
    f.bth.ack_req = true;
    f.payload_len = payload_len;
    return f;
  }

  wire::PacketFields write_to_b(uint32_t len, uint64_t off = 0) const {
    wire::PacketFields f = request_to_b(wire::op::RC_RDMA_WRITE_ONLY, len);
    f.ext.reth_va = pair.b.addr(off);
    f.ext.reth_rkey = pair.b.mr->rkey();
    f.ext.reth_dma_len = len;
    return f;
  }

  // An ACKNOWLEDGE (or another response) to a's QP as b would send it.
  wire::PacketFields ack_to_a(uint8_t syndrome, uint32_t psn, uint8_t opcode = wire::op::RC_ACKNOWLEDGE,
                              uint32_t payload_len = 0) const {
    wire::PacketFields f;
    f.eth.dst = pair.port_a().mac();
    f.eth.src = pair.port_b().mac();
    f.ip.ipv6 = !pair.a.dev->gids()[0].is_v4_mapped();
    f.ip.src = pair.b.dev->gids()[0];
    f.ip.dst = pair.a.dev->gids()[0];
    f.bth.opcode = opcode;
    f.bth.dest_qp = pair.a.qp->qp_num();
    f.bth.psn = psn;
    f.ext.aeth_syndrome = syndrome;
    f.ext.aeth_msn = 1;
    f.ext.atomic_ack_orig = 0x1122334455667788ull;
    f.payload_len = payload_len;
    return f;
  }

  // Builds the frame, lets `edit` change its bytes (after the ICRC, which
  // the UDP checksum does not take part in), and puts it on the wire with
  // `ol_flags` as a NIC would have set them.
  // seg_len > 0 cuts the frame into mbuf segments of that size.
  void send(const wire::PacketFields& f, uint8_t fill_byte, const wire::BuildOptions& opts = {},
            uint64_t ol_flags = 0, const std::function<void(std::vector<uint8_t>&, const wire::FrameLayout&)>& edit = {},
            uint16_t seg_len = 0) {
    const std::vector<uint8_t> payload(f.payload_len, fill_byte);
    std::vector<uint8_t> frame(f.payload_len + 256);
    wire::FrameLayout lay;
    REQUIRE(wire::build_frame(f, payload, frame, lay, opts) == wire::BuildError::ok);
    frame.resize(lay.frame_len);
    if (edit) edit(frame, lay);
    rte_mbuf* m = test::mbuf_from_bytes(pool.get(), frame, seg_len);
    m->ol_flags |= ol_flags;
    REQUIRE(port.tx_burst(&m, 1) == 1);
    pair.run_for(1'000'000);
  }

  void send_frame(const std::vector<uint8_t>& frame, uint16_t seg_len = 0) {
    rte_mbuf* m = test::mbuf_from_bytes(pool.get(), frame, seg_len);
    REQUIRE(port.tx_burst(&m, 1) == 1);
    pair.run_for(1'000'000);
  }

  Pair& pair;
  test::TestPool pool{63, 9216};
  sim::SimPort& port;
};

// A WRITE_ONLY with a payload over 4096 bytes, which the builder refuses:
// built with 4096, then the payload, lengths and ICRC redone.
std::vector<uint8_t> long_write_frame(wire::PacketFields f, uint32_t len, uint8_t fill_byte) {
  f.payload_len = 4096;
  f.ext.reth_dma_len = len;
  const std::vector<uint8_t> payload(4096, fill_byte);
  std::vector<uint8_t> frame(4096 + 256);
  wire::FrameLayout lay;
  REQUIRE(wire::build_frame(f, payload, frame, lay) == wire::BuildError::ok);
  frame.resize(lay.payload_off);
  frame.insert(frame.end(), len, fill_byte);
  frame.insert(frame.end(), 4, 0);  // len is a multiple of 4: no pad
  test::reseal(frame);
  wire::PacketView v;
  wire::ParseOptions o;
  o.verify_icrc = true;
  o.allow_long_payload = true;
  REQUIRE(wire::parse_frame(frame, v, o) == wire::ParseError::ok);
  REQUIRE(v.payload_len == len);
  return frame;
}

// The UDP checksum field of a built frame.
uint16_t udp_checksum_of(const std::vector<uint8_t>& frame, const wire::FrameLayout& lay) {
  return uint16_t(frame[lay.l4_off + 6] << 8 | frame[lay.l4_off + 7]);
}
void set_udp_checksum(std::vector<uint8_t>& frame, const wire::FrameLayout& lay, uint16_t v) {
  frame[lay.l4_off + 6] = uint8_t(v >> 8);
  frame[lay.l4_off + 7] = uint8_t(v);
}

// The real peer's WRITE at the PSN the injected frame used still goes
// through, so the QP neither moved on nor broke.
void expect_peer_write_works(Pair& p) {
  fill(p.a.buf(), 64, 7);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 77, 0, 64, p.b.addr(0), p.b.key()) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(), 64) == 0);
}

}  // namespace

TEST_CASE("A request to another destination IP is not executed", "[rx-filter]") {
  for (const char* other : {"10.0.0.77", "10.0.0.1"}) {  // a stranger, and the sender itself
    DYNAMIC_SECTION("destination " << other) {
      Pair p(301);
      Injector inj(p);
      std::memset(p.b.buf(), 0, 64);
      wire::PacketFields f = inj.write_to_b(64);
      REQUIRE(wire::IpAddr::parse(other, f.ip.dst));
      inj.send(f, 0xEE);
      CHECK(p.b.dev->counters().rx_other_ip == 1);
      CHECK(p.b.qp->counters().rcvd_pkts == 0);
      CHECK(p.b.buf()[0] == 0);
      expect_peer_write_works(p);
    }
  }
}

TEST_CASE("A request to another host's MAC is not executed", "[rx-filter]") {
  // The simulated wire floods unknown unicast to every port, as a switch
  // does: a promiscuous or af_packet port sees such frames.
  for (const wire::MacAddr other : {wire::MacAddr{{0x02, 0, 0, 0, 0, 0x55}}, wire::MacAddr{{0x01, 0, 0x5e, 0, 0, 1}},
                                    wire::MacAddr{{0x33, 0x33, 0, 0, 0, 1}}}) {
    DYNAMIC_SECTION("destination " << other.to_string()) {
      Pair p(302);
      Injector inj(p);
      std::memset(p.b.buf(), 0, 64);
      wire::PacketFields f = inj.write_to_b(64);
      f.eth.dst = other;
      inj.send(f, 0xEE);
      CHECK(p.b.dev->counters().rx_other_host == 1);
      CHECK(p.b.qp->counters().rcvd_pkts == 0);
      CHECK(p.b.buf()[0] == 0);
      expect_peer_write_works(p);
    }
  }
}

TEST_CASE("A request to broadcast or to a group the device joined (for ND) is not executed", "[rx-filter]") {
  // The device takes frames to these groups for ARP and neighbour
  // discovery, but RoCE is unicast: a request in such a frame is dropped.
  struct Case {
    const char* what;
    bool v6;
    wire::MacAddr dst;
  };
  const Case cases[] = {
      {"IPv4, broadcast", false, wire::MacAddr{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}}},
      {"IPv6, broadcast", true, wire::MacAddr{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}}},
      {"IPv6, b's solicited-node group", true, wire::MacAddr{{0x33, 0x33, 0xFF, 0, 0, 0x02}}},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.what) {
      Pair p(316, Pair::default_a(), Pair::default_b(), 1500, c.v6 ? "fd00::1" : "10.0.0.1",
             c.v6 ? "fd00::2" : "10.0.0.2");
      Injector inj(p);
      std::memset(p.b.buf(), 0, 64);
      wire::PacketFields f = inj.write_to_b(64);
      f.eth.dst = c.dst;
      const uint64_t before = p.b.dev->counters().rx_other_host;
      inj.send(f, 0xEE);
      CHECK(p.b.dev->counters().rx_other_host == before + 1);
      CHECK(p.b.qp->counters().rcvd_pkts == 0);
      CHECK(p.b.buf()[0] == 0);
      expect_peer_write_works(p);
    }
  }
}

TEST_CASE("Neighbour resolution still works with the MAC filter (ARP broadcast, ND solicited-node group)",
          "[rx-filter]") {
  for (const char* family : {"IPv4", "IPv6"}) {
    DYNAMIC_SECTION(family) {
      const bool v6 = std::string(family) == "IPv6";
      sim::SimFabric f(303);
      f.static_neighbors = false;
      Device& a = f.add_device(v6 ? "fd00::1" : "10.0.0.1");
      Device& b = f.add_device(v6 ? "fd00::2" : "10.0.0.2");
      REQUIRE(a.resolve_neighbor(b.gids()[0]) != NeighborState::reachable);
      f.run_until([&] { return a.resolve_neighbor(b.gids()[0]) == NeighborState::reachable; }, 1'000'000'000ull);
      CHECK(a.resolve_neighbor(b.gids()[0]) == NeighborState::reachable);
      CHECK(b.counters().rx_other_host == 0);
    }
  }
}

TEST_CASE("UDP checksum: zero is accepted, a wrong non-zero one is dropped, a NIC's verdict is used",
          "[rx-filter]") {
  for (const char* family : {"IPv4", "IPv6"}) {
    const bool v6 = std::string(family) == "IPv6";
    const char* ip_a = v6 ? "fd00::1" : "10.0.0.1";
    const char* ip_b = v6 ? "fd00::2" : "10.0.0.2";
    wire::BuildOptions with_sum;
    with_sum.compute_udp_checksum = true;
    DYNAMIC_SECTION(family << ": wrong non-zero checksum") {
      Pair p(304, Pair::default_a(), Pair::default_b(), 1500, ip_a, ip_b);
      Injector inj(p);
      std::memset(p.b.buf(), 0, 64);
      inj.send(inj.write_to_b(64), 0xEE, with_sum, 0, [](std::vector<uint8_t>& fr, const wire::FrameLayout& lay) {
        const uint16_t good = udp_checksum_of(fr, lay);
        REQUIRE(good != 0);
        set_udp_checksum(fr, lay, good == 0x1234 ? 0x4321 : 0x1234);
      });
      CHECK(p.b.dev->counters().rx_udp_csum_err == 1);
      CHECK(p.b.qp->counters().rcvd_pkts == 0);
      CHECK(p.b.buf()[0] == 0);
      expect_peer_write_works(p);
    }
    DYNAMIC_SECTION(family << ": right non-zero checksum") {
      Pair p(305, Pair::default_a(), Pair::default_b(), 1500, ip_a, ip_b);
      Injector inj(p);
      std::memset(p.b.buf(), 0, 1000);
      inj.send(inj.write_to_b(1000), 0xEE, with_sum);
      CHECK(p.b.dev->counters().rx_udp_csum_err == 0);
      CHECK(p.b.buf()[999] == 0xEE);
      CHECK(p.b.qp->counters().rcvd_pkts == 1);
    }
    DYNAMIC_SECTION(family << ": zero checksum (rxe's tunnel socket takes it on IPv6 too)") {
      Pair p(306, Pair::default_a(), Pair::default_b(), 1500, ip_a, ip_b);
      Injector inj(p);
      std::memset(p.b.buf(), 0, 64);
      inj.send(inj.write_to_b(64), 0xEE);
      CHECK(p.b.dev->counters().rx_udp_csum_err == 0);
      CHECK(p.b.buf()[63] == 0xEE);
    }
    DYNAMIC_SECTION(family << ": the port says the checksum is bad") {
      Pair p(307, Pair::default_a(), Pair::default_b(), 1500, ip_a, ip_b);
      Injector inj(p);
      std::memset(p.b.buf(), 0, 64);
      inj.send(inj.write_to_b(64), 0xEE, with_sum, RTE_MBUF_F_RX_L4_CKSUM_BAD);
      CHECK(p.b.dev->counters().rx_udp_csum_err == 1);
      CHECK(p.b.buf()[0] == 0);
    }
    DYNAMIC_SECTION(family << ": the port says the checksum is good: not checked again") {
      Pair p(308, Pair::default_a(), Pair::default_b(), 1500, ip_a, ip_b);
      Injector inj(p);
      std::memset(p.b.buf(), 0, 64);
      inj.send(inj.write_to_b(64), 0xEE, with_sum, RTE_MBUF_F_RX_L4_CKSUM_GOOD,
               [](std::vector<uint8_t>& fr, const wire::FrameLayout& lay) {
                 set_udp_checksum(fr, lay, uint16_t(udp_checksum_of(fr, lay) ^ 0x0101));
               });
      CHECK(p.b.dev->counters().rx_udp_csum_err == 0);
      CHECK(p.b.buf()[0] == 0xEE);
    }
  }
}

TEST_CASE("IPv4 header checksum: a wrong one is dropped, unless the port says the header is good", "[rx-filter]") {
  const auto break_ip_sum = [](std::vector<uint8_t>& fr, const wire::FrameLayout& lay) { fr[lay.l3_off + 11] ^= 0x01; };
  SECTION("no verdict from the port: checked, dropped") {
    Pair p(312);
    Injector inj(p);
    std::memset(p.b.buf(), 0, 64);
    inj.send(inj.write_to_b(64), 0xEE, {}, 0, break_ip_sum);
    CHECK(p.b.dev->counters().rx_invalid == 1);
    CHECK(p.b.buf()[0] == 0);
    expect_peer_write_works(p);
  }
  SECTION("the port says it is good: not checked again") {
    Pair p(313);
    Injector inj(p);
    std::memset(p.b.buf(), 0, 64);
    inj.send(inj.write_to_b(64), 0xEE, {}, RTE_MBUF_F_RX_IP_CKSUM_GOOD, break_ip_sum);
    CHECK(p.b.dev->counters().rx_invalid == 0);
    CHECK(p.b.buf()[0] == 0xEE);
  }
}

TEST_CASE("A payload that breaks the path MTU: NAK invalid request, the responder QP goes to ERR", "[rx-filter]") {
  // b's path MTU is 1024 (QpOptions), the port's 1500 carries more.
  struct Case {
    const char* what;
    uint8_t opcode;
    uint32_t payload;
  };
  const Case cases[] = {
      {"WRITE_ONLY over the PMTU", wire::op::RC_RDMA_WRITE_ONLY, 1200},
      {"WRITE_FIRST over the PMTU", wire::op::RC_RDMA_WRITE_FIRST, 1100},
      {"WRITE_FIRST under the PMTU", wire::op::RC_RDMA_WRITE_FIRST, 512},
      {"SEND_ONLY over the PMTU", wire::op::RC_SEND_ONLY, 1028},
      {"SEND_FIRST under the PMTU", wire::op::RC_SEND_FIRST, 1000},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.what) {
      Pair p(309);
      Injector inj(p);
      REQUIRE(post_recv(p.b, 5, 0, 4096) == 0);
      std::memset(p.b.buf(), 0, 4096);
      wire::PacketFields f = inj.request_to_b(c.opcode, c.payload);
      if (wire::opcode_info(c.opcode).has_ext(wire::Ext::reth)) {
        f.ext.reth_va = p.b.addr(0);
        f.ext.reth_rkey = p.b.mr->rkey();
        f.ext.reth_dma_len = c.opcode == wire::op::RC_RDMA_WRITE_ONLY ? c.payload : 4096;
      }
      inj.send(f, 0xEE);
      CHECK(p.b.qp->counters().nak_sent == 1);
      CHECK(p.b.qp->state() == IBV_QPS_ERR);
      CHECK(p.b.buf()[0] == 0);
      auto wb = drain(*p.b.cq);
      REQUIRE(!wb.empty());
      CHECK(wb[0].status != IBV_WC_SUCCESS);
    }
  }
}

TEST_CASE("A MIDDLE packet of another length than the path MTU: NAK invalid request at its PSN, the QP to ERR",
          "[rx-filter]") {
  // As rxe's length check: FIRST and MIDDLE carry exactly the path MTU
  // (1024 here), ONLY and LAST at most that. The FIRST before it is valid
  // and lands; nothing of the MIDDLE may.
  struct Case {
    const char* what;
    uint8_t first, middle;
    uint32_t payload;
  };
  const Case cases[] = {
      {"WRITE_MIDDLE over the PMTU", wire::op::RC_RDMA_WRITE_FIRST, wire::op::RC_RDMA_WRITE_MIDDLE, 1100},
      {"WRITE_MIDDLE under the PMTU", wire::op::RC_RDMA_WRITE_FIRST, wire::op::RC_RDMA_WRITE_MIDDLE, 512},
      {"SEND_MIDDLE over the PMTU", wire::op::RC_SEND_FIRST, wire::op::RC_SEND_MIDDLE, 1100},
      {"SEND_MIDDLE under the PMTU", wire::op::RC_SEND_FIRST, wire::op::RC_SEND_MIDDLE, 512},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.what) {
      Pair p(314);
      Injector inj(p);
      const bool send = c.first == wire::op::RC_SEND_FIRST;
      REQUIRE(post_recv(p.b, 5, 0, 4096) == 0);
      std::memset(p.b.buf(), 0, 4096);
      wire::PacketFields first = inj.request_to_b(c.first, 1024);
      first.bth.ack_req = false;
      if (!send) {
        first.ext.reth_va = p.b.addr(0);
        first.ext.reth_rkey = p.b.mr->rkey();
        first.ext.reth_dma_len = 3072;
      }
      inj.send(first, 0xEE);
      REQUIRE(p.b.qp->state() == IBV_QPS_RTS);
      CHECK(p.b.qp->counters().nak_sent == 0);
      wire::PacketFields middle = inj.request_to_b(c.middle, c.payload);
      middle.bth.psn = (first.bth.psn + 1) & 0xFFFFFF;
      inj.send(middle, 0xDD);
      CHECK(p.b.qp->counters().nak_sent == 1);
      CHECK(p.b.qp->state() == IBV_QPS_ERR);
      CHECK(p.b.buf()[0] == 0xEE);
      CHECK(p.b.buf()[1023] == 0xEE);
      CHECK(p.b.buf()[1024] == 0);
      auto wb = drain(*p.b.cq);
      REQUIRE(wb.size() == 1);
      CHECK(wb[0].wr_id == 5);
      // The SEND's receive fails with the message; the WRITE took none, so
      // its receive is flushed with the QP.
      CHECK(int(wb[0].status) == int(send ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_WR_FLUSH_ERR));
    }
  }
}

TEST_CASE("A payload over 4096 bytes on a jumbo port is NAKed for the path MTU, not dropped", "[rx-filter]") {
  // Port MTU 9000, path MTU 4096: a WRITE_ONLY of 5000 bytes fits the
  // port, not the path. In one segment and gathered from several.
  for (uint16_t seg : {uint16_t(0), uint16_t(2048)}) {
    DYNAMIC_SECTION("segments of " << seg) {
      Opts oa = Pair::default_a(), ob = Pair::default_b();
      oa.mtu = ob.mtu = IBV_MTU_4096;
      Pair p(312, oa, ob, 9000);
      Injector inj(p);
      std::memset(p.b.buf(), 0, 8192);
      inj.send_frame(long_write_frame(inj.write_to_b(5000), 5000, 0xEE), seg);
      CHECK(p.b.dev->counters().rx_invalid == 0);
      CHECK(p.b.qp->counters().nak_sent == 1);
      CHECK(p.b.qp->state() == IBV_QPS_ERR);
      CHECK(p.b.buf()[0] == 0);
    }
  }
}

TEST_CASE("The UDP checksum of a frame in odd-sized segments is summed right", "[rx-filter]") {
  wire::BuildOptions with_sum;
  with_sum.compute_udp_checksum = true;
  for (uint16_t seg : {uint16_t(61), uint16_t(333), uint16_t(1000)}) {
    for (bool corrupt : {false, true}) {
      DYNAMIC_SECTION("segments of " << seg << (corrupt ? ", wrong checksum" : ", right checksum")) {
        Pair p(313);
        Injector inj(p);
        std::memset(p.b.buf(), 0, 1000);
        inj.send(inj.write_to_b(998), 0xEE, with_sum, 0,
                 [corrupt](std::vector<uint8_t>& fr, const wire::FrameLayout& lay) {
                   if (corrupt) set_udp_checksum(fr, lay, uint16_t(udp_checksum_of(fr, lay) + 1) | 1);
                 },
                 seg);
        CHECK(p.b.dev->counters().rx_udp_csum_err == (corrupt ? 1u : 0u));
        CHECK(p.b.buf()[997] == (corrupt ? 0 : 0xEE));
      }
    }
  }
}

TEST_CASE("SEND with invalidate naming an ordinary region's key: NAK invalid request, nothing invalidated",
          "[rx-filter]") {
  // Only memory windows and fast-registered regions can be invalidated by
  // the peer; a region from reg_mr cannot.
  Pair p(310);
  ibv_sge s = sge(p.a, 0, 100);
  SendWr wr = make_wr(IBV_WR_SEND_WITH_INV, 1, &s);
  wr.invalidate_rkey = p.b.mr->rkey();
  expect_fatal(p, wr, IBV_WC_REM_INV_REQ_ERR);
  CHECK(p.b.qp->counters().nak_sent == 1);
  CHECK(p.b.qp->state() == IBV_QPS_ERR);
}

TEST_CASE("An ACK with a reserved AETH syndrome or NAK code fails the WQE, with no retransmission", "[rx-filter]") {
  struct Case {
    const char* what;
    uint8_t syndrome;
    ibv_wc_status want;
  };
  const Case cases[] = {
      {"reserved type, value 0", wire::make_aeth_syndrome(wire::AethType::reserved, 0), IBV_WC_BAD_RESP_ERR},
      {"reserved type, value 31", wire::make_aeth_syndrome(wire::AethType::reserved, 31), IBV_WC_BAD_RESP_ERR},
      {"reserved NAK code 5", wire::make_aeth_syndrome(wire::AethType::nak, 5), IBV_WC_REM_OP_ERR},
      {"reserved NAK code 31", wire::make_aeth_syndrome(wire::AethType::nak, 31), IBV_WC_REM_OP_ERR},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.what) {
      Pair p(311);
      Injector inj(p);
      // a's WRITE never reaches b, so the only answer a sees is ours.
      p.fabric.wire().cut_one_way(p.port_a(), p.port_b());
      REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 1, 0, 64, p.b.addr(0), p.b.key()) == 0);
      p.run_for(100'000);
      const uint64_t sent = p.a.qp->counters().sent_pkts;
      REQUIRE(sent == 1);
      inj.send(inj.ack_to_a(c.syndrome, p.optsa.sq_psn), 0);
      auto wa = drain(*p.a.cq);
      REQUIRE(wa.size() == 1);
      CHECK(int(wa[0].status) == int(c.want));
      CHECK(p.a.qp->state() == IBV_QPS_ERR);
      CHECK(p.a.qp->counters().rcvd_seq_err == 0);
      CHECK(p.a.qp->counters().completer_retry_err == 0);
      CHECK(p.a.qp->counters().sent_pkts == sent);
    }
  }
}

TEST_CASE("A READ response or atomic ACK whose AETH is not an ACK fails the WQE, with no retransmission",
          "[rx-filter]") {
  // rxe's completer takes only an ACK syndrome on READ_RESPONSE_FIRST/ONLY
  // and ATOMIC_ACKNOWLEDGE: any other fails the WQE and the QP, and is
  // never a NAK to act on (no resend, no RNR wait). rxe sets no status of
  // its own for that WQE; uroce reports IBV_WC_BAD_RESP_ERR. Nothing of
  // the response reaches the WQE's buffer.
  using wire::AethType;
  using wire::make_aeth_syndrome;
  struct Case {
    const char* what;
    ibv_wr_opcode wr;
    uint32_t len;  // READ length
    uint8_t opcode;
    uint8_t syndrome;
  };
  const uint8_t nak_seq = make_aeth_syndrome(AethType::nak, uint8_t(wire::NakCode::psn_sequence_error));
  const uint8_t nak_inv = make_aeth_syndrome(AethType::nak, uint8_t(wire::NakCode::invalid_request));
  const uint8_t nak_acc = make_aeth_syndrome(AethType::nak, uint8_t(wire::NakCode::remote_access_error));
  const uint8_t rnr = make_aeth_syndrome(AethType::rnr_nak, 1);
  const uint8_t reserved = make_aeth_syndrome(AethType::reserved, 0);
  const Case cases[] = {
      {"READ_RESPONSE_ONLY with NAK invalid request", IBV_WR_RDMA_READ, 64, wire::op::RC_RDMA_READ_RESPONSE_ONLY, nak_inv},
      {"READ_RESPONSE_ONLY with NAK PSN sequence error", IBV_WR_RDMA_READ, 64, wire::op::RC_RDMA_READ_RESPONSE_ONLY,
       nak_seq},
      {"READ_RESPONSE_ONLY with an RNR NAK", IBV_WR_RDMA_READ, 64, wire::op::RC_RDMA_READ_RESPONSE_ONLY, rnr},
      {"READ_RESPONSE_ONLY with a reserved syndrome", IBV_WR_RDMA_READ, 64, wire::op::RC_RDMA_READ_RESPONSE_ONLY,
       reserved},
      {"READ_RESPONSE_FIRST with NAK remote access error", IBV_WR_RDMA_READ, 2048,
       wire::op::RC_RDMA_READ_RESPONSE_FIRST, nak_acc},
      {"READ_RESPONSE_FIRST with NAK PSN sequence error", IBV_WR_RDMA_READ, 2048,
       wire::op::RC_RDMA_READ_RESPONSE_FIRST, nak_seq},
      {"ATOMIC_ACKNOWLEDGE with NAK remote access error", IBV_WR_ATOMIC_FETCH_AND_ADD, 8,
       wire::op::RC_ATOMIC_ACKNOWLEDGE, nak_acc},
      {"ATOMIC_ACKNOWLEDGE with NAK PSN sequence error", IBV_WR_ATOMIC_FETCH_AND_ADD, 8,
       wire::op::RC_ATOMIC_ACKNOWLEDGE, nak_seq},
      {"ATOMIC_ACKNOWLEDGE with an RNR NAK", IBV_WR_ATOMIC_FETCH_AND_ADD, 8, wire::op::RC_ATOMIC_ACKNOWLEDGE, rnr},
      {"ATOMIC_ACKNOWLEDGE with a reserved syndrome", IBV_WR_ATOMIC_FETCH_AND_ADD, 8, wire::op::RC_ATOMIC_ACKNOWLEDGE,
       make_aeth_syndrome(AethType::reserved, 31)},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.what) {
      Pair p(315);
      Injector inj(p);
      // a's request never reaches b, so the only answer a sees is ours.
      p.fabric.wire().cut_one_way(p.port_a(), p.port_b());
      std::memset(p.a.buf(), 0x3C, 4096);
      if (c.wr == IBV_WR_RDMA_READ) {
        REQUIRE(post_wr(p.a, IBV_WR_RDMA_READ, 1, 0, c.len, p.b.addr(0), p.b.key()) == 0);
      } else {
        REQUIRE(post_atomic(p.a, c.wr, 1, 0, p.b.addr(0), p.b.key(), 5) == 0);
      }
      p.run_for(100'000);
      const uint64_t sent = p.a.qp->counters().sent_pkts;
      REQUIRE(sent == 1);
      const uint32_t payload = c.opcode == wire::op::RC_ATOMIC_ACKNOWLEDGE ? 0 : std::min<uint32_t>(c.len, 1024);
      inj.send(inj.ack_to_a(c.syndrome, p.optsa.sq_psn, c.opcode, payload), 0xEE);
      auto wa = drain(*p.a.cq);
      REQUIRE(wa.size() == 1);
      CHECK(wa[0].wr_id == 1);
      CHECK(int(wa[0].status) == int(IBV_WC_BAD_RESP_ERR));
      CHECK(p.a.qp->state() == IBV_QPS_ERR);
      // Long past the ACK timeout and any RNR wait: nothing sent again.
      p.run_for(kSecond);
      CHECK(p.a.qp->counters().sent_pkts == sent);
      CHECK(p.a.qp->counters().rcvd_seq_err == 0);
      CHECK(p.a.qp->counters().rcvd_rnr_err == 0);
      CHECK(p.a.qp->counters().completer_retry_err == 0);
      CHECK(drain(*p.a.cq).empty());
      for (size_t i = 0; i < 4096; ++i)
        if (p.a.buf()[i] != 0x3C) {
          FAIL_CHECK("a's byte " << i << " changed");
          break;
        }
    }
  }
}
