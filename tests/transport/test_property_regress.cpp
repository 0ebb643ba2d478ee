// SPDX-License-Identifier: BSD-3-Clause
// Minimal directed reproductions of what the randomized property test found,
// so that each finding stays covered by a short deterministic test of its own.
#include "rc_pair.h"

using namespace uroce;
using namespace uroce::test;

namespace {

bool saw_rnr(RcPair& p) { return p.a.qp->counters().rcvd_rnr_err > 0; }

}  // namespace

// Found by seed 103 of transport-property-clean. A fenced READ goes out
// behind a SEND that meets no receive (RNR NAK). The go-back rewinds the
// READ to "posted" but it keeps its READ/atomic credit, so when it comes up
// again the fence sees one READ outstanding -- itself -- and waits for it
// forever (and with the front WQE "posted" no ACK timer runs). IBA 10.8.3.3:
// a fence waits only for READs and atomics posted *before* it.
TEST_CASE("A fenced READ rewound by an RNR NAK is sent again and completes", "[property-regress]") {
  RcPair p;
  for (size_t i = 0; i < 4096; ++i) p.b.buf()[200000 + i] = uint8_t(i * 7 + 1);
  REQUIRE(post_wr(p.a, IBV_WR_SEND, 1, 0, 100) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_READ, 2, 100000, 4096, p.b.addr(200000), p.b.mr->rkey(),
                    IBV_SEND_SIGNALED | IBV_SEND_FENCE) == 0);
  REQUIRE(p.fabric.run_until([&] { return saw_rnr(p); }, 1'000'000'000ull));
  REQUIRE(post_recv(p.b, 10, 0, 100) == 0);
  auto wa = p.wait(p.a, 2, 1'000'000'000ull);
  REQUIRE(wa.size() == 2);
  CHECK(wa[0].wr_id == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(wa[1].wr_id == 2);
  CHECK(wa[1].status == IBV_WC_SUCCESS);
  CHECK(wa[1].opcode == IBV_WC_RDMA_READ);
  CHECK(std::memcmp(p.a.buf() + 100000, p.b.buf() + 200000, 4096) == 0);
}

// Found by seed 203 of transport-property-lossy (40 Gb/s links, long READs).
// A READ response that fills the responder's whole mbuf pool leaves a SEND
// posted on another QP of that device with no mbuf for its first packet.
// The requester gives up for now, but nothing brings it back: the QP is not
// rescheduled (Engine::run_tx reschedules only when the TX backlog is full)
// and no ACK timer runs (it is armed only after a packet went out). When the
// mbufs return, the SEND must still go out.
TEST_CASE("A send that found the mbuf pool empty goes out once mbufs return", "[property-regress]") {
  sim::SimFabric fabric(7, 1500);
  Device& da = fabric.add_device("10.0.0.1");
  DeviceConfig small;
  small.mbufs = 511;  // the smallest pool DPDK allows with the engine's per-core cache of 256
  Device& db = fabric.add_device("10.0.0.2", small);
  sim::LinkFaults slow;
  slow.latency_ns = 100'000;  // the READ response stays in flight (holding B's mbufs) for 100 us
  fabric.wire().set_faults(slow);
  QpOptions o;
  Side a1, b1, a2, b2;
  connect_pair(a1, da, with_psn(o, 100), b1, db, with_psn(o, 200));
  o.bytes = 1 << 16;
  connect_pair(a2, da, with_psn(o, 300), b2, db, with_psn(o, 400));

  // 600 response packets from B: more than its pool holds.
  REQUIRE(post_wr(a1, IBV_WR_RDMA_READ, 1, 0, 600 * 1024, b1.addr(0), b1.mr->rkey()) == 0);
  REQUIRE(fabric.run_until([&] { return db.counters().tx_no_mbuf > 0; }, 1'000'000'000ull));
  REQUIRE(post_recv(a2, 20, 0, 1000) == 0);
  REQUIRE(post_wr(b2, IBV_WR_SEND, 2, 0, 1000) == 0);

  std::vector<ibv_wc> got_a, got_b;
  fabric.run_until(
      [&] {
        ibv_wc wc[8];
        int k;
        while ((k = a1.cq->poll(8, wc)) > 0) got_a.insert(got_a.end(), wc, wc + k);
        while ((k = a2.cq->poll(8, wc)) > 0) got_a.insert(got_a.end(), wc, wc + k);
        while ((k = b2.cq->poll(8, wc)) > 0) got_b.insert(got_b.end(), wc, wc + k);
        return got_a.size() == 2 && got_b.size() == 1;
      },
      1'000'000'000ull);
  INFO("B: tx_no_mbuf " << db.counters().tx_no_mbuf << ", SEND QP sent " << b2.qp->counters().sent_pkts
                        << " packet(s)");
  REQUIRE(got_b.size() == 1);
  CHECK(got_b[0].wr_id == 2);
  CHECK(got_b[0].status == IBV_WC_SUCCESS);
  REQUIRE(got_a.size() == 2);
  for (const ibv_wc& wc : got_a) CHECK(wc.status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(a2.buf(), b2.buf(), 1000) == 0);
}

// Found by seed 1009 (10 % loss) of a wider sweep: a QP ended with
// IBV_WC_RETRY_EXC_ERR although the responder kept accepting its packets.
// An ACK acknowledges every PSN up to its own (IBA 9.7.5.1; rxe moves
// comp.psn and resets the retry counters on any ACK). The completer takes
// an ACK that falls inside a multi-packet SEND/WRITE only while that WQE is
// still being sent; once its last packet is out, such ACKs are ignored, so
// the oldest unacknowledged PSN stays put, a timeout resends packets the
// responder already acknowledged, and the retry counter is never reloaded.
// Here: a 20-packet WRITE, window 16, AckReq every 4 packets, on a 1 Gb/s
// link so the ACKs come back one by one. The requester sends 0..15, gets
// ACK(3), sends 16..19 (the last packet: the WQE is fully sent) into a cut
// link, then gets ACK(7), ACK(11) and ACK(15). After the timeout only
// 16..19 are unacknowledged, so only those 4 may be sent again.
TEST_CASE("After ACKs inside a fully sent message, a timeout resends only unacknowledged PSNs",
          "[property-regress]") {
  sim::SimFabric fabric(11, 1500);
  DeviceConfig cfg;
  cfg.max_unacked_psns = 16;
  cfg.ack_req_every = 4;
  Device& da = fabric.add_device("10.0.0.1", cfg);
  Device& db = fabric.add_device("10.0.0.2");
  sim::LinkFaults gbit;
  gbit.bandwidth_bps = 1'000'000'000;
  fabric.wire().set_link_faults(fabric.port(0), fabric.port(1), gbit);
  QpOptions o;
  o.timeout = 10;  // 4.2 ms: far later than every ACK
  o.bytes = 1 << 16;
  Side a, b;
  connect_pair(a, da, with_psn(o, 1000), b, db, with_psn(o, 2000));
  for (size_t i = 0; i < 20 * 1024; ++i) a.buf()[i] = uint8_t(i * 11 + 3);

  REQUIRE(post_wr(a, IBV_WR_RDMA_WRITE, 1, 0, 20 * 1024, b.addr(0), b.mr->rkey()) == 0);
  // Packets 0..15 are on the wire; whatever the requester sends next is lost.
  REQUIRE(fabric.run_until([&] { return a.qp->counters().sent_pkts >= 16; }, 1'000'000));
  REQUIRE(a.qp->counters().sent_pkts == 16);
  fabric.wire().cut_one_way(fabric.port(0), fabric.port(1));
  const auto& cut = fabric.wire().counters(fabric.port(0), fabric.port(1));
  REQUIRE(fabric.run_until([&] { return a.qp->counters().local_ack_timeout_err >= 1; }, 100'000'000));
  INFO("frames lost to the cut: 4 first sends of 16..19, then the retransmission");
  CHECK(b.qp->counters().rcvd_pkts == 16);
  CHECK(cut.cut == 8);  // 16..19 twice; 4..19 again would be 20
  fabric.wire().cut_one_way(fabric.port(0), fabric.port(1), false);

  std::vector<ibv_wc> got;
  fabric.run_until(
      [&] {
        ibv_wc wc[4];
        int k;
        while ((k = a.cq->poll(4, wc)) > 0) got.insert(got.end(), wc, wc + k);
        return !got.empty();
      },
      1'000'000'000ull);
  REQUIRE(got.size() == 1);
  CHECK(got[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(a.buf(), b.buf(), 20 * 1024) == 0);
}
