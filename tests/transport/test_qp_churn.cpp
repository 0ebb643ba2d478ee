// SPDX-License-Identifier: BSD-3-Clause
// QPs destroyed one by one, in any order, while the others have work in
// flight: the engine takes each out of its lists in O(1) (the last entry
// takes its place), so the QPs that stay, and QPs made afterwards, must
// still be found on every list they are on (timers, TX turns): with frames
// lost, a QP missing from the timer list would never retransmit.
#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "verbs_test_util.h"

using namespace uroce;
using namespace uroce::vt;

namespace {

constexpr unsigned kQps = 48;
constexpr unsigned kWrites = 8;
constexpr uint32_t kLen = 64;
constexpr size_t kStride = kWrites * kLen;  // each QP's part of the buffers

// kWrites signaled WRITEs from QP i of a into its part of b's buffer.
void post_writes(Pair& p, QueuePair& qp, size_t part, uint32_t salt) {
  fill(p.a.buf(part * kStride), kStride, salt);
  for (unsigned k = 0; k < kWrites; ++k) {
    ibv_sge s = sge(p.a, part * kStride + k * kLen, kLen);
    SendWr wr = make_wr(IBV_WR_RDMA_WRITE, part * 100 + k, &s);
    wr.wr.rdma.remote_addr = p.b.addr(part * kStride + k * kLen);
    wr.wr.rdma.rkey = p.b.key();
    const SendWr* bad = nullptr;
    REQUIRE(qp.post_send(&wr, &bad) == 0);
  }
}

std::unique_ptr<QueuePair>& slot(Node& n, size_t i) { return i == 0 ? n.qp : n.more_qps[i - 1]; }

}  // namespace

TEST_CASE("QPs destroyed in random order while others send: the rest, and new ones, complete", "[qp-state]") {
  Opts oa = Pair::default_a(), ob = Pair::default_b();
  oa.num_qps = ob.num_qps = kQps;
  oa.max_send_wr = ob.max_send_wr = 16;
  Pair p(77, oa, ob);
  std::map<uint32_t, size_t> part_of;  // a's QPN -> its part of the buffers
  for (size_t i = 0; i < kQps; ++i) {
    part_of[p.a.qp_at(i).qp_num()] = i;
    post_writes(p, p.a.qp_at(i), i, uint32_t(i) + 1);
  }
  // Some of it is on the wire, some waits for its turn or an ACK (timers).
  p.run_for(500);

  // Every third QP in random order, then the last ones made: their list
  // entries were moved into the places of the first ones destroyed.
  std::vector<size_t> doomed;
  for (size_t i = 0; i < kQps - 6; i += 3) doomed.push_back(i);
  std::shuffle(doomed.begin(), doomed.end(), std::mt19937(77));
  for (size_t i : {kQps - 1, kQps - 2, kQps - 4}) doomed.push_back(i);
  for (size_t i : doomed) {
    part_of.erase(p.a.qp_at(i).qp_num());
    slot(p.a, i).reset();
    slot(p.b, i).reset();
  }

  // Frames are lost from here on: what is left needs each QP's timer, on
  // the list whose entries moved as others were taken out.
  sim::LinkFaults f;
  f.loss = 0.1;
  p.fabric.wire().set_faults(f);

  // Every QP left completes all its WRITEs, and only those, with its data.
  const size_t expected = part_of.size() * kWrites;
  std::map<uint32_t, unsigned> done;
  size_t seen = 0;
  p.fabric.run_until(
      [&] {
        for (const ibv_wc& wc : drain(*p.a.cq)) {
          if (!part_of.count(wc.qp_num)) continue;  // completed before its QP went
          CHECK(wc.status == IBV_WC_SUCCESS);
          ++done[wc.qp_num];
          ++seen;
        }
        return seen >= expected;
      },
      60 * kSecond);
  REQUIRE(seen == expected);
  for (const auto& [qpn, part] : part_of) {
    INFO("QP " << qpn);
    CHECK(done[qpn] == kWrites);
    CHECK(std::equal(p.a.buf(part * kStride), p.a.buf((part + 1) * kStride), p.b.buf(part * kStride)));
  }

  // New QPs take the places of the destroyed ones and run beside the rest.
  for (size_t i : doomed) {
    slot(p.a, i) = make_qp(*p.a.pd, p.a.cq.get(), oa);
    slot(p.b, i) = make_qp(*p.b.pd, p.b.cq.get(), ob);
    connect(*slot(p.a, i), oa, *p.b.dev, slot(p.b, i)->qp_num(), ob.sq_psn);
    connect(*slot(p.b, i), ob, *p.a.dev, slot(p.a, i)->qp_num(), oa.sq_psn);
  }
  std::fill(p.b.buf(), p.b.buf(kQps * kStride), 0);
  for (size_t i = 0; i < kQps; ++i) post_writes(p, p.a.qp_at(i), i, uint32_t(i) + 101);
  auto wcs = p.wait(p.a, kQps * kWrites, 60 * kSecond);
  REQUIRE(wcs.size() == kQps * kWrites);
  for (const ibv_wc& wc : wcs) CHECK(wc.status == IBV_WC_SUCCESS);
  CHECK(std::equal(p.a.buf(), p.a.buf(kQps * kStride), p.b.buf()));
  // The device's counters sum every QP, live or gone: each frame once.
  for (const Node* n : {&p.a, &p.b}) {
    const DeviceCounters c = n->dev->counters();
    CHECK(c.transport.sent_pkts == c.tx_frames - c.tx_neighbor);
  }
}
