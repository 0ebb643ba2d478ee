// SPDX-License-Identifier: BSD-3-Clause
// Shared by the negative-path tests: post a request that must fail, with
// valid work queued behind it, and check the requester's completions, its
// state, and that not one byte changed on either side.
#pragma once

#include <span>
#include <vector>

#include "verbs_test_util.h"

namespace uroce::vt {

struct Snapshot {
  std::vector<std::pair<const uint8_t*, std::vector<uint8_t>>> parts;
  void add(const uint8_t* p, size_t n) { parts.push_back({p, std::vector<uint8_t>(p, p + n)}); }
  // Index of the first changed byte of part i, or -1.
  long changed(size_t i) const {
    const auto& [p, copy] = parts[i];
    for (size_t k = 0; k < copy.size(); ++k)
      if (p[k] != copy[k]) return long(k);
    return -1;
  }
};

// Fills both registered buffers with patterns and snapshots them plus `extra`.
inline Snapshot fill_and_snapshot(Pair& p, std::span<uint8_t> extra = {}) {
  fill(p.a.buf(), p.a.size(), 0xA5);
  fill(p.b.buf(), p.b.size(), 0x5A);
  if (!extra.empty()) fill(extra.data(), extra.size(), 0x3C);
  Snapshot s;
  s.add(p.a.buf(), p.a.size());
  s.add(p.b.buf(), p.b.size());
  if (!extra.empty()) s.add(extra.data(), extra.size());
  return s;
}

// Posts `bad` (made signaled) followed by a valid WRITE and a valid SEND
// into b's memory (a receive waits for the SEND): the requester must report
// `want` for `bad`, flush the two others, and end in ERR; neither side's
// memory may change at all (the valid requests behind the bad one must not
// be executed either).
// With responder_untouched false, the valid requests behind `bad` may have
// been executed remotely (a local error found only when a READ response
// arrives), so only the requester's memory and `extra` are compared.
inline void expect_fatal(Pair& p, SendWr bad, ibv_wc_status want, std::span<uint8_t> extra = {},
                         bool responder_untouched = true) {
  INFO("seed " << p.seed << " opcode " << int(bad.opcode) << " want status " << int(want));
  const Snapshot snap = fill_and_snapshot(p, extra);
  REQUIRE(post_recv(p.b, 900, 1000, 200) == 0);
  bad.wr_id = 1;
  bad.send_flags |= IBV_SEND_SIGNALED;
  bad.next = nullptr;
  REQUIRE(post(p.a, bad) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 2, 0, 100, p.b.addr(0), p.b.key()) == 0);
  REQUIRE(post_send(p.a, 3, 0, 100) == 0);
  auto wa = p.wait(p.a, 3, kSecond);
  REQUIRE(wa.size() == 3);
  CHECK(wa[0].wr_id == 1);
  CHECK(int(wa[0].status) == int(want));
  CHECK(wa[0].qp_num == p.a.qp->qp_num());
  CHECK(wa[1].wr_id == 2);
  CHECK(wa[1].status == IBV_WC_WR_FLUSH_ERR);
  CHECK(wa[2].wr_id == 3);
  CHECK(wa[2].status == IBV_WC_WR_FLUSH_ERR);
  CHECK(p.a.qp->state() == IBV_QPS_ERR);
  p.run_for(100'000'000);  // let anything still in flight land
  CHECK(drain(*p.a.cq).empty());
  for (size_t i = 0; i < snap.parts.size(); ++i) {
    if (i == 1 && !responder_untouched) continue;
    INFO("memory part " << i << " (0 = requester, 1 = responder, 2 = extra region)");
    CHECK(snap.changed(i) == -1);
  }
  // The receive for the SEND behind was never consumed successfully.
  if (responder_untouched)
    for (const ibv_wc& w : drain(*p.b.cq)) CHECK(w.status != IBV_WC_SUCCESS);
}

inline SendWr rdma_wr(ibv_wr_opcode op, ibv_sge* s, uint64_t raddr, uint32_t rkey) {
  SendWr wr = make_wr(op, 1, s);
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  return wr;
}

inline SendWr atomic_wr(ibv_wr_opcode op, ibv_sge* s, uint64_t raddr, uint32_t rkey) {
  SendWr wr = make_wr(op, 1, s);
  wr.wr.atomic.remote_addr = raddr;
  wr.wr.atomic.rkey = rkey;
  wr.wr.atomic.compare_add = 0x5A5A5A5A5A5A5A5Aull;  // would match nothing in particular
  wr.wr.atomic.swap = 0x1111111111111111ull;
  return wr;
}

}  // namespace uroce::vt
