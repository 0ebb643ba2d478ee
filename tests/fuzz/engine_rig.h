// SPDX-License-Identifier: BSD-3-Clause
// The world the engine fuzzer runs in: two devices (side 0 and side 1) on
// a simulated wire, each with QPs in every state (RC, UC, UD, on an SRQ,
// IPv6, a QP pair looped back on one device), memory regions in guarded
// buffers (guarded_buffer.h) and a type 2 memory window per PD, plus a
// third port that injects hand-built frames. It records what was posted and checks, after every step and at
// the end of an input, what must always hold (check_step, finish).
//
// The devices, their regions, PDs, CQs and address handles live across
// inputs (making a device costs more than running most inputs); each input
// gets new QPs and SRQs (begin) and leaves nothing behind (finish checks:
// no work request, completion, frame or mbuf left over).
#pragma once

#include <rte_mbuf.h>

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "guarded_buffer.h"
#include "sim_fabric.h"
#include "uroce/verbs/verbs.h"
#include "uroce/wire/packet_fields.h"

namespace uroce::fuzz {

#define ENGINE_FUZZ_CHECK(cond)                                                              \
  do {                                                                                       \
    if (!(cond)) ::uroce::fuzz::check_failed(__FILE__, __LINE__, #cond);                     \
  } while (0)
[[noreturn]] void check_failed(const char* file, int line, const char* what);

// Regions of each side, by role.
enum Region : uint8_t {
  kRw,        // whole pages: guard pages touch both ends
  kRwOdd,     // odd length, canaries on both sides
  kReadOnly,  // REMOTE_READ only: never written by anyone
  kAtomic,    // small, for atomics, canaries on both sides
  kStale,     // registered, then deregistered: its key must open nothing
  kOtherPd,   // in a second PD no QP belongs to: never written
  kRegions
};

// The type 2 window of the QPs' PD is bound at the start of every input,
// through QP 0, to this range of kRw; the one of the second PD never is
// (no QP of that PD exists to bind it through).
inline constexpr size_t kWindowOff = 4096, kWindowLen = 4096;
inline constexpr uint8_t kWindowConsumerKey = 0x5A;

struct QpSpec {
  ibv_qp_type type;
  bool srq;
  uint8_t sgid;               // 0: IPv4 GID, 1: IPv6 GID
  ibv_mtu mtu;
  ibv_qp_state state_side1;   // side 0's QP is always brought to RTS
  int loop_peer;              // >= 0: connected to that QP of the same device
};

inline constexpr std::array<QpSpec, 13> kQpSpecs = {{
    {IBV_QPT_RC, false, 0, IBV_MTU_256, IBV_QPS_RTS, -1},
    {IBV_QPT_RC, true, 0, IBV_MTU_1024, IBV_QPS_RTS, -1},
    {IBV_QPT_UC, false, 0, IBV_MTU_1024, IBV_QPS_RTS, -1},
    {IBV_QPT_UD, false, 0, IBV_MTU_1024, IBV_QPS_RTS, -1},
    {IBV_QPT_RC, false, 1, IBV_MTU_4096, IBV_QPS_RTS, -1},
    {IBV_QPT_RC, false, 0, IBV_MTU_1024, IBV_QPS_RTR, -1},
    {IBV_QPT_RC, false, 0, IBV_MTU_1024, IBV_QPS_INIT, -1},
    {IBV_QPT_RC, false, 0, IBV_MTU_1024, IBV_QPS_RESET, -1},
    {IBV_QPT_RC, false, 0, IBV_MTU_1024, IBV_QPS_ERR, -1},
    {IBV_QPT_RC, false, 0, IBV_MTU_1024, IBV_QPS_SQD, -1},
    {IBV_QPT_RC, false, 0, IBV_MTU_512, IBV_QPS_RTS, 11},
    {IBV_QPT_RC, false, 0, IBV_MTU_512, IBV_QPS_RTS, 10},
    {IBV_QPT_UC, true, 1, IBV_MTU_1024, IBV_QPS_RTS, -1},
}};
inline constexpr uint32_t kQkey = 0x11111111;

struct QpRec {
  std::unique_ptr<QueuePair> qp;
  QpSpec spec{};
  int side = 0, index = 0;
  int peer_side = 0, peer_index = 0;
  ibv_qp_state expect = IBV_QPS_RESET;  // the last state a modify set
  uint32_t sq_psn = 0;                  // first PSN it sends (its peer's rq_psn)
};

struct Side {
  Device* dev = nullptr;
  // Destroyed bottom-up, as verbs requires.
  std::unique_ptr<ProtectionDomain> pd, pd2;
  std::unique_ptr<CompletionQueue> cq;
  std::array<std::unique_ptr<MemoryRegion>, kRegions> mr;
  std::array<uint32_t, kRegions> key{};
  std::array<GuardedBuffer*, kRegions> buf{};
  std::unique_ptr<SharedReceiveQueue> srq;
  std::array<std::unique_ptr<AddressHandle>, 2> ah;  // to the other side's GID 0 and 1
  std::array<std::unique_ptr<MemoryWindow>, 2> mw;     // type 2: in pd (bound per input), in pd2
  std::array<uint32_t, 2> mw_key{};                    // the key each was bound under (pd2's: its own)
  std::vector<QpRec> qps;
};

// A posted work request not yet completed.
struct Posted {
  int side;
  int qp;  // -1: on the side's SRQ
  bool recv;
  uint64_t len;  // receives: the bytes their SGEs hold
};

// The pool injected frames come from (made once, after the EAL started).
void set_inject_pool(rte_mempool* p);

class EngineRig {
 public:
  EngineRig();
  ~EngineRig();
  EngineRig(const EngineRig&) = delete;
  EngineRig& operator=(const EngineRig&) = delete;

  sim::SimFabric& fabric() { return *fabric_; }
  Side& side(int s) { return sides_[s]; }
  sim::SimPort& injector() { return *injector_; }
  rte_mempool* pool() const;

  // A frame from the injector port (segments of seg_len bytes; 0: one).
  void inject(const uint8_t* frame, size_t len, uint16_t seg_len);
  void run_for(uint64_t ns);

  // The verbs calls the fuzzer makes, with their bookkeeping; return the
  // verb's result.
  int post_send(int s, int q, SendWr& wr);
  int post_recv(int s, int q, RecvWr& wr);  // q < 0: the SRQ
  int modify(int s, int q, const ibv_qp_attr& a, int mask);
  // RESET -> INIT -> RTR -> RTS towards its peer at the PSNs of setup.
  void reconnect(int s, int q, uint32_t sq_psn_delta);
  void poll_cqs(int max);

  // The input's SRQs and QPs, brought to their states; regions refilled;
  // each side's first window bound.
  void begin();
  // Cheap checks after every step.
  void check_step();
  // Everything to ERR, run dry, drain, check memory, destroy the QPs and
  // SRQs, check that no mbuf is left.
  void finish();

 private:
  void make_side(int s);
  void make_qps();
  void bind_window(int s);
  int connect(QpRec& r, uint32_t sq_psn, uint32_t rq_psn, ibv_qp_state upto);
  void check_completion(int s, const ibv_wc& wc);
  void check_qp(QpRec& r);
  void check_memory();
  void check_counters(int s);

  std::unique_ptr<sim::SimFabric> fabric_;
  sim::SimPort* injector_ = nullptr;
  std::array<Side, 2> sides_;
  std::unordered_map<uint64_t, Posted> posted_;
  uint64_t next_wr_id_ = 1;
  std::array<bool, 2> srq_reset_{};  // a QP on the side's SRQ went to RESET
};

}  // namespace uroce::fuzz
