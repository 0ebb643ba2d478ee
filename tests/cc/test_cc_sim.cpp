// SPDX-License-Identifier: BSD-3-Clause
// The DCQCN loop end to end on the simulated wire: CE marks at the
// receiver -> CNPs (format, spacing) -> the sender's RP slows and paces its
// packets -> line rate again once the marks stop. And cc none: marks
// counted, nothing else.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "../common/mbuf_test_util.h"
#include "cc_pair.h"
#include "uroce/wire/builder.h"
#include "uroce/capture/pcap_file.h"
#include "uroce/wire/parser.h"

using namespace uroce;
using namespace uroce::test;

namespace {

cc::CcConfig dcqcn(uint64_t line_mbps = 10000) {
  cc::CcConfig c;
  std::string err;
  REQUIRE(cc::parse_cc("dcqcn", c, err));
  c.line_rate_mbps = line_mbps;
  return c;
}

}  // namespace

TEST_CASE("CE marks make CNPs; the sender slows, then regains line rate", "[cc-sim]") {
  CcPair p(dcqcn());
  p.marker->marking = true;
  REQUIRE(p.write_n(64, 65536));
  const uint64_t marked_phase_ns = p.clock.now_ns();
  const cc::CcStats rx = p.b.qp->cc_stats(), tx = p.a.qp->cc_stats();
  CHECK(rx.ecn_marks == p.marker->marked);
  CHECK(rx.ecn_marks > 0);
  CHECK(rx.cnps_sent > 0);
  CHECK(rx.cnps_sent == p.marker->cnps.size());
  // NP spacing: at most one CNP per min_time_between_cnps (4 µs).
  CHECK(rx.cnps_sent <= marked_phase_ns / 4000 + 1);
  CHECK(rx.cnps_sent < rx.ecn_marks);
  CHECK(tx.cnps_received == rx.cnps_sent);  // a lossless wire
  CHECK(tx.rate_decreases > 0);
  CHECK(tx.limited);
  CHECK(tx.rate_mbps < 10000);
  CHECK(tx.paced_waits > 0);
  CHECK(tx.ecn_marks == 0);  // ACKs were not marked

  // Marks stop: the timer and byte counter bring R_C back to line rate.
  p.marker->marking = false;
  REQUIRE(p.write_n(2000, 65536, 20'000'000'000ull));
  const cc::CcStats after = p.a.qp->cc_stats();
  CHECK_FALSE(after.limited);
  CHECK(after.rate_mbps == 10000);
  CHECK(after.rate_increases > 0);
}

namespace {

// A CNP sets 1000 Mb/s; nothing moves the rate afterwards.
cc::CcConfig fixed_1000() {
  cc::CcConfig c = dcqcn();
  c.dcqcn.rate_to_set_on_first_cnp = 1000;
  c.dcqcn.rpg_ai_rate = c.dcqcn.rpg_hai_rate = 0;
  c.dcqcn.rpg_byte_reset = 0;
  c.dcqcn.rpg_time_reset = 100000000;
  return c;
}

// One WRITE from a, CE-marked at b: b's CNP sets a's QP to its first rate.
void limit_a(CcPair& p) {
  p.marker->marking = true;
  REQUIRE(p.write_n(1, 1024));
  p.marker->marking = false;
}

// Wire rate of `sender`'s packets while `from` posts n WRs of `op`.
double measured_mbps(CcPair& p, Side& sender, Side& from, Side& to, ibv_wr_opcode op) {
  const uint64_t t0 = p.clock.now_ns();
  const uint64_t pkts0 = sender.qp->counters().sent_pkts;
  const uint32_t n = 200, len = 16384;  // 3.2 MB
  REQUIRE(p.post_n(from, to, op, n, len, 5'000'000'000ull));
  const double secs = double(p.clock.now_ns() - t0) / 1e9;
  const uint64_t pkts = sender.qp->counters().sent_pkts - pkts0;
  // Frame bytes: payload plus Eth 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4
  // and RETH or AETH (<= 16) per packet: slightly overcounted.
  const double bits = (double(n) * len + double(pkts) * 74) * 8;
  return bits / secs / 1e6;
}

}  // namespace

TEST_CASE("a paced QP sends at its rate", "[cc-sim]") {
  CcPair p(fixed_1000());
  limit_a(p);
  REQUIRE(p.a.qp->cc_stats().cnps_received >= 1);
  REQUIRE(p.a.qp->cc_stats().rate_mbps == Approx(1000));
  const double mbps = measured_mbps(p, p.a, p.a, p.b, IBV_WR_RDMA_WRITE);
  INFO("WRITE data at " << mbps << " Mb/s");
  CHECK(mbps <= 1000 * 1.03);
  CHECK(mbps >= 1000 * 0.90);
}

TEST_CASE("a paced QP keeps its rate after years of uptime", "[cc-sim]") {
  // The clock counts ns since boot: at 2^56 (2.3 years) a double's step is
  // 16 ns, a fifth of a 1 KB packet's time at 100 Gb/s. The same run must
  // give the rate it gives one second after boot.
  cc::CcConfig c = fixed_1000();
  c.line_rate_mbps = 100000;
  c.dcqcn.rate_to_set_on_first_cnp = 100000;
  double mbps[2];
  for (int i = 0; i < 2; ++i) {
    CcPair p(c);
    p.clock.advance_to(uint64_t(1) << (i == 0 ? 30 : 56));
    limit_a(p);
    REQUIRE(p.a.qp->cc_stats().rate_mbps == Approx(100000));
    mbps[i] = measured_mbps(p, p.a, p.a, p.b, IBV_WR_RDMA_WRITE);
  }
  INFO("WRITE data at " << mbps[0] << " Mb/s from 2^30 ns, " << mbps[1] << " Mb/s from 2^56 ns");
  CHECK(mbps[0] <= 100000 * 1.05);
  CHECK(mbps[0] >= 100000 * 0.90);
  CHECK(mbps[1] == Approx(mbps[0]).epsilon(0.005));
}

TEST_CASE("ACKs a limited QP sends do not count as its data", "[cc-sim]") {
  // Only the byte counter can raise the rate here (timer 100 s): a's QP,
  // limited by one CNP, then only receives, and the ACKs it sends for that
  // must neither feed its byte counter nor take its pacing slots.
  cc::CcConfig c = dcqcn();
  c.dcqcn.rate_to_set_on_first_cnp = 1000;
  c.dcqcn.rpg_byte_reset = 4096;
  c.dcqcn.rpg_time_reset = 100000000;
  CcPair p(c);
  limit_a(p);
  REQUIRE(p.a.qp->cc_stats().limited);
  const uint64_t increases = p.a.qp->cc_stats().rate_increases;
  const uint64_t acks0 = p.a.qp->counters().sent_pkts;
  REQUIRE(p.post_n(p.b, p.a, IBV_WR_RDMA_WRITE, 200, 16384, 5'000'000'000ull));
  const uint64_t acks = p.a.qp->counters().sent_pkts - acks0;
  INFO(acks << " ACKs sent by a");
  REQUIRE(acks * 62 > 3 * 4096);  // enough bytes for three byte-counter events, if they counted
  CHECK(p.a.qp->cc_stats().rate_increases == increases);
  CHECK(p.a.qp->cc_stats().paced_waits == 0);
}

TEST_CASE("READ responses are paced by the responder's RP", "[cc-sim]") {
  CcPair p(fixed_1000());
  // b READs from a: the data flows a -> b, where it is marked; b's CNP
  // slows a's QP, the one sending the responses.
  p.marker->marking = true;
  REQUIRE(p.post_n(p.b, p.a, IBV_WR_RDMA_READ, 1, 4096, 1'000'000'000ull));
  p.marker->marking = false;
  p.run_until([] { return false; }, 100'000);  // the CNP is still on its way
  REQUIRE(p.b.qp->cc_stats().cnps_sent == 1);
  REQUIRE(p.a.qp->cc_stats().rate_mbps == Approx(1000));
  const double mbps = measured_mbps(p, p.a, p.b, p.a, IBV_WR_RDMA_READ);
  INFO("READ responses at " << mbps << " Mb/s");
  CHECK(mbps <= 1000 * 1.03);
  CHECK(mbps >= 1000 * 0.90);
}

TEST_CASE("cc none: CE marks are counted, no CNP, no pacing", "[cc-sim]") {
  CcPair p(cc::CcConfig{});
  p.marker->marking = true;
  REQUIRE(p.write_n(16, 65536));
  const cc::CcStats rx = p.b.qp->cc_stats(), tx = p.a.qp->cc_stats();
  CHECK(rx.ecn_marks == p.marker->marked);
  CHECK(rx.ecn_marks > 0);  // data is ECT(0) by default even without cc
  CHECK(rx.cnps_sent == 0);
  CHECK(p.marker->cnps.empty());
  CHECK(tx.cnps_received == 0);
  CHECK_FALSE(tx.limited);
  CHECK(tx.paced_waits == 0);
}

TEST_CASE("data_ecn 0: not ECN-capable, so never marked", "[cc-sim]") {
  cc::CcConfig c = dcqcn();
  c.dcqcn.data_ecn = 0;
  CcPair p(c);
  p.marker->marking = true;
  REQUIRE(p.write_n(4, 65536));
  CHECK(p.marker->marked == 0);
  CHECK(p.b.qp->cc_stats().ecn_marks == 0);
}

TEST_CASE("a per-QP override beats the device's choice", "[cc-sim]") {
  CcPair p(cc::CcConfig{});  // devices: none
  QpInitAttr init;
  init.send_cq = init.recv_cq = p.a.cq.get();
  init.cap.max_send_wr = init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  init.cc = dcqcn(25000);
  int err = 0;
  auto qp = p.a.pd->create_qp(init, err);
  REQUIRE(err == 0);
  CHECK(qp->cc_stats().algo == cc::CcAlgo::dcqcn);
  CHECK(qp->cc_stats().rate_mbps == 25000);
  CHECK(p.a.qp->cc_stats().algo == cc::CcAlgo::none);
}

TEST_CASE("the CNP on the wire: opcode 0x81, P_Key 0xFFFF, BECN, PSN 0, DSCP 48", "[cc-sim]") {
  cc::CcConfig c = dcqcn();
  c.dcqcn.cnp_dscp = 46;  // configurable
  CcPair p(c);
  p.marker->marking = true;
  REQUIRE(p.write_n(2, 4096));
  REQUIRE(!p.marker->cnps.empty());
  for (const auto& f : p.marker->cnps) {
    wire::PacketView v;
    REQUIRE(wire::parse_frame(f, v) == wire::ParseError::ok);  // ICRC verified
    CHECK(v.bth().opcode() == wire::op::CNP);
    CHECK(v.bth().pkey() == 0xFFFF);
    CHECK(v.bth().becn());
    CHECK_FALSE(v.bth().fecn());
    CHECK(v.bth().dest_qp() == p.a.qp->qp_num());
    CHECK(v.bth().psn() == 0);
    CHECK(v.ipv4().dscp() == 46);
    CHECK(v.ipv4().ecn() == 0);
    CHECK(v.end_off - v.bth_off == 12 + 16 + 4);
    const uint8_t* rsvd = v.headers + v.bth_off + 12;
    for (int i = 0; i < 16; ++i) CHECK(rsvd[i] == 0);
  }
  // For the dump/oracle check (tests/cc/cnp_tools.sh).
  if (const char* out = std::getenv("UROCE_CNP_PCAP")) {
    std::string err;
    auto w = capture::PcapWriter::create(out, err);
    REQUIRE(w);
    for (const auto& f : p.marker->cnps) w->write(f, 0);
    REQUIRE(w->flush(err));
  }
}

TEST_CASE("many paced QPs each keep their own rate", "[cc-sim]") {
  cc::CcConfig c = fixed_1000();
  c.dcqcn.rate_to_set_on_first_cnp = 200;
  CcPair p(c);
  constexpr size_t kQps = 32;
  constexpr uint32_t kWrs = 20, kLen = 16384;
  QpOptions o;
  o.bytes = kLen;
  std::vector<Side> tx(kQps), rx(kQps);
  for (size_t i = 0; i < kQps; ++i) connect_pair(tx[i], *p.da, with_psn(o, 7), rx[i], *p.db, with_psn(o, 9));
  auto run_all = [&](uint32_t per_qp, uint32_t len, std::vector<uint64_t>& done_at) {
    std::vector<uint32_t> done(kQps, 0);
    done_at.assign(kQps, 0);
    for (size_t i = 0; i < kQps; ++i)
      for (uint32_t k = 0; k < per_qp; ++k)
        REQUIRE(post_wr(tx[i], IBV_WR_RDMA_WRITE, k, 0, len, rx[i].addr(), rx[i].mr->rkey()) == 0);
    return p.run_until(
        [&] {
          size_t finished = 0;
          for (size_t i = 0; i < kQps; ++i) {
            ibv_wc wc[16];
            for (int k; (k = tx[i].cq->poll(16, wc)) > 0;) {
              for (int j = 0; j < k; ++j) REQUIRE(wc[j].status == IBV_WC_SUCCESS);
              done[i] += uint32_t(k);
              if (done[i] == per_qp) done_at[i] = p.clock.now_ns();
            }
            finished += done[i] == per_qp;
          }
          return finished == kQps;
        },
        5'000'000'000ull);
  };
  // One marked WRITE each: every sender gets a CNP and 200 Mb/s.
  std::vector<uint64_t> done_at;
  p.marker->marking = true;
  REQUIRE(run_all(1, 1024, done_at));
  p.marker->marking = false;
  p.run_until([] { return false; }, 100'000);
  for (size_t i = 0; i < kQps; ++i) REQUIRE(tx[i].qp->cc_stats().rate_mbps == Approx(200));
  // Together 6.4 Gb/s, below the 10 Gb/s line: each QP is held by its own rate.
  const uint64_t t0 = p.clock.now_ns();
  REQUIRE(run_all(kWrs, kLen, done_at));
  for (size_t i = 0; i < kQps; ++i) {
    const double bits = (double(kWrs) * kLen + double(kWrs) * (kLen / 1024) * 74) * 8;
    const double mbps = bits / (double(done_at[i] - t0) / 1e9) / 1e6;
    INFO("QP " << i << " at " << mbps << " Mb/s");
    CHECK(mbps <= 200 * 1.03);
    CHECK(mbps >= 200 * 0.90);
  }
}

TEST_CASE("a slowly paced QP asks for ACKs in time: no spurious retransmission", "[cc-sim]") {
  cc::CcConfig c = fixed_1000();
  c.dcqcn.rate_to_set_on_first_cnp = 20;  // 64 packets take ~28 ms, the ACK timeout 4 ms
  QpOptions o;
  o.timeout = 10;  // 4.2 ms
  CcPair p(c, o);
  limit_a(p);
  REQUIRE(p.a.qp->cc_stats().rate_mbps == Approx(20));
  const uint64_t t0 = p.clock.now_ns();
  REQUIRE(p.write_n(4, 65536, 10'000'000'000ull));  // 256 packets, ~115 ms
  CHECK(p.clock.now_ns() - t0 > 100'000'000);  // paced indeed
  CHECK(p.a.qp->counters().retransmitted_pkts == 0);
  CHECK(p.a.qp->counters().local_ack_timeout_err == 0);
}

TEST_CASE("a QP paced at the floor wakes for its rate increases", "[cc-sim]") {
  cc::CcConfig c = dcqcn();
  c.dcqcn.rate_to_set_on_first_cnp = 1;  // 1 Mb/s: 8.6 ms per 1 KB packet
  c.dcqcn.rpg_time_reset = 100;
  c.dcqcn.rpg_byte_reset = 0;
  CcPair p(c);
  limit_a(p);
  REQUIRE(p.a.qp->cc_stats().rate_mbps == Approx(1));
  const uint64_t t0 = p.clock.now_ns();
  REQUIRE(p.write_n(1, 8192));  // 8 packets
  // Timer increases every 100 µs raise the rate while the QP waits: it
  // does not sit out 8.6 ms per packet at the old rate.
  CHECK(p.clock.now_ns() - t0 < 3'000'000);
  CHECK(p.a.qp->cc_stats().rate_increases >= 3);
}

TEST_CASE("an unlimited DCQCN QP is paced at the ceiling", "[cc-sim]") {
  CcPair p(dcqcn(2000));  // 2 Gb/s ceiling, no marks
  const uint64_t t0 = p.clock.now_ns();
  REQUIRE(p.write_n(100, 65536));  // 6.5 MB: ~27 ms at 2 Gb/s
  const double mbps = 100.0 * 65536 * 8 / (double(p.clock.now_ns() - t0) / 1e9) / 1e6;
  INFO("goodput " << mbps << " Mb/s");
  CHECK(mbps <= 2000);
  CHECK(mbps >= 2000 * 0.85);
  CHECK_FALSE(p.a.qp->cc_stats().limited);
}

TEST_CASE("IPv6: traffic class ECT(0), CE marks, CNPs", "[cc-sim]") {
  CcPair p(dcqcn(), {}, true);
  p.marker->marking = true;
  REQUIRE(p.write_n(8, 65536));
  CHECK(p.marker->marked > 0);
  CHECK(p.b.qp->cc_stats().ecn_marks == p.marker->marked);
  CHECK(p.b.qp->cc_stats().cnps_sent > 0);
  CHECK(p.a.qp->cc_stats().rate_decreases > 0);
  REQUIRE(!p.marker->cnps.empty());
  wire::PacketView v;
  REQUIRE(wire::parse_frame(p.marker->cnps[0], v) == wire::ParseError::ok);
  CHECK(v.ipv6);
  CHECK(v.bth().opcode() == wire::op::CNP);
  CHECK(v.ipv6_hdr().dscp() == 48);
  CHECK(v.ipv6_hdr().ecn() == 0);
}

TEST_CASE("a CNP counts only from the QP's peer", "[cc-sim]") {
  // A CNP has no PSN to guess: without a source check anyone could hold a
  // QP at its minimum rate by sending CNPs to QPNs in turn.
  CcPair p(dcqcn());
  REQUIRE(p.write_n(2, 4096));
  sim::SimPort& intruder = p.wire.add_port(wire::MacAddr{{0x02, 0, 0, 0, 0, 9}});
  TestPool pool(63);
  auto send_cnp_from = [&](const char* src) {
    wire::PacketFields f;
    f.eth.dst = wire::MacAddr{{0x02, 0, 0, 0, 0, 1}};  // a's port (CcPair)
    f.eth.src = intruder.mac();
    REQUIRE(wire::IpAddr::parse(src, f.ip.src));
    f.ip.dst = p.da->gids()[0];
    f.bth.opcode = wire::op::CNP;
    f.bth.pkey = 0xFFFF;
    f.bth.becn = true;
    f.bth.dest_qp = p.a.qp->qp_num();
    std::vector<uint8_t> frame(256);
    wire::FrameLayout lay;
    REQUIRE(wire::build_frame(f, {}, frame, lay) == wire::BuildError::ok);
    frame.resize(lay.frame_len);
    rte_mbuf* m = mbuf_from_bytes(pool.get(), frame);
    REQUIRE(intruder.tx_burst(&m, 1) == 1);
    p.run_until([] { return false; }, 10'000);
  };
  const auto before = p.a.qp->cc_stats();
  send_cnp_from("10.0.0.99");  // not a's peer
  CHECK(p.a.qp->cc_stats().cnps_received == before.cnps_received);
  CHECK(p.a.qp->cc_stats().rate_decreases == before.rate_decreases);
  send_cnp_from("10.0.0.2");  // the peer: counts, and cuts the rate
  CHECK(p.a.qp->cc_stats().cnps_received == before.cnps_received + 1);
  CHECK(p.a.qp->cc_stats().rate_decreases == before.rate_decreases + 1);
}
