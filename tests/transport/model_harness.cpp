// SPDX-License-Identifier: BSD-3-Clause
#include "model_harness.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "../common/connected_pair.h"
#include "model_check.h"
#include "uroce/sim/fault_rng.h"
#include "sim_fabric.h"
#include "uroce/verbs/verbs.h"

namespace uroce::test::model {
namespace {

constexpr int kAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr uint32_t kMaxInline = 256;

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

struct DeviceSide {
  Device* dev = nullptr;
  std::unique_ptr<uint8_t, FreeDeleter> mem;  // the registered region (application memory)
  uint64_t bytes = 0;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> scq, rcq;
  std::unique_ptr<MemoryRegion> mr;

  uint64_t addr(uint64_t off) const { return reinterpret_cast<uintptr_t>(mem.get()) + off; }
};

// INIT -> RTR -> RTS with the attribute masks verbs requires for RC; a
// failure becomes a finding.
void connect(QueuePair& qp, const Device& remote, uint32_t remote_qpn, uint32_t sq_psn, uint32_t rq_psn,
             const PairConfig& pc, uint8_t min_timeout, size_t ep, std::vector<std::string>& findings) {
  QpOptions o;
  o.qp_access = kAccess;
  o.mtu = pc.mtu;
  o.max_rd_atomic = o.max_dest_rd_atomic = pc.rd_atomic;
  o.min_rnr_timer = pc.min_rnr_timer;
  o.sq_psn = sq_psn;
  o.timeout = std::max(pc.timeout, min_timeout);
  o.retry_cnt = 7;
  o.rnr_retry = 7;  // infinite: receives are posted late on purpose
  if (const ConnectError e = try_connect(qp, o, remote, remote_qpn, rq_psn))
    findings.push_back("endpoint " + std::to_string(ep) + ": modify to " + e.state + " failed with errno " +
                       std::to_string(e.err));
}

class Runner {
 public:
  Runner(const Scenario& s, const HarnessOptions& o)
      : s_(s), o_(o), fabric_(s.seed, 9000), sched_(s.seed ^ 0x5C4ED01E5EEDull) {}

  Outcome run() {
    const auto t0 = std::chrono::steady_clock::now();
    setup();
    if (out_.findings.empty()) {
      auto initial = snapshot();
      pred_ = predict(s_, std::move(initial));
      for (size_t ei = 0; ei < eps_.size(); ++ei) expected_total_ += pred_.send[ei].size() + pred_.recv[ei].size();
      fabric_.wire().set_faults(o_.faults);
      drive();
      check();
    }
    for (size_t d = 0; d < sides_.size(); ++d) {
      const DeviceCounters c = fabric_.device(d).counters();
      out_.transport += c.transport;
      out_.tx_no_mbuf += c.tx_no_mbuf;
      out_.rx_icrc_err += c.rx_icrc_err;
      out_.rx_invalid += c.rx_invalid;
    }
    out_.wire = fabric_.wire().totals();
    out_.virtual_ns = fabric_.clock().now_ns();
    out_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return std::move(out_);
  }

 private:
  struct Ep {
    std::unique_ptr<QueuePair> qp;
    size_t next_op = 0, next_recv = 0;
    std::vector<ibv_wc> send, recv;
  };

  void setup() {
    sides_.resize(s_.devices);
    for (uint32_t d = 0; d < s_.devices; ++d) {
      DeviceSide& ds = sides_[d];
      ds.dev = &fabric_.add_device("10.0.0." + std::to_string(d + 1));
      ds.bytes = s_.region_bytes[d];
      ds.mem.reset(static_cast<uint8_t*>(std::aligned_alloc(4096, (ds.bytes + 4095) / 4096 * 4096)));
      sim::FaultRng fill(s_.seed * 31 + d);
      for (uint64_t i = 0; i < ds.bytes; i += 8) {
        const uint64_t v = fill.next();
        std::memcpy(ds.mem.get() + i, &v, std::min<uint64_t>(8, ds.bytes - i));
      }
      ds.pd = ds.dev->alloc_pd();
      int err = 0;
      ds.scq = ds.dev->create_cq(65536, err);
      if (!err) ds.rcq = ds.dev->create_cq(65536, err);
      if (!err) ds.mr = ds.pd->reg_mr(ds.mem.get(), ds.bytes, kAccess, err);
      if (err) return out_.findings.push_back("device " + std::to_string(d) + " setup failed: errno " +
                                              std::to_string(err));
    }
    eps_.resize(s_.endpoints.size());
    for (size_t ei = 0; ei < eps_.size(); ++ei) {
      const Endpoint& e = s_.endpoints[ei];
      DeviceSide& ds = sides_[e.device];
      QpInitAttr init;
      init.send_cq = ds.scq.get();
      init.recv_cq = ds.rcq.get();
      init.qp_type = IBV_QPT_RC;
      init.sq_sig_all = s_.pairs[e.pair].sig_all;
      init.cap.max_send_wr = uint32_t(std::max<size_t>(1, e.ops.size()));
      init.cap.max_recv_wr = uint32_t(std::max<size_t>(1, e.recvs.size()));
      init.cap.max_send_sge = 4;
      init.cap.max_recv_sge = 4;
      init.cap.max_inline_data = kMaxInline;
      int err = 0;
      eps_[ei].qp = ds.pd->create_qp(init, err);
      if (err) return out_.findings.push_back("create_qp failed: errno " + std::to_string(err));
      qpn_to_ep_[{e.device, eps_[ei].qp->qp_num()}] = ei;
    }
    for (size_t i = 0; i < s_.pairs.size(); ++i) {
      const PairConfig& pc = s_.pairs[i];
      QueuePair& a = *eps_[2 * i].qp;
      QueuePair& b = *eps_[2 * i + 1].qp;
      connect(a, *sides_[pc.dev_b].dev, b.qp_num(), pc.psn_a, pc.psn_b, pc, o_.min_timeout, 2 * i, out_.findings);
      connect(b, *sides_[pc.dev_a].dev, a.qp_num(), pc.psn_b, pc.psn_a, pc, o_.min_timeout, 2 * i + 1, out_.findings);
    }
  }

  std::vector<std::vector<uint8_t>> snapshot() const {
    std::vector<std::vector<uint8_t>> m;
    for (const DeviceSide& ds : sides_) m.emplace_back(ds.mem.get(), ds.mem.get() + ds.bytes);
    return m;
  }

  std::vector<ibv_sge> sges(const DeviceSide& ds, const Spans& spans) const {
    std::vector<ibv_sge> v;
    for (const Span& sp : spans) v.push_back({ds.addr(sp.off), sp.len, ds.mr->lkey()});
    return v;
  }

  // Posts up to max_chunk receives of endpoint ei as one linked list.
  void post_recvs(size_t ei) {
    const Endpoint& e = s_.endpoints[ei];
    Ep& ep = eps_[ei];
    const size_t n = std::min<size_t>(e.recvs.size() - ep.next_recv, 1 + sched_.below(o_.max_chunk));
    if (n == 0) return;
    std::vector<std::vector<ibv_sge>> lists(n);
    std::vector<RecvWr> wrs(n);
    for (size_t k = 0; k < n; ++k) {
      const Recv& r = e.recvs[ep.next_recv + k];
      lists[k] = sges(sides_[e.device], r.local);
      wrs[k].wr_id = r.wr_id;
      wrs[k].sg_list = lists[k].empty() ? nullptr : lists[k].data();
      wrs[k].num_sge = int(lists[k].size());
      wrs[k].next = k + 1 < n ? &wrs[k + 1] : nullptr;
    }
    const RecvWr* bad = nullptr;
    if (int err = ep.qp->post_recv(wrs.data(), &bad))
      out_.findings.push_back("endpoint " + std::to_string(ei) + ": post_recv failed with errno " +
                              std::to_string(err));
    ep.next_recv += n;
  }

  void post_sends(size_t ei) {
    const Endpoint& e = s_.endpoints[ei];
    const DeviceSide& local = sides_[e.device];
    const DeviceSide& remote = sides_[s_.endpoints[e.peer].device];
    const bool sig_all = s_.pairs[e.pair].sig_all;
    Ep& ep = eps_[ei];
    const size_t n = std::min<size_t>(e.ops.size() - ep.next_op, 1 + sched_.below(o_.max_chunk));
    if (n == 0) return;
    std::vector<std::vector<ibv_sge>> lists(n);
    std::vector<SendWr> wrs(n);
    for (size_t k = 0; k < n; ++k) {
      const Op& op = e.ops[ep.next_op + k];
      SendWr& w = wrs[k];
      lists[k] = sges(local, op.local);
      w.wr_id = op.wr_id;
      w.opcode = op.opcode;
      w.sg_list = lists[k].empty() ? nullptr : lists[k].data();
      w.num_sge = int(lists[k].size());
      // With sq_sig_all the flag must not matter, so it is left off at random.
      if (op.signaled && (!sig_all || sched_.chance(0.5))) w.send_flags |= IBV_SEND_SIGNALED;
      if (op.inline_data) w.send_flags |= IBV_SEND_INLINE;
      if (op.fence) w.send_flags |= IBV_SEND_FENCE;
      if (op.solicited) w.send_flags |= IBV_SEND_SOLICITED;
      w.imm_data = op.imm_data;
      w.invalidate_rkey = op.invalidate_rkey;
      if (is_atomic(op.opcode)) {
        w.wr.atomic.remote_addr = remote.addr(op.remote_off);
        w.wr.atomic.rkey = remote.mr->rkey();
        w.wr.atomic.compare_add = op.compare_add;
        w.wr.atomic.swap = op.swap;
      } else if (!is_send_family(op.opcode)) {
        w.wr.rdma.remote_addr = remote.addr(op.remote_off);
        w.wr.rdma.rkey = remote.mr->rkey();
      }
      w.next = k + 1 < n ? &wrs[k + 1] : nullptr;
    }
    const SendWr* bad = nullptr;
    if (int err = ep.qp->post_send(wrs.data(), &bad))
      out_.findings.push_back("endpoint " + std::to_string(ei) + ": post_send failed with errno " +
                              std::to_string(err));
    ep.next_op += n;
  }

  void drain() {
    ibv_wc wc[64];
    for (uint32_t d = 0; d < sides_.size(); ++d)
      for (int recv_side = 0; recv_side < 2; ++recv_side) {
        CompletionQueue& cq = recv_side ? *sides_[d].rcq : *sides_[d].scq;
        int k;
        while ((k = cq.poll(64, wc)) > 0)
          for (int i = 0; i < k; ++i) {
            ++out_.completions;
            auto it = qpn_to_ep_.find({d, wc[i].qp_num});
            if (it == qpn_to_ep_.end()) {
              out_.findings.push_back("completion for an unknown QP: " + to_string(wc[i]));
              continue;
            }
            (recv_side ? eps_[it->second].recv : eps_[it->second].send).push_back(wc[i]);
          }
      }
  }

  // Drains the CQs; true when every predicted completion arrived (or time is up).
  bool settled() {
    drain();
    if ((++calls_ & 255) == 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() >
                                     o_.wall_limit_s)
      timed_out_ = true;
    return timed_out_ || out_.completions >= expected_total_;
  }

  void drive() {
    start_ = std::chrono::steady_clock::now();
    bool pending = true;
    while (pending && !timed_out_ && out_.findings.empty()) {
      pending = false;
      for (size_t ei = 0; ei < eps_.size(); ++ei) {
        // Receives usually lead, but not always: a SEND may find none (RNR).
        if (sched_.chance(0.7)) post_recvs(ei);
        if (sched_.chance(0.7)) post_sends(ei);
        const Endpoint& e = s_.endpoints[ei];
        pending = pending || eps_[ei].next_op < e.ops.size() || eps_[ei].next_recv < e.recvs.size();
      }
      // A slice of virtual time passes whether or not anything happens in
      // it (run_until stops short when the next event lies beyond it), so
      // receives posted late really are late.
      const uint64_t end = fabric_.clock().now_ns() + 1 + sched_.below(o_.max_slice_ns);
      fabric_.run_until(
          [&] {
            settled();
            return timed_out_;
          },
          end - fabric_.clock().now_ns());
      fabric_.clock().advance_to(end);
    }
    fabric_.run_until([&] { return settled(); }, o_.max_virtual_ns);
    // Anything still due (unsignaled work, late duplicates) finishes here;
    // a completion the model does not expect shows up in the drain.
    if (!timed_out_)
      fabric_.run_until(
          [&] {
            settled();
            return timed_out_;  // otherwise run until nothing is left to happen
          },
          1'000'000'000ull);
    drain();
    if (timed_out_)
      out_.findings.push_back("wall-clock limit reached after " + std::to_string(fabric_.clock().now_ns()) +
                              " ns of virtual time");
  }

  void check() {
    for (size_t ei = 0; ei < eps_.size(); ++ei) {
      const std::string name = "endpoint " + std::to_string(ei) + " (pair " + std::to_string(s_.endpoints[ei].pair) +
                               ", qp " + std::to_string(eps_[ei].qp->qp_num()) + ")";
      const uint32_t peer_qpn = eps_[s_.endpoints[ei].peer].qp->qp_num();
      compare_completions(name + " send", pred_.send[ei], eps_[ei].send, false, 0, out_.findings);
      compare_completions(name + " recv", pred_.recv[ei], eps_[ei].recv, true, peer_qpn, out_.findings);
      if (eps_[ei].qp->state() != IBV_QPS_RTS)
        out_.findings.push_back(name + " ended in state " + std::to_string(int(eps_[ei].qp->state())));
    }
    for (uint32_t d = 0; d < sides_.size(); ++d) {
      compare_memory(s_, d, pred_.memory[d], sides_[d].mem.get(), out_.findings);
      // Every WR released its hold on the region when it completed.
      if (sides_[d].mr->in_use() != 0)
        out_.findings.push_back("device " + std::to_string(d) + ": region still used by " +
                                std::to_string(sides_[d].mr->in_use()) + " WR reference(s)");
    }
  }

  const Scenario& s_;
  const HarnessOptions& o_;
  // Declared first, destroyed last: the devices outlive every object below.
  sim::SimFabric fabric_;
  sim::FaultRng sched_;
  std::vector<DeviceSide> sides_;
  std::vector<Ep> eps_;
  std::map<std::pair<uint32_t, uint32_t>, size_t> qpn_to_ep_;
  Prediction pred_;
  size_t expected_total_ = 0;
  uint64_t calls_ = 0;
  bool timed_out_ = false;
  std::chrono::steady_clock::time_point start_;
  Outcome out_;
};

}  // namespace

Outcome run_scenario(const Scenario& s, const HarnessOptions& o) { return Runner(s, o).run(); }

}  // namespace uroce::test::model
