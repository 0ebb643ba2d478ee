// SPDX-License-Identifier: BSD-3-Clause
// Two uroce Devices on two real ports (a ring pair, or af_packet on a
// veth pair), a connected RC QP pair, and polling in real time (TscClock)
// against a wall-clock deadline. The verbs helpers come from the simulated
// wire's fixture (tests/transport/rc_pair.h).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "../transport/rc_pair.h"
#include "uroce/port/tsc_clock.h"

namespace uroce::test {

using Millis = std::chrono::milliseconds;

class RealTimePair {
 public:
  // Ports must outlive the pair. gids 10.0.0.1 (a) and 10.0.0.2 (b).
  // idle_sleep_max_us: DeviceConfig's, for both devices.
  RealTimePair(PacketPort& pa, PacketPort& pb, uint64_t seed, QpOptions o = {}, size_t bytes = 1 << 20,
               uint32_t idle_sleep_max_us = DeviceConfig{}.idle_sleep_max_us);
  // Polls until both devices have been idle for a while, so no frame is in
  // flight when the devices (and their pools) go away.
  ~RealTimePair();

  // Polls both devices until pred() or the deadline; false on timeout.
  bool run_until(const std::function<bool()>& pred, Millis limit);
  // n completions from side's CQ, or fewer on timeout.
  std::vector<ibv_wc> wait(Side& side, size_t n, Millis limit = Millis(10'000));
  // Polls until neither device has done any work for `idle`.
  bool quiesce(Millis idle = Millis(20), Millis limit = Millis(2'000));

  TscClock clock;
  std::unique_ptr<Device> da, db;
  Side a, b;
};

// SEND (multi-packet), RDMA WRITE and RDMA READ from a to b, checking
// completions and every byte. Catch assertions; `seed` fills the buffers.
void check_send_write_read(RealTimePair& p, uint64_t seed);

// Every pktmbuf pool whose name starts with `prefix` has all its mbufs
// back; fills `leaks` with "name: avail/size" for those that do not.
bool pools_full(const char* prefix, std::vector<std::string>& leaks);

}  // namespace uroce::test
