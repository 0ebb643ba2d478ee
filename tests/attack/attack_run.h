// SPDX-License-Identifier: BSD-3-Clause
// One attack class run against a fresh victim QP on a Rig: the QP, its
// guarded regions, and the frame builders the classes use.
#pragma once

#include <memory>
#include <vector>

#include "attack_rig.h"
#include "frame_reseal.h"

namespace uroce::attack {

inline constexpr uint32_t kRqPsn = 0xFFFFFE;    // the victim expects this first: a 3-packet message wraps 2^24
inline constexpr uint32_t kSqPsn = 0xFFFFF8;    // the victim sends from here
inline constexpr uint32_t kAttackerQpn = 0x000A77;
inline constexpr uint32_t kQkey = 0x11110000;
inline constexpr int kAllRemote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                  IBV_ACCESS_REMOTE_ATOMIC;
inline constexpr size_t kRwLen = 16128;  // three 4096-byte packets and change, a multiple of 8

// How the victim QP is made.
struct Setup {
  ibv_qp_type type = IBV_QPT_RC;
  int qp_access = kAllRemote;
  uint8_t max_dest_rd_atomic = 16;
  uint8_t rnr_retry = 7;
  uint32_t recv_len = 0;  // > 0: one receive of this many bytes posted first
};

class Run {
 public:
  Run(Rig& rig, const Setup& s);
  ~Run();

  Rig& rig;
  const Setup setup;
  std::unique_ptr<ProtectionDomain> pd, pd2;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<GuardedRegion> rw;     // every remote right
  std::unique_ptr<GuardedRegion> ro;     // REMOTE_READ only
  std::unique_ptr<GuardedRegion> wo;     // REMOTE_WRITE, no READ, no ATOMIC
  std::unique_ptr<GuardedRegion> other;  // every right, but in another PD
  std::unique_ptr<GuardedRegion> recv;   // receive buffers (local write only)
  std::unique_ptr<GuardedRegion> local;  // what the victim sends from and READs into
  std::unique_ptr<QueuePair> qp;
  std::unique_ptr<MemoryWindow> mw;      // a type 2 window on rw, when a class binds one
  uint32_t mw_key = 0;                   // the key its bind named
  uint64_t sent = 0;                     // frames injected

  uint32_t pmtu() const { return rig.pmtu; }
  static uint32_t E(int32_t off) { return (kRqPsn + uint32_t(off)) & 0xFFFFFF; }
  static uint32_t S(int32_t off) { return (kSqPsn + uint32_t(off)) & 0xFFFFFF; }

  // A request from the victim's peer to the victim QP at PSN E(psn_off).
  wire::PacketFields req(uint8_t opcode, int32_t psn_off, uint32_t payload = 0) const;
  // RDMA WRITE of `payload` bytes into rw at `off`, RETH length dma_len
  // (0: = payload).
  wire::PacketFields write(uint8_t opcode, int32_t psn_off, size_t off, uint32_t payload, uint32_t dma_len = 0) const;
  wire::PacketFields read(int32_t psn_off, uint64_t va, uint32_t rkey, uint32_t len) const;
  wire::PacketFields atomic(uint8_t opcode, int32_t psn_off, uint64_t va, uint32_t rkey, uint64_t add_or_swap,
                            uint64_t compare = 0) const;
  // An ACKNOWLEDGE (or another response) to the victim's requester at S(psn_off).
  wire::PacketFields resp(uint8_t opcode, int32_t psn_off, uint8_t syndrome, uint32_t payload = 0) const;

  // The frame, payload bytes `fill`; payloads over 4096 bytes (which the
  // builder refuses) are grown and resealed.
  std::vector<uint8_t> build(const wire::PacketFields& f, uint8_t fill = 0xEE, const wire::BuildOptions& opts = {}) const;
  void send(const wire::PacketFields& f, uint8_t fill = 0xEE) { send_frame(build(f, fill)); }
  void send_frame(const std::vector<uint8_t>& frame);

  // The victim as requester: a signaled RDMA WRITE or READ of len bytes
  // from / into `local`, to a remote address the attacker never checks.
  void post_write(uint32_t len, uint64_t wr_id = 1);
  void post_read(uint32_t len, uint64_t wr_id = 1);
  // Binds a type 2 window (mw) to [off, off+len) of rw with remote read
  // and write through the victim QP, and waits for its completion; the key
  // goes to mw_key. Then a LOCAL_INV of `key` posted on the victim QP,
  // which must complete successfully.
  void bind_window(size_t off, size_t len);
  void local_inv(uint32_t key);
  // The one request the victim sends for it; checks opcode and PSN.
  Frame take_request(uint8_t opcode, uint32_t psn);
  // Completions: waits for `want` of them (up to 5 s), then a little more.
  std::vector<ibv_wc> completions(size_t want);

  // Accepted by every class: the probe that the QP still works, a WRITE at
  // E(psn_off) that must be acknowledged and land.
  void probe(int32_t psn_off);

 private:
  void connect();
  void post_rdma(ibv_wr_opcode op, uint32_t len, uint64_t wr_id);
};

using test::Offsets;
using test::offsets_of;
using test::reseal;

}  // namespace uroce::attack
