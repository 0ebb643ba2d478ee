// SPDX-License-Identifier: BSD-3-Clause
// The attack suite's rig: one victim Device on one end of a ring-PMD port
// pair, the attacker on the other end with hand-built frames. The victim's
// RC/UC/UD QP is connected to the attacker's address, so every answer the
// victim sends lands on the attacker's port, where it is parsed and
// compared with what rxe would send. Victim memory lives in regions
// fenced by PROT_NONE pages with canary bytes between fence and region.
#pragma once

#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mbuf_test_util.h"
#include "uroce/port/dpdk_port.h"
#include "uroce/port/tsc_clock.h"
#include "uroce/verbs/verbs.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/ext_headers.h"
#include "uroce/wire/opcode.h"
#include "uroce/wire/parser.h"

namespace uroce::attack {

// What a whole run of the table varies.
struct RigConfig {
  bool ipv6 = false;
  ibv_mtu mtu = IBV_MTU_1024;
  bool threaded = false;  // the victim's engine on a thread of its own
  uint16_t seg = 0;       // > 0: attack frames arrive in mbuf segments of this size
  bool zero_copy = false; // the victim sends payloads from its regions without a copy
  std::string label() const;
};

// Registered memory between two PROT_NONE pages; every other byte of the
// pages around it is a canary.
class GuardedRegion {
 public:
  GuardedRegion(ProtectionDomain& pd, size_t len, int access);
  ~GuardedRegion();
  GuardedRegion(const GuardedRegion&) = delete;
  GuardedRegion& operator=(const GuardedRegion&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return len_; }
  uint64_t va(size_t off = 0) const { return reinterpret_cast<uintptr_t>(data_) + off; }
  uint32_t key() const { return mr_->rkey(); }
  MemoryRegion& mr() const { return *mr_; }
  // First canary byte that changed, or -1.
  long canary_damage() const;
  // Keeps the current contents as the reference for changed_outside().
  void snapshot();
  // First byte outside [off, off+len) that differs from the snapshot, or -1.
  long changed_outside(size_t off, size_t len) const;
  void fill(uint8_t b, size_t off = 0, size_t n = SIZE_MAX);

 private:
  uint8_t* map_ = nullptr;
  size_t map_len_ = 0;
  uint8_t* body_ = nullptr;  // accessible pages
  size_t body_len_ = 0;
  uint8_t* data_ = nullptr;
  size_t len_ = 0;
  std::vector<uint8_t> snap_;
  std::unique_ptr<MemoryRegion> mr_;
};

// A frame the victim sent, parsed.
struct Frame {
  std::vector<uint8_t> bytes;
  wire::PacketView v;  // into bytes
  uint8_t opcode() const { return v.bth().opcode(); }
  uint32_t psn() const { return v.bth().psn(); }
  uint8_t syndrome() const { return v.aeth().syndrome(); }
};

// One victim device and the attacker's port, for one RigConfig.
class Rig {
 public:
  explicit Rig(const RigConfig& c);
  ~Rig();

  const RigConfig cfg;
  uint32_t pmtu = 0;
  wire::IpAddr victim_ip, peer_ip, stranger_ip;
  std::unique_ptr<DpdkPort> vport, aport;
  TscClock clock;
  std::unique_ptr<Device> dev;
  test::TestPool pool{1023, 9216};

  // Puts a frame on the wire towards the victim, in segments if cfg.seg.
  void inject(const std::vector<uint8_t>& frame);
  // Runs the victim until `n` frames reached the attacker (or 5 s passed),
  // then until it is idle: a short grace in threaded mode, idle polls in
  // embedded mode. Returns every RoCE frame received meanwhile.
  std::vector<Frame> collect(size_t n);
  // Waits until the victim's engine has taken `count` more frames than
  // `before` (threaded mode: the frames are on a ring until then).
  void wait_rx(uint64_t before, uint64_t count);
  // Runs the victim for about `us` microseconds.
  void run_for_us(uint64_t us);
  void drain();

 private:
  void poll_once();
};

}  // namespace uroce::attack
