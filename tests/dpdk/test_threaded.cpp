// SPDX-License-Identifier: BSD-3-Clause
// Threaded mode: each Device runs its engine on a thread of its own; the
// test thread only posts and polls, through the lock-free rings. Two Devices
// on a ring pair, in real time. Three busy threads share two cores here, so
// the counts stay moderate and every wait yields.
#include <catch2/catch.hpp>

#include <sched.h>
#include <sys/resource.h>

#include <cstdio>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rc_real_time.h"
#include "tsan_dpdk.h"
#include "uroce/port/dpdk_port.h"
#include "uroce/port/tsc_clock.h"

namespace uroce::test {
namespace {

using SteadyClock = std::chrono::steady_clock;

void start_thread(Device& d, int cpu = -1, Device::Progress progress = Device::Progress::kEngineThread) {
  tsan_teach_dpdk();  // the devices' pools and ports exist by now
  std::string error;
  const bool ok = d.start_engine_thread(cpu, error, progress);
  INFO(error);
  REQUIRE(ok);
  REQUIRE(d.engine_thread_running());
}

// Up to n completions from cq, yielding while it is empty.
std::vector<ibv_wc> drain(CompletionQueue& cq, size_t n, Millis limit = Millis(20'000)) {
  std::vector<ibv_wc> got;
  const auto deadline = SteadyClock::now() + limit;
  ibv_wc wc[32];
  while (got.size() < n) {
    const int k = cq.poll(32, wc);
    if (k > 0) {
      got.insert(got.end(), wc, wc + k);
      continue;
    }
    if (SteadyClock::now() > deadline) break;
    std::this_thread::yield();
  }
  return got;
}

uint8_t pattern(uint64_t msg, size_t i) { return uint8_t(msg * 131 + i * 7 + (i >> 8)); }
void fill_pattern(uint8_t* p, size_t n, uint64_t msg) {
  for (size_t i = 0; i < n; ++i) p[i] = pattern(msg, i);
}
bool has_pattern(const uint8_t* p, size_t n, uint64_t msg) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != pattern(msg, i)) return false;
  return true;
}

// After the engine threads stop: nothing in flight, every TX mbuf back.
void check_quiet(RealTimePair& p) {
  p.da->stop_engine_thread();
  p.db->stop_engine_thread();
  CHECK_FALSE(p.da->engine_thread_running());
  REQUIRE(p.quiesce());
  std::vector<std::string> leaks;
  CHECK(pools_full("uroce_tx", leaks));
  for (const auto& l : leaks) UNSCOPED_INFO(l);
  CHECK(leaks.empty());
}

QpOptions slow_timer() {
  QpOptions o;
  o.timeout = 16;  // 268 ms: a descheduled engine thread must not look like loss
  return o;
}

// A ring pair named `name`, open before the devices on it and closed after.
struct RingPorts {
  std::unique_ptr<DpdkPort> pa, pb;
  explicit RingPorts(const char* name) {
    std::string error;
    const bool ok = open_ring_pair(name, 1500, pa, pb, error);
    INFO(error);
    REQUIRE(ok);
  }
};

// Two devices on a ring pair, each with an engine thread of its own,
// with slow_timer()'s options.
struct ThreadedPair : RingPorts, RealTimePair {
  ThreadedPair(const char* name, uint64_t seed, size_t bytes = 1 << 20)
      : RingPorts(name), RealTimePair(*pa, *pb, seed, slow_timer(), bytes) {
    start_thread(*da);
    start_thread(*db);
  }
};

}  // namespace

TEST_CASE("threaded: SEND, WRITE, READ and atomics between two threaded devices", "[threaded-basic]") {
  ThreadedPair p("thr_basic", 501);
  CHECK(p.da->poll() == 0);  // the thread polls, not the application

  check_send_write_read(p, 601);

  // FETCH_ADD, then a CMP_SWAP that matches and one that does not; each
  // returns the value before it into a's buffer.
  uint64_t* target = reinterpret_cast<uint64_t*>(p.b.buf() + (600 << 10));
  *target = 100;
  REQUIRE(post_atomic(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, 21, 0, p.b.addr(600 << 10), p.b.mr->rkey(), 5, 0) == 0);
  REQUIRE(post_atomic(p.a, IBV_WR_ATOMIC_CMP_AND_SWP, 22, 8, p.b.addr(600 << 10), p.b.mr->rkey(), 105, 7) == 0);
  REQUIRE(post_atomic(p.a, IBV_WR_ATOMIC_CMP_AND_SWP, 23, 16, p.b.addr(600 << 10), p.b.mr->rkey(), 1, 9) == 0);
  const auto wc = drain(*p.a.cq, 3);
  REQUIRE(wc.size() == 3);
  const ibv_wc_opcode ops[3] = {IBV_WC_FETCH_ADD, IBV_WC_COMP_SWAP, IBV_WC_COMP_SWAP};
  for (size_t i = 0; i < 3; ++i) {
    INFO("atomic " << i << " status " << int(wc[i].status));
    CHECK(wc[i].status == IBV_WC_SUCCESS);
    CHECK(wc[i].wr_id == 21 + i);
    CHECK(wc[i].opcode == ops[i]);
    CHECK(wc[i].byte_len == 8);
  }
  const uint64_t* old = reinterpret_cast<const uint64_t*>(p.a.buf());
  CHECK(old[0] == 100);
  CHECK(old[1] == 105);
  CHECK(old[2] == 7);
  CHECK(*target == 7);

  // cc_stats from the application thread is a control call here: the engine
  // thread pauses for it (and runs on after it).
  for (int i = 0; i < 100; ++i) {
    const cc::CcStats s = p.a.qp->cc_stats();
    CHECK(s.algo == cc::CcAlgo::none);
    CHECK(s.ecn_marks + s.cnps_received + s.cnps_sent == 0);
  }

  // A QP pair made while threaded, b's side on an SRQ (its posts are a
  // control call): SENDs land in the SRQ's buffers in posting order.
  {
    int err = 0;
    SrqInitAttr sa;
    sa.max_wr = 16;
    auto srq = p.b.pd->create_srq(sa, err);
    REQUIRE(err == 0);
    QpInitAttr init;
    init.cap.max_send_wr = init.cap.max_recv_wr = 16;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    init.send_cq = init.recv_cq = p.a.cq.get();
    auto qa = p.a.pd->create_qp(init, err);
    REQUIRE(err == 0);
    init.send_cq = init.recv_cq = p.b.cq.get();
    init.srq = srq.get();
    auto qb = p.b.pd->create_qp(init, err);
    REQUIRE(err == 0);
    const QpOptions o = slow_timer();
    connect(*qa, with_psn(o, 50), *p.db, qb->qp_num(), 60);
    connect(*qb, with_psn(o, 60), *p.da, qa->qp_num(), 50);
    for (uint64_t i = 0; i < 4; ++i) {
      ibv_sge rs{p.b.addr((700 << 10) + i * 4096), 4096, p.b.mr->lkey()};
      RecvWr rw;
      rw.wr_id = 300 + i;
      rw.sg_list = &rs;
      rw.num_sge = 1;
      const RecvWr* rbad = nullptr;
      REQUIRE(srq->post_recv(&rw, &rbad) == 0);
    }
    CHECK(srq->posted() == 4);
    const RecvWr* rbad = nullptr;
    RecvWr none;
    CHECK(qb->post_recv(&none, &rbad) == EINVAL);  // its receives come from the SRQ
    for (uint64_t i = 0; i < 4; ++i) {
      fill_pattern(p.a.buf() + (700 << 10) + i * 4096, 2000, 400 + i);
      ibv_sge ss{p.a.addr((700 << 10) + i * 4096), 2000, p.a.mr->lkey()};
      SendWr sw;
      sw.wr_id = 400 + i;
      sw.sg_list = &ss;
      sw.num_sge = 1;
      sw.send_flags = IBV_SEND_SIGNALED;
      const SendWr* sbad = nullptr;
      REQUIRE(qa->post_send(&sw, &sbad) == 0);
    }
    const auto ws = drain(*p.a.cq, 4);
    const auto wr = drain(*p.b.cq, 4);
    REQUIRE(ws.size() == 4);
    REQUIRE(wr.size() == 4);
    for (uint64_t i = 0; i < 4; ++i) {
      INFO("SEND " << i);
      CHECK(ws[i].status == IBV_WC_SUCCESS);
      CHECK(ws[i].wr_id == 400 + i);
      CHECK(wr[i].status == IBV_WC_SUCCESS);
      CHECK(wr[i].wr_id == 300 + i);
      CHECK(wr[i].byte_len == 2000);
      CHECK(has_pattern(p.b.buf() + (700 << 10) + i * 4096, 2000, 400 + i));
    }
    CHECK(srq->posted() == 0);
  }

  // Control calls work while threaded: counters and state come back.
  CHECK(p.a.qp->state() == IBV_QPS_RTS);
  CHECK(p.a.qp->counters().sent_pkts > 0);
  CHECK(p.da->counters().tx_frames > 0);
  check_quiet(p);
}

TEST_CASE("threaded: thousands of SENDs and WRITEs through a deep queue, each completed once", "[threaded-bulk]") {
  ThreadedPair p("thr_bulk", 502, 8 << 20);
  const QpOptions o = slow_timer();
  Side& a = p.a;
  Side& b = p.b;

  // Even WRs SEND 1500 bytes (two packets), odd ones WRITE 1000 bytes to a
  // place of their own; one WR in 8 is signaled. The window is the QP's
  // max_send_wr: a completion polled frees every WR before it, so a post
  // within the window must succeed (the retired count is published before
  // the completion).
  constexpr uint64_t kWrs = 6000;
  constexpr uint32_t kSend = 1500, kWrite = 1000, kSlot = 2048;
  const uint32_t window = o.max_send_wr;
  constexpr size_t kWriteBase = 1 << 20;
  uint64_t posted = 0, done = 0, recv_posted = 0, recvs_done = 0;
  auto post_recv_slot = [&] {
    REQUIRE(post_recv(b, recv_posted, (recv_posted % window) * kSlot, kSlot) == 0);
    ++recv_posted;
  };
  for (uint32_t i = 0; i < window; ++i) post_recv_slot();

  uint64_t next_signaled = 7;
  auto signaled = [&](uint64_t i) { return i % 8 == 7 || i == kWrs - 1; };
  const auto deadline = SteadyClock::now() + Millis(45'000);
  while ((done < kWrs || recvs_done < kWrs / 2) && SteadyClock::now() < deadline) {
    bool progress = false;
    // Chains of up to 8 WRs: one doorbell per chain.
    while (posted < kWrs && posted - done < window) {
      SendWr wrs[8];
      ibv_sge sg[8];
      unsigned n = 0;
      for (; n < 8 && posted + n < kWrs && posted + n - done < window; ++n) {
        const uint64_t i = posted + n;
        const size_t slot = (i % window) * kSlot;
        const bool send = i % 2 == 0;
        fill_pattern(a.buf() + slot, send ? kSend : kWrite, i);
        sg[n] = ibv_sge{a.addr(slot), send ? kSend : kWrite, a.mr->lkey()};
        wrs[n].wr_id = i;
        wrs[n].opcode = send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
        wrs[n].sg_list = &sg[n];
        wrs[n].num_sge = 1;
        wrs[n].send_flags = signaled(i) ? unsigned(IBV_SEND_SIGNALED) : 0u;
        wrs[n].wr.rdma.remote_addr = b.addr(kWriteBase + (i / 2) * kWrite);
        wrs[n].wr.rdma.rkey = b.mr->rkey();
        if (n > 0) wrs[n - 1].next = &wrs[n];
      }
      const SendWr* bad = nullptr;
      const int rc = a.qp->post_send(wrs, &bad);
      INFO("WRs " << posted << ".." << posted + n - 1 << " with " << posted - done << " outstanding");
      REQUIRE(rc == 0);
      posted += n;
      progress = true;
    }
    ibv_wc wc[32];
    int k = a.cq->poll(32, wc);
    for (int j = 0; j < k; ++j) {
      INFO("send completion " << wc[j].wr_id << " status " << int(wc[j].status));
      REQUIRE(wc[j].status == IBV_WC_SUCCESS);
      REQUIRE(wc[j].wr_id == next_signaled);  // in order, none lost or doubled
      CHECK(wc[j].opcode == (wc[j].wr_id % 2 == 0 ? IBV_WC_SEND : IBV_WC_RDMA_WRITE));
      done = wc[j].wr_id + 1;
      next_signaled = std::min(next_signaled + 8, kWrs - 1);
      if (done == kWrs) next_signaled = kWrs;
      progress = true;
    }
    k = b.cq->poll(32, wc);
    for (int j = 0; j < k; ++j) {
      INFO("receive completion " << wc[j].wr_id << " status " << int(wc[j].status));
      REQUIRE(wc[j].status == IBV_WC_SUCCESS);
      REQUIRE(wc[j].wr_id == recvs_done);
      REQUIRE(wc[j].opcode == IBV_WC_RECV);
      REQUIRE(wc[j].byte_len == kSend);
      REQUIRE(has_pattern(b.buf() + (wc[j].wr_id % window) * kSlot, kSend, 2 * recvs_done));
      ++recvs_done;
      post_recv_slot();
      progress = true;
    }
    if (!progress) std::this_thread::yield();
  }
  CHECK(done == kWrs);
  CHECK(recvs_done == kWrs / 2);
  for (uint64_t i = 1; i < kWrs; i += 2) {
    INFO("WRITE " << i);
    REQUIRE(has_pattern(b.buf() + kWriteBase + (i / 2) * kWrite, kWrite, i));
  }
  // Nothing more arrives.
  std::this_thread::sleep_for(Millis(20));
  ibv_wc extra[4];
  CHECK(a.cq->poll(4, extra) == 0);
  CHECK(b.cq->poll(4, extra) == 0);
  check_quiet(p);
}

TEST_CASE("threaded: errors are synchronous; a full queue is ENOMEM exactly at max_send_wr", "[threaded-limits]") {
  std::unique_ptr<DpdkPort> pa, pb;
  std::string error;
  REQUIRE(open_ring_pair("thr_limits", 1500, pa, pb, error));
  QpOptions o = slow_timer();
  o.timeout = 18;  // 1 s: b is silent for a while below
  RealTimePair p(*pa, *pb, 503, o);
  start_thread(*p.da);
  Side& a = p.a;
  Side& b = p.b;

  // b's engine is stopped and nobody polls it: nothing a posts can complete.
  const uint32_t window = o.max_send_wr;
  for (uint32_t i = 0; i < window; ++i)
    REQUIRE(post_wr(a, IBV_WR_RDMA_WRITE, i, 64 * i, 64, b.addr(64 * i), b.mr->rkey()) == 0);
  ibv_sge sge{a.addr(0), 64, a.mr->lkey()};
  SendWr over;
  over.wr_id = 999;
  over.opcode = IBV_WR_RDMA_WRITE;
  over.sg_list = &sge;
  over.num_sge = 1;
  over.wr.rdma.remote_addr = b.addr(0);
  over.wr.rdma.rkey = b.mr->rkey();
  const SendWr* bad = nullptr;
  CHECK(a.qp->post_send(&over, &bad) == ENOMEM);
  CHECK(bad == &over);

  // Receives: a never receives, so its receive queue fills exactly.
  for (uint32_t i = 0; i < window; ++i) REQUIRE(post_recv(a, 5000 + i, 0, 64) == 0);
  ibv_sge rsge{a.addr(0), 64, a.mr->lkey()};
  RecvWr rwr;
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  const RecvWr* rbad = nullptr;
  CHECK(a.qp->post_recv(&rwr, &rbad) == ENOMEM);
  CHECK(rbad == &rwr);

  // A region the queued WRs use cannot be deregistered: the control call
  // sees every post made before it.
  CHECK(a.pd->dereg_mr(a.mr) == EBUSY);
  REQUIRE(a.mr);

  // b comes alive: everything a posted completes, in order.
  start_thread(*p.db);
  auto wc = drain(*a.cq, window);
  REQUIRE(wc.size() == window);
  for (uint32_t i = 0; i < window; ++i) {
    INFO("WR " << i << " status " << int(wc[i].status));
    CHECK(wc[i].status == IBV_WC_SUCCESS);
    CHECK(wc[i].wr_id == i);
  }

  // Checks on the caller's thread, with *bad at the first WR refused and
  // the WRs before it posted: too many SGEs, an opcode RC does not have,
  // inline data above max_inline_data.
  ibv_sge sges[5] = {};
  for (auto& s : sges) s = ibv_sge{a.addr(0), 8, a.mr->lkey()};
  SendWr w1, w2, w3;
  w1.wr_id = 1001;
  w1.opcode = IBV_WR_RDMA_WRITE;
  w1.sg_list = sges;
  w1.num_sge = 1;
  w1.send_flags = IBV_SEND_SIGNALED;
  w1.wr.rdma.remote_addr = b.addr(0);
  w1.wr.rdma.rkey = b.mr->rkey();
  w2 = w1;
  w2.wr_id = 1002;
  w2.num_sge = 5;  // max_send_sge is 4
  w3 = w1;
  w3.wr_id = 1003;
  w1.next = &w2;
  w2.next = &w3;
  bad = nullptr;
  CHECK(a.qp->post_send(&w1, &bad) == EINVAL);
  CHECK(bad == &w2);
  w2.num_sge = 1;
  w2.opcode = IBV_WR_BIND_MW;
  w2.next = nullptr;
  bad = nullptr;
  CHECK(a.qp->post_send(&w2, &bad) == EINVAL);
  CHECK(bad == &w2);
  std::vector<uint8_t> big(300, 0x5a);
  ibv_sge isge{reinterpret_cast<uintptr_t>(big.data()), 300, 0};
  w2.opcode = IBV_WR_SEND;
  w2.sg_list = &isge;
  w2.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;  // max_inline_data is 256
  CHECK(a.qp->post_send(&w2, &bad) == EINVAL);
  wc = drain(*a.cq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].wr_id == 1001);
  CHECK(wc[0].status == IBV_WC_SUCCESS);

  // An inline SEND: the caller's buffer is overwritten right after the
  // post returns, and the receiver still gets the bytes posted.
  REQUIRE(post_recv(b, 77, 0, 4096) == 0);
  std::vector<uint8_t> text(200);
  fill_pattern(text.data(), text.size(), 77);
  ibv_sge tsge{reinterpret_cast<uintptr_t>(text.data()), 200, 0};
  w2.sg_list = &tsge;
  w2.wr_id = 1004;
  REQUIRE(a.qp->post_send(&w2, &bad) == 0);
  std::memset(text.data(), 0, text.size());
  wc = drain(*b.cq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_SUCCESS);
  CHECK(wc[0].byte_len == 200);
  CHECK(has_pattern(b.buf(), 200, 77));
  wc = drain(*a.cq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].wr_id == 1004);

  // A new QP in RESET or INIT refuses sends at once.
  int err = 0;
  QpInitAttr init;
  init.send_cq = a.cq.get();
  init.recv_cq = a.cq.get();
  init.cap.max_send_wr = 4;
  init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  auto fresh = a.pd->create_qp(init, err);
  REQUIRE(err == 0);
  w1.next = nullptr;
  CHECK(fresh->post_send(&w1, &bad) == EINVAL);
  CHECK(fresh->post_recv(&rwr, &rbad) == EINVAL);  // RESET
  fresh.reset();
  check_quiet(p);
}

TEST_CASE("threaded: control calls from another thread while traffic runs", "[threaded-control]") {
  ThreadedPair p("thr_control", 504);
  const QpOptions o = slow_timer();
  Side& a = p.a;
  Side& b = p.b;

  // The control thread: register memory, make a new QP pair and CQs, bring
  // it to RTS, send over it and check the bytes, tear it down; five times.
  // It reports instead of asserting (Catch is not thread-safe).
  std::atomic<bool> control_done{false}, control_failed{false};
  std::string control_error;  // read after join
  std::thread control([&] {
    auto fail = [&](const std::string& what) {
      control_error = what;
      control_failed = true;
    };
    for (int round = 0; round < 5 && control_error.empty(); ++round) {
      int err = 0;
      auto cqa = p.da->create_cq(64, err);
      auto cqb = p.db->create_cq(64, err);
      std::vector<uint8_t> ma(64 << 10), mb(64 << 10);
      auto mra = a.pd->reg_mr(ma.data(), ma.size(), o.mr_access, err);
      auto mrb = b.pd->reg_mr(mb.data(), mb.size(), o.mr_access, err);
      if (!cqa || !cqb || !mra || !mrb) return fail("create_cq/reg_mr failed in round " + std::to_string(round));
      QpInitAttr init;
      init.cap.max_send_wr = init.cap.max_recv_wr = 16;
      init.cap.max_send_sge = init.cap.max_recv_sge = 1;
      init.send_cq = init.recv_cq = cqa.get();
      auto qa = a.pd->create_qp(init, err);
      init.send_cq = init.recv_cq = cqb.get();
      auto qb = b.pd->create_qp(init, err);
      if (!qa || !qb) return fail("create_qp failed");
      if (try_connect(*qa, with_psn(o, 10), *p.db, qb->qp_num(), 20) ||
          try_connect(*qb, with_psn(o, 20), *p.da, qa->qp_num(), 10))
        return fail("modify to RTS failed in round " + std::to_string(round));
      for (uint64_t m = 0; m < 10; ++m) {
        fill_pattern(ma.data(), 3000, m + 100 * round);
        ibv_sge rs{reinterpret_cast<uintptr_t>(mb.data()), 4096, mrb->lkey()};
        RecvWr rw;
        rw.wr_id = m;
        rw.sg_list = &rs;
        rw.num_sge = 1;
        const RecvWr* rbad = nullptr;
        ibv_sge ss{reinterpret_cast<uintptr_t>(ma.data()), 3000, mra->lkey()};
        SendWr sw;
        sw.wr_id = m;
        sw.sg_list = &ss;
        sw.num_sge = 1;
        sw.send_flags = IBV_SEND_SIGNALED;
        const SendWr* sbad = nullptr;
        if (qb->post_recv(&rw, &rbad) != 0 || qa->post_send(&sw, &sbad) != 0) return fail("post failed");
        const auto ws = drain(*cqa, 1, Millis(10'000));
        const auto wr = drain(*cqb, 1, Millis(10'000));
        if (ws.size() != 1 || wr.size() != 1 || ws[0].status != IBV_WC_SUCCESS || wr[0].status != IBV_WC_SUCCESS ||
            wr[0].byte_len != 3000 || !has_pattern(mb.data(), 3000, m + 100 * round))
          return fail("SEND " + std::to_string(m) + " of round " + std::to_string(round) + " went wrong");
      }
      ibv_qp_attr attr{};
      QpInitAttr got;
      if (qa->query(attr, IBV_QP_STATE, got) != 0 || attr.qp_state != IBV_QPS_RTS) return fail("query");
      qa.reset();
      qb.reset();
      // A retransmitted frame may still point into a region for a moment.
      const auto until = SteadyClock::now() + Millis(2'000);
      while ((mra || mrb) && SteadyClock::now() < until) {
        if (mra && a.pd->dereg_mr(mra) != 0) std::this_thread::yield();
        if (mrb && b.pd->dereg_mr(mrb) != 0) std::this_thread::yield();
      }
      if (mra || mrb) return fail("dereg_mr stays EBUSY");
    }
    control_done = true;
  });

  // Meanwhile: WRITEs, 64 outstanding, every one signaled and checked.
  uint64_t posted = 0, done = 0;
  const auto deadline = SteadyClock::now() + Millis(45'000);
  bool ok = true;
  while ((!control_done || posted < 2000 || done < posted) && !control_failed &&
         SteadyClock::now() < deadline) {
    bool progress = false;
    while (posted - done < 64 && (!control_done || posted < 2000)) {
      const size_t off = (posted % 64) * 4096;
      fill_pattern(a.buf() + off, 2048, posted);
      if (post_wr(a, IBV_WR_RDMA_WRITE, posted, off, 2048, b.addr(off), b.mr->rkey()) != 0) {
        ok = false;
        break;
      }
      ++posted;
      progress = true;
    }
    if (!ok) break;
    ibv_wc wc[32];
    const int k = a.cq->poll(32, wc);
    for (int j = 0; j < k; ++j) {
      if (wc[j].status != IBV_WC_SUCCESS || wc[j].wr_id != done) ok = false;
      ++done;
      progress = true;
    }
    if (!ok) break;
    if (!progress) std::this_thread::yield();
  }
  control.join();
  INFO("control thread: " << control_error);
  CHECK(control_error.empty());
  CHECK(ok);
  CHECK(done == posted);
  CHECK(posted >= 2000);
  // The last 64 WRITEs left their bytes.
  for (uint64_t i = posted - 64; i < posted; ++i) REQUIRE(has_pattern(b.buf() + (i % 64) * 4096, 2048, i));
  check_quiet(p);
}

TEST_CASE("threaded: an engine thread stops and starts again in the middle of traffic", "[threaded-restart]") {
  ThreadedPair p("thr_restart", 505);
  Side& a = p.a;
  Side& b = p.b;

  uint64_t next = 0;
  auto post_batch = [&](unsigned n) {
    for (unsigned i = 0; i < n; ++i, ++next)
      REQUIRE(post_wr(a, IBV_WR_RDMA_WRITE, next, (next % 128) * 1024, 1024, b.addr((next % 128) * 1024),
                        b.mr->rkey()) == 0);
  };
  std::vector<ibv_wc> all;
  auto collect = [&](size_t n, bool poll_a) {
    // Embedded a needs its poll; threaded a ignores it.
    const auto deadline = SteadyClock::now() + Millis(20'000);
    ibv_wc wc[32];
    while (all.size() < n && SteadyClock::now() < deadline) {
      if (poll_a) p.da->poll();
      const int k = a.cq->poll(32, wc);
      all.insert(all.end(), wc, wc + std::max(k, 0));
      if (k <= 0 && !poll_a) std::this_thread::yield();
    }
  };

  post_batch(100);
  p.da->stop_engine_thread();  // the posts already made still go
  CHECK_FALSE(p.da->engine_thread_running());
  post_batch(100);             // embedded now
  collect(150, true);
  // A cpu that does not exist is refused and a stays embedded; then it
  // starts again pinned to a cpu it may run on, with work outstanding.
  std::string why;
  CHECK_FALSE(p.da->start_engine_thread(CPU_SETSIZE - 1, why));
  CHECK(why.find("cpu " + std::to_string(CPU_SETSIZE - 1)) != std::string::npos);
  CHECK_FALSE(p.da->engine_thread_running());
  cpu_set_t allowed;
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &allowed)) ++cpu;
  start_thread(*p.da, cpu);
  post_batch(100);
  p.db->stop_engine_thread(); // the responder pauses; a retries or waits
  std::this_thread::sleep_for(Millis(5));
  start_thread(*p.db);
  post_batch(100);
  collect(400, false);
  REQUIRE(all.size() == 400);
  for (size_t i = 0; i < all.size(); ++i) {
    INFO("completion " << i << " status " << int(all[i].status));
    CHECK(all[i].status == IBV_WC_SUCCESS);
    CHECK(all[i].wr_id == i);
  }
  std::string again;
  CHECK_FALSE(p.da->start_engine_thread(-1, again));  // already running
  CHECK(again.find("already") != std::string::npos);
  check_quiet(p);
}

TEST_CASE("threaded: memory windows bound, used and invalidated through the rings", "[threaded-mw]") {
  ThreadedPair p("thr_mw", 507);
  int err = 0;
  auto mr = p.b.pd->alloc_mr(16384, kAllAccess | IBV_ACCESS_MW_BIND, err);
  REQUIRE(mr);
  const uint64_t base = reinterpret_cast<uintptr_t>(mr->addr());
  const auto* bytes = static_cast<const uint8_t*>(mr->addr());
  auto mw2 = p.b.pd->alloc_mw(IBV_MW_TYPE_2, err);
  REQUIRE(mw2);
  // Type 2: a BIND_MW work request through b's submission ring.
  const uint32_t k2 = mw2->handle() | 0x3C;
  SendWr bw;
  bw.wr_id = 1;
  bw.opcode = IBV_WR_BIND_MW;
  bw.send_flags = IBV_SEND_SIGNALED;
  bw.bind_mw.mw = mw2.get();
  bw.bind_mw.rkey = k2;
  bw.bind_mw.bind_info = {mr.get(), base, 8192, unsigned(IBV_ACCESS_REMOTE_WRITE)};
  REQUIRE(post(p.b, bw) == 0);
  auto wb = drain(*p.b.cq, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].opcode == IBV_WC_BIND_MW);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  fill_pattern(p.a.buf(), 3000, 1);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 2, 0, 3000, base + 100, k2) == 0);
  auto wa = drain(*p.a.cq, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(has_pattern(bytes + 100, 3000, 1));
  // Type 1: the bind verb, then a write through its key.
  auto mw1 = p.b.pd->alloc_mw(IBV_MW_TYPE_1, err);
  REQUIRE(mw1);
  MwBind b1;
  b1.wr_id = 3;
  b1.send_flags = IBV_SEND_SIGNALED;
  b1.bind_info = {mr.get(), base + 8192, 8192, unsigned(IBV_ACCESS_REMOTE_WRITE)};
  REQUIRE(p.b.qp->bind_mw(*mw1, b1) == 0);
  wb = drain(*p.b.cq, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  fill_pattern(p.a.buf(4096), 500, 2);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 4, 4096, 500, base + 8192, mw1->rkey()) == 0);
  wa = drain(*p.a.cq, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(has_pattern(bytes + 8192, 500, 2));
  // SEND with invalidate of the type 2 key; then that key is refused.
  REQUIRE(post_recv(p.b, 5, 0, 256) == 0);
  ibv_sge s = p.a.sge(0, 64);
  SendWr inv = make_wr(IBV_WR_SEND_WITH_INV, 6, &s);
  inv.invalidate_rkey = k2;
  REQUIRE(post(p.a, inv) == 0);
  wb = drain(*p.b.cq, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK((wb[0].wc_flags & IBV_WC_WITH_INV) != 0);
  CHECK(wb[0].invalidated_rkey == k2);
  REQUIRE(drain(*p.a.cq, 1).size() == 1);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 7, 0, 64, base + 100, k2) == 0);
  wa = drain(*p.a.cq, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_REM_ACCESS_ERR);
  CHECK(p.b.pd->dealloc_mw(mw1) == 0);
  CHECK(p.b.pd->dealloc_mw(mw2) == 0);
  CHECK(p.b.pd->dereg_mr(mr) == 0);
}

TEST_CASE("threaded: an embedded device and a threaded one talk to each other", "[threaded-mixed]") {
  std::unique_ptr<DpdkPort> pa, pb;
  std::string error;
  REQUIRE(open_ring_pair("thr_mixed", 1500, pa, pb, error));
  RealTimePair p(*pa, *pb, 506, slow_timer());
  // a threaded, b embedded (polled by RealTimePair's wait), then the other way.
  start_thread(*p.da);
  check_send_write_read(p, 701);
  p.da->stop_engine_thread();
  start_thread(*p.db);
  check_send_write_read(p, 702);
  check_quiet(p);
}

TEST_CASE("threaded: WRs queued when the QP enters ERR complete, flushed, none lost", "[threaded-error]") {
  ThreadedPair p("thr_error", 507);
  Side& a = p.a;
  Side& b = p.b;

  for (uint64_t i = 0; i < 20; ++i) REQUIRE(post_recv(a, 10'000 + i, 0, 64) == 0);
  for (uint64_t i = 0; i < 200; ++i)
    REQUIRE(post_wr(a, IBV_WR_RDMA_WRITE, i, 0, 4096, b.addr(0), b.mr->rkey()) == 0);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  REQUIRE(a.qp->modify(attr, IBV_QP_STATE) == 0);
  // Posting to a QP in ERR is accepted and flushes at once, as verbs does.
  for (uint64_t i = 200; i < 205; ++i)
    REQUIRE(post_wr(a, IBV_WR_RDMA_WRITE, i, 0, 4096, b.addr(0), b.mr->rkey()) == 0);
  const auto wc = drain(*a.cq, 225);
  REQUIRE(wc.size() == 225);
  uint64_t next_send = 0, next_recv = 10'000;
  bool flushing = false;
  for (const ibv_wc& w : wc) {
    INFO("wr_id " << w.wr_id << " status " << int(w.status));
    if (w.opcode == IBV_WC_RECV) {
      CHECK(w.wr_id == next_recv++);
      CHECK(w.status == IBV_WC_WR_FLUSH_ERR);
      continue;
    }
    CHECK(w.wr_id == next_send++);
    if (w.status != IBV_WC_SUCCESS) flushing = true;
    CHECK(w.status == (flushing ? IBV_WC_WR_FLUSH_ERR : IBV_WC_SUCCESS));
  }
  CHECK(next_send == 205);
  CHECK(next_recv == 10'020);
  CHECK(flushing);
  CHECK(a.qp->state() == IBV_QPS_ERR);
  // Nothing more: no WR completed twice.
  std::this_thread::sleep_for(Millis(20));
  ibv_wc extra[4];
  CHECK(a.cq->poll(4, extra) == 0);
  check_quiet(p);
}

TEST_CASE("threaded: two QPs of one threaded device, looped back inside its engine", "[threaded-loopback]") {
  // No frame crosses a DPDK ring between threads here: what passes between
  // the test thread and the engine thread goes only through uroce's own
  // rings (the case to run under ThreadSanitizer).
  std::unique_ptr<DpdkPort> pa, pb;
  std::string error;
  REQUIRE(open_ring_pair("thr_loop", 1500, pa, pb, error));
  TscClock clock;
  wire::IpAddr gid;
  REQUIRE(wire::IpAddr::parse("10.0.0.9", gid));
  DeviceConfig c;
  c.name = "uroce_loop";
  c.port = pa.get();
  c.clock = &clock;
  c.gids = {gid};
  c.mbufs = 4095;
  c.seed = 508;
  auto dev = Device::open(c, error);
  INFO(error);
  REQUIRE(dev);
  dev->add_neighbor(gid, pa->mac());
  {
    const QpOptions o = slow_timer();
    Side s1, s2;
    connect_pair(s1, *dev, with_psn(o, 100), s2, *dev, with_psn(o, 200));
    start_thread(*dev);

    // 2000 WRITEs of 2 KiB from s1 into s2, 64 outstanding, then a READ
    // back of the last 64 and a SEND.
    uint64_t posted = 0, done = 0;
    const auto deadline = SteadyClock::now() + Millis(30'000);
    while (done < 2000 && SteadyClock::now() < deadline) {
      while (posted < 2000 && posted - done < 64) {
        const size_t off = (posted % 64) * 4096;
        fill_pattern(s1.buf() + off, 2048, posted);
        REQUIRE(post_wr(s1, IBV_WR_RDMA_WRITE, posted, off, 2048, s2.addr(off), s2.mr->rkey()) == 0);
        ++posted;
      }
      ibv_wc wc[32];
      const int k = s1.cq->poll(32, wc);
      for (int j = 0; j < k; ++j) {
        INFO("WRITE " << wc[j].wr_id << " status " << int(wc[j].status));
        REQUIRE(wc[j].status == IBV_WC_SUCCESS);
        REQUIRE(wc[j].wr_id == done);
        ++done;
      }
      if (k == 0) std::this_thread::yield();
    }
    REQUIRE(done == 2000);
    for (uint64_t i = 2000 - 64; i < 2000; ++i) REQUIRE(has_pattern(s2.buf() + (i % 64) * 4096, 2048, i));
    REQUIRE(post_wr(s1, IBV_WR_RDMA_READ, 5000, 512 << 10, 64 * 4096, s2.addr(0), s2.mr->rkey()) == 0);
    REQUIRE(post_recv(s2, 6000, 768 << 10, 4096) == 0);
    fill_pattern(s1.buf() + (900 << 10), 3000, 6000);
    REQUIRE(post_wr(s1, IBV_WR_SEND, 6001, 900 << 10, 3000) == 0);
    const auto w1 = drain(*s1.cq, 2);
    const auto w2 = drain(*s2.cq, 1);
    REQUIRE(w1.size() == 2);
    REQUIRE(w2.size() == 1);
    CHECK(w1[0].wr_id == 5000);
    CHECK(w1[0].status == IBV_WC_SUCCESS);
    CHECK(w1[1].wr_id == 6001);
    CHECK(w2[0].wr_id == 6000);
    CHECK(w2[0].byte_len == 3000);
    CHECK(std::memcmp(s1.buf() + (512 << 10), s2.buf(), 64 * 4096) == 0);
    CHECK(has_pattern(s2.buf() + (768 << 10), 3000, 6000));
    dev->stop_engine_thread();
    // Frames still looping are handled by embedded polls.
    for (int i = 0; i < 1000 && dev->poll() > 0; ++i) {
    }
  }
}

}  // namespace uroce::test

namespace uroce::test {
namespace {

double cpu_seconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Process CPU time over wall time while the test thread sleeps for `wall`
// (the engine threads idle meanwhile).
double idle_cpu_share(std::chrono::milliseconds wall) {
  const double c0 = cpu_seconds();
  const auto t0 = SteadyClock::now();
  std::this_thread::sleep_for(wall);
  const double c1 = cpu_seconds();
  return (c1 - c0) / std::chrono::duration<double>(SteadyClock::now() - t0).count();
}

// b's side waits the verbs way: poll; if empty, arm, poll again (a
// completion may have come before the arming), then sleep in get_event.
ibv_wc wait_with_events(Side& s) {
  ibv_wc wc{};
  for (;;) {
    if (s.cq->poll(1, &wc) == 1) return wc;
    REQUIRE(s.cq->req_notify(false) == 0);
    if (s.cq->poll(1, &wc) == 1) return wc;
    CompletionQueue* cq = nullptr;
    REQUIRE(s.channel->get_event(cq) == 0);
    REQUIRE(cq == s.cq.get());
    cq->ack_events(1);
  }
}

}  // namespace

TEST_CASE("threaded: sleeping on a completion channel; an idle engine thread naps", "[threaded-events]") {
  std::unique_ptr<DpdkPort> pa, pb;
  std::string error;
  REQUIRE(open_ring_pair("thr_events", 1500, pa, pb, error));
  QpOptions o = slow_timer();
  o.cq_channel = true;

  // Before: an engine that never naps keeps its threads busy.
  double spinning = 0;
  {
    RealTimePair p(*pa, *pb, 510, o, 1 << 20, 0);
    start_thread(*p.da);
    start_thread(*p.db);
    spinning = idle_cpu_share(std::chrono::milliseconds(500));
    check_quiet(p);
  }

  RealTimePair p(*pa, *pb, 511, o);
  start_thread(*p.da);
  start_thread(*p.db);

  // A thread blocked in get_event; the process must stay (nearly) idle.
  REQUIRE(p.b.cq->req_notify(false) == 0);
  std::atomic<CompletionQueue*> woke{nullptr};
  std::atomic<int> rc{-1};
  std::thread waiter([&] {
    CompletionQueue* cq = nullptr;
    rc = p.b.channel->get_event(cq);
    woke = cq;
  });
  const double napping = idle_cpu_share(std::chrono::milliseconds(1000));
  std::printf("idle process CPU / wall: %.1f%% with the engine threads spinning, %.1f%% napping\n",
              100 * spinning, 100 * napping);
  CHECK(napping < 0.10);
  CHECK(woke.load() == nullptr);

  REQUIRE(post_recv(p.b, 1, 0, 256) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_SEND, 2, 0, 64) == 0);
  const auto t0 = SteadyClock::now();
  while (woke.load() == nullptr && SteadyClock::now() - t0 < Millis(5000)) std::this_thread::sleep_for(Millis(1));
  waiter.join();
  CHECK(rc.load() == 0);
  REQUIRE(woke.load() == p.b.cq.get());
  p.b.cq->ack_events(1);
  REQUIRE(drain(*p.b.cq, 1).size() == 1);
  REQUIRE(drain(*p.a.cq, 1).size() == 1);

  // Many round trips, b sleeping for each receive: a lost wake-up hangs.
  constexpr int kRounds = 300;
  for (int i = 0; i < kRounds; ++i) {
    REQUIRE(post_recv(p.b, 100 + i, 0, 256) == 0);
    REQUIRE(post_wr(p.a, IBV_WR_SEND, 1000 + i, 0, 64) == 0);
    const ibv_wc wc = wait_with_events(p.b);
    CHECK(wc.status == IBV_WC_SUCCESS);
    CHECK(wc.wr_id == uint64_t(100 + i));
    REQUIRE(drain(*p.a.cq, 1).size() == 1);
  }

  // Async events while threaded: a thread blocked in wait_async_event
  // wakes when a's new QP exhausts its retries (its peer QP is gone).
  {
    int err = 0;
    QpInitAttr init;
    init.cap.max_send_wr = init.cap.max_recv_wr = 4;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    init.send_cq = init.recv_cq = p.a.cq.get();
    auto qa = p.a.pd->create_qp(init, err);
    REQUIRE(err == 0);
    init.send_cq = init.recv_cq = p.b.cq.get();
    auto qb = p.b.pd->create_qp(init, err);
    REQUIRE(err == 0);
    QpOptions quick;
    quick.timeout = 8;  // 1 ms
    quick.retry_cnt = 1;
    connect(*qa, with_psn(quick, 70), *p.db, qb->qp_num(), 80);
    connect(*qb, with_psn(quick, 80), *p.da, qa->qp_num(), 70);
    qb.reset();
    AsyncEvent ev;
    std::atomic<int> arc{-1};
    std::thread waiter([&] { arc = p.da->wait_async_event(ev); });
    ibv_sge sge{p.a.addr(0), 64, p.a.mr->lkey()};
    SendWr sw;
    sw.wr_id = 9;
    sw.sg_list = &sge;
    sw.num_sge = 1;
    sw.send_flags = IBV_SEND_SIGNALED;
    const SendWr* bad = nullptr;
    REQUIRE(qa->post_send(&sw, &bad) == 0);
    const auto wc = drain(*p.a.cq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].status == IBV_WC_RETRY_EXC_ERR);
    waiter.join();
    CHECK(arc.load() == 0);
    CHECK(ev.event_type == IBV_EVENT_QP_FATAL);
    CHECK(ev.qp == qa.get());
  }
  check_quiet(p);
}

TEST_CASE("threaded: callers drive the engine; the engine thread takes over for a waiter", "[threaded-callers]") {
  std::unique_ptr<DpdkPort> pa, pb;
  std::string error;
  REQUIRE(open_ring_pair("thr_callers", 1500, pa, pb, error));
  QpOptions o = slow_timer();
  o.cq_channel = true;
  // Engine threads that see callers drive nap, up to 2 s at a time (the
  // nap doubles from 10 us while callers go on driving).
  RealTimePair p(*pa, *pb, 520, o, 1 << 20, 2'000'000);
  start_thread(*p.da, -1, Device::Progress::kCallersDrive);
  start_thread(*p.db, -1, Device::Progress::kCallersDrive);
  CHECK(p.da->progress() == Device::Progress::kCallersDrive);
  check_send_write_read(p, 621);

  // Polls that drive, for long enough that both engine threads nap
  // between looks: from here this thread runs the engines.
  ibv_wc wc{};
  auto poll_for = [&](Millis how_long) {
    const auto until = SteadyClock::now() + how_long;
    while (SteadyClock::now() < until) {
      CHECK(p.a.cq->poll(1, &wc) == 0);
      CHECK(p.b.cq->poll(1, &wc) == 0);
    }
  };
  poll_for(Millis(50));

  // a's post runs a's engine (the SEND leaves at once); b's one poll runs
  // b's engine, which takes the receive, the SEND, and hands out the
  // completion in the same call. b's ACK leaves on one of b's next polls:
  // polling only a would leave it to b's engine thread, 2 s away.
  constexpr int kRounds = 50;
  int one_call = 0;
  const auto t0 = SteadyClock::now();
  for (int i = 0; i < kRounds; ++i) {
    REQUIRE(post_recv(p.b, 200 + i, 0, 256) == 0);
    REQUIRE(post_wr(p.a, IBV_WR_SEND, 2000 + i, 0, 64) == 0);
    const int got = p.b.cq->poll(1, &wc);
    if (got == 1) {
      ++one_call;
      CHECK(wc.status == IBV_WC_SUCCESS);
      CHECK(wc.wr_id == uint64_t(200 + i));
    }
    ibv_wc wa{};
    const auto deadline = SteadyClock::now() + Millis(5000);
    int acked = 0;
    while (acked == 0 && SteadyClock::now() < deadline) {
      acked = p.a.cq->poll(1, &wa);
      if (p.b.cq->poll(1, &wc) == 1) CHECK(got == 0);  // the receive, if not taken above
    }
    REQUIRE(acked == 1);
    CHECK(wa.status == IBV_WC_SUCCESS);
    CHECK(wa.wr_id == uint64_t(2000 + i));
  }
  const auto took = SteadyClock::now() - t0;
  std::printf("callers drive: %d of %d SENDs completed in the receiver's first poll, %lld us in all\n", one_call,
              kRounds, static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(took).count()));
  // An engine thread that looks while a receive waits in the doorbell ring
  // runs it, and may take a round's SEND before the poll does: rarely.
  CHECK(one_call >= kRounds * 9 / 10);
  CHECK(took < Millis(1000));

  // A thread that blocks in get_event hands the engine back to the engine
  // thread, whose nap, after 700 ms of callers driving, is some hundreds of
  // milliseconds: the event comes at once instead (without the handoff, it
  // would come at the nap's end, which a fast test may meet by chance).
  poll_for(Millis(700));
  REQUIRE(p.b.cq->req_notify(false) == 0);
  std::atomic<CompletionQueue*> woke{nullptr};
  std::atomic<int> rc{-1};
  std::thread waiter([&] {
    CompletionQueue* cq = nullptr;
    rc = p.b.channel->get_event(cq);
    woke = cq;
  });
  REQUIRE(post_recv(p.b, 300, 0, 256) == 0);
  REQUIRE(post_wr(p.a, IBV_WR_SEND, 3000, 0, 64) == 0);
  const auto t1 = SteadyClock::now();
  while (woke.load() == nullptr && SteadyClock::now() - t1 < Millis(5000)) std::this_thread::sleep_for(Millis(1));
  const auto waited = SteadyClock::now() - t1;
  waiter.join();
  CHECK(rc.load() == 0);
  REQUIRE(woke.load() == p.b.cq.get());
  CHECK(waited < Millis(100));
  p.b.cq->ack_events(1);
  REQUIRE(drain(*p.b.cq, 1).size() == 1);
  REQUIRE(drain(*p.a.cq, 1).size() == 1);
  check_quiet(p);
}

}  // namespace uroce::test
