// SPDX-License-Identifier: BSD-3-Clause
// Per-message CPU cost of the RC transport on the simulated wire: two
// devices in one thread, a zero-latency perfect link, no I/O. A batch posts
// N work requests as one chain and runs the fabric until all N completions
// are polled, so each figure covers both ends: post, requester (segmentation,
// headers, ICRC, payload copy), the wire's hand-over, responder (parse, ICRC
// check, placement, ACK), completer and CQ poll.
//
// Catch's BENCHMARK gives the time per batch with its statistics; the
// "summary" line printed for each case divides the median of 5 timed rounds
// by the messages and frames of a batch (frames counted in both directions,
// data and ACKs, from the device counters).
//
// The "memory" lines give the heap bytes one connected RC QP holds at
// given capabilities: the growth of malloc's in-use bytes over creating and
// connecting 64 of them, divided by 64.
#include "bench.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "../common/connected_pair.h"
#include "sim_fabric.h"
#include "uroce/verbs/verbs.h"

namespace {

using namespace uroce;

constexpr size_t kRegion = 4 << 20;

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

struct End {
  std::unique_ptr<uint8_t, FreeDeleter> mem;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mr;
  std::unique_ptr<QueuePair> qp;
  uint64_t addr(size_t off) const { return reinterpret_cast<uintptr_t>(mem.get()) + off; }
};

test::QpOptions bench_options(ibv_mtu mtu) {
  test::QpOptions o;
  o.mtu = mtu;
  o.timeout = 14;
  o.max_send_sge = o.max_recv_sge = 1;
  return o;
}

// The fixture's side, but on application memory (reg_mr): wire-bench's EAL
// has only 64 MB of heap.
void make_end(Device& dev, End& e, const test::QpOptions& o) {
  e.mem.reset(static_cast<uint8_t*>(std::aligned_alloc(4096, kRegion)));
  std::memset(e.mem.get(), 0x5a, kRegion);
  e.pd = dev.alloc_pd();
  int err = 0;
  e.cq = dev.create_cq(o.cq_entries, err);
  REQUIRE(err == 0);
  e.mr = e.pd->reg_mr(e.mem.get(), kRegion, o.mr_access, err);
  REQUIRE(err == 0);
  e.qp = test::make_qp(*e.pd, e.cq.get(), o);
}

// A connected pair and a prebuilt chain of n identical WRs from a to b.
class Bench {
 public:
  Bench(ibv_wr_opcode op, uint32_t len, uint32_t n, ibv_mtu mtu, bool inline_data)
      : fabric_(1, 9000), op_(op), len_(len), n_(n) {
    DeviceConfig cfg;
    cfg.mbufs = 2047;  // two pools of 2047 jumbo-capable mbufs fit the 64 MB heap
    Device& da = fabric_.add_device("10.0.0.1", cfg);
    Device& db = fabric_.add_device("10.0.0.2", cfg);
    sim::LinkFaults perfect;
    perfect.latency_ns = 0;
    fabric_.wire().set_faults(perfect);
    const test::QpOptions o = bench_options(mtu);
    make_end(da, a_, o);
    make_end(db, b_, o);
    test::connect(*a_.qp, o, db, b_.qp->qp_num(), o.sq_psn);
    test::connect(*b_.qp, o, da, a_.qp->qp_num(), o.sq_psn);
    sges_.resize(n);
    wrs_.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      // Distinct 64 KB slots, so the copies are not all to one cache-hot line.
      const size_t off = (size_t(i) * 65536) % (kRegion - 65536);
      sges_[i] = {a_.addr(off), len, a_.mr->lkey()};
      SendWr& w = wrs_[i];
      w.wr_id = i;
      w.opcode = op;
      w.sg_list = &sges_[i];
      w.num_sge = 1;
      w.send_flags = IBV_SEND_SIGNALED | (inline_data ? unsigned(IBV_SEND_INLINE) : 0u);
      w.wr.rdma.remote_addr = b_.addr(off);
      w.wr.rdma.rkey = b_.mr->rkey();
      w.next = i + 1 < n ? &wrs_[i + 1] : nullptr;
    }
    if (op == IBV_WR_SEND) {
      rsges_.resize(n);
      rwrs_.resize(n);
      for (uint32_t i = 0; i < n; ++i) {
        rsges_[i] = {b_.addr((size_t(i) * 65536) % (kRegion - 65536)), len, b_.mr->lkey()};
        rwrs_[i].wr_id = i;
        rwrs_[i].sg_list = &rsges_[i];
        rwrs_[i].num_sge = 1;
        rwrs_[i].next = i + 1 < n ? &rwrs_[i + 1] : nullptr;
      }
    }
  }

  // One batch; returns the completions polled (n when all went well).
  uint32_t run_batch() {
    const RecvWr* rbad = nullptr;
    if (op_ == IBV_WR_SEND && b_.qp->post_recv(rwrs_.data(), &rbad) != 0) return 0;
    const SendWr* bad = nullptr;
    if (a_.qp->post_send(wrs_.data(), &bad) != 0) return 0;
    uint32_t done = 0, recvd = 0;
    const uint32_t want_recv = op_ == IBV_WR_SEND ? n_ : 0;
    fabric_.run_until([&] {
      ibv_wc wc[32];
      int k;
      while ((k = a_.cq->poll(32, wc)) > 0)
        for (int i = 0; i < k; ++i) done += wc[i].status == IBV_WC_SUCCESS;
      while ((k = b_.cq->poll(32, wc)) > 0) recvd += uint32_t(k);
      return done >= n_ && recvd >= want_recv;
    });
    return done;
  }

  // Frames on the wire (both directions) for one batch.
  uint64_t frames_per_batch() {
    const uint64_t before = fabric_.wire().totals().sent;
    REQUIRE(run_batch() == n_);
    return fabric_.wire().totals().sent - before;
  }

  // WR 0 moved slot 0 (a to b, or b to a for READ): both ends now agree.
  bool data_arrived() const { return std::memcmp(a_.mem.get(), b_.mem.get(), len_) == 0; }

  void scribble(uint8_t seed) {
    End& src = op_ == IBV_WR_RDMA_READ ? b_ : a_;
    for (uint32_t i = 0; i < len_; ++i) src.mem.get()[i] = uint8_t(seed + i * 13);
  }

  uint32_t n() const { return n_; }
  uint64_t retransmitted() const { return a_.qp->counters().retransmitted_pkts; }

 private:
  sim::SimFabric fabric_;
  ibv_wr_opcode op_;
  uint32_t len_, n_;
  End a_, b_;
  std::vector<ibv_sge> sges_, rsges_;
  std::vector<SendWr> wrs_;
  std::vector<RecvWr> rwrs_;
};

// ns per batch: the median of 5 rounds of about 50 ms each.
double median_batch_ns(Bench& b) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < 20; ++i) b.run_batch();  // warm caches, pools and branch predictors
  uint32_t per_round = 1;
  for (;;) {
    const auto t0 = clock::now();
    for (uint32_t i = 0; i < per_round; ++i) b.run_batch();
    if (clock::now() - t0 > std::chrono::milliseconds(50)) break;
    per_round *= 2;
  }
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = clock::now();
    for (uint32_t i = 0; i < per_round; ++i) b.run_batch();
    rounds.push_back(std::chrono::duration<double, std::nano>(clock::now() - t0).count() / per_round);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[2];
}

void run_case(const char* name, ibv_wr_opcode op, uint32_t len, uint32_t n, ibv_mtu mtu, bool inline_data) {
  Bench b(op, len, n, mtu, inline_data);
  // A figure only counts if the transport did the work: all complete, the
  // bytes arrived, and nothing needed a retransmission on the perfect wire.
  b.scribble(7);
  const uint64_t frames = b.frames_per_batch();
  REQUIRE(b.data_arrived());
  REQUIRE(b.retransmitted() == 0);
  BENCHMARK(name) { return b.run_batch(); };
  const double ns = median_batch_ns(b);
  REQUIRE(b.retransmitted() == 0);
  std::printf("\nsummary: %-34s %3u msgs, %4llu frames/batch: %8.1f ns/msg  %7.1f ns/frame  %6.2f Mmsg/s\n", name, n,
              static_cast<unsigned long long>(frames), ns / n, ns / double(frames), 1e3 * n / ns);
}

size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;  // small chunks, and those mmapped on their own
}

void memory_case(const char* name, uint32_t wr, uint32_t sge, uint32_t inline_bytes) {
  constexpr int kQps = 64;
  sim::SimFabric fabric(1, 9000);
  DeviceConfig cfg;
  cfg.mbufs = 2047;
  Device& da = fabric.add_device("10.0.0.1", cfg);
  Device& db = fabric.add_device("10.0.0.2", cfg);
  auto pd = da.alloc_pd();
  int err = 0;
  auto cq = da.create_cq(4096, err);
  REQUIRE(err == 0);
  std::vector<std::unique_ptr<QueuePair>> qps;
  qps.reserve(kQps);
  const size_t before = heap_in_use();
  for (int i = 0; i < kQps; ++i) {
    QpInitAttr init;
    init.send_cq = init.recv_cq = cq.get();
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = init.cap.max_recv_wr = wr;
    init.cap.max_send_sge = init.cap.max_recv_sge = sge;
    init.cap.max_inline_data = inline_bytes;
    qps.push_back(pd->create_qp(init, err));
    REQUIRE(err == 0);
    test::connect(*qps.back(), bench_options(IBV_MTU_4096), db, 0x11 + uint32_t(i), 0);
  }
  const size_t per_qp = (heap_in_use() - before) / kQps;
  CHECK(per_qp > 0);
  std::printf("\nmemory: %-52s %8zu bytes/QP\n", name, per_qp);
}

}  // namespace

TEST_CASE("transport: memory per QP", "[bench][transport]") {
  memory_case("RC, uroce-perf defaults (128 WR, 1 SGE, no inline)", 128, 1, 0);
  memory_case("RC, test defaults (256 WR, 4 SGE, 256 B inline)", 256, 4, 256);
  memory_case("RC, device maxima per WR (128 WR, 32 SGE, 512 B inline)", 128, 32, 512);
}

TEST_CASE("transport: 64 B messages", "[bench][transport]") {
  run_case("WRITE 64 B x64", IBV_WR_RDMA_WRITE, 64, 64, IBV_MTU_4096, false);
  run_case("WRITE 64 B inline x64", IBV_WR_RDMA_WRITE, 64, 64, IBV_MTU_4096, true);
  run_case("SEND 64 B x64 (+64 recv)", IBV_WR_SEND, 64, 64, IBV_MTU_4096, false);
}

TEST_CASE("transport: 64 KB messages", "[bench][transport]") {
  run_case("WRITE 64 KB x16, MTU 4096", IBV_WR_RDMA_WRITE, 65536, 16, IBV_MTU_4096, false);
  run_case("WRITE 64 KB x16, MTU 1024", IBV_WR_RDMA_WRITE, 65536, 16, IBV_MTU_1024, false);
  run_case("READ 64 KB x16, MTU 4096", IBV_WR_RDMA_READ, 65536, 16, IBV_MTU_4096, false);
}
