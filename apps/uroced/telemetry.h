// SPDX-License-Identifier: BSD-3-Clause
// uroced's state through DPDK's telemetry socket (dpdk-telemetry.py):
// /uroce/ports, /uroce/clients, /uroce/qps, /uroce/counters, /uroce/cc
// (docs/operations.md#observe). A port is named by its device (uroce0,
// uroce1, ...); without a name the commands about one port take the first.
//
// The commands run on DPDK's telemetry threads. They never read the
// daemon's tables or the engine: each one asks the service thread for a
// snapshot (an eventfd in its epoll set wakes it) and waits for it; the
// service thread builds it through the public API, which parks the engine
// for each read, and publishes it under a mutex.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "uroce/cc/dcqcn.h"
#include "uroce/verbs/counters.h"

namespace uroced {

struct PortView {
  std::string name, dev, mac;
  uint16_t port_id = 0, mtu = 0;
  int vlan = -1, pcp = 0;  // 802.1Q tag of its frames; -1: untagged
  std::vector<std::string> gids;
  bool link_up = false;
  bool rx_interrupt = false;          // the engine sleeps on it when idle
  uint64_t rx_interrupt_wakeups = 0;  // sleeps a frame ended
};

struct ClientView {
  uint32_t id = 0;
  std::string device;  // the port it connected to
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  uint32_t pds = 0, cqs = 0, qps = 0, mrs = 0, mws = 0, channels = 0;
  uint64_t mr_bytes = 0;  // whole pages, as [limits] max_mr_bytes counts them
};

struct QpView {
  uint32_t client = 0, qpn = 0;
  std::string device;
  const char* type = "";
  const char* state = "";
  uroce::cc::CcStats cc;
};

struct Snapshot {
  std::vector<PortView> ports;  // in device order; counters and cc alike
  std::vector<ClientView> clients;
  std::vector<QpView> qps;
  std::vector<uroce::DeviceCounters> counters;
  std::vector<std::string> cc;  // each port's congestion control, as logged at start-up
};

class Telemetry {
 public:
  // The one instance: DPDK's callbacks take no context.
  static Telemetry& instance();
  // Makes the eventfd and registers the commands (once per process).
  bool start(std::string& error);
  // Readable while a command waits for a snapshot: the service thread
  // watches it and drains it.
  int fd() const { return fd_; }
  // Service thread: non-zero while a command waits; build a snapshot
  // after this call and publish it with the number it returned.
  uint64_t wanted() const {
    const uint64_t r = requested_.load(std::memory_order_acquire);
    return r != served_.load(std::memory_order_acquire) ? r : 0;
  }
  void publish(Snapshot snapshot, uint64_t request);
  // Service thread, when it stops serving: commands answer with an error.
  void close();
  // Telemetry thread: a snapshot newer than the call, false if the service
  // thread did not answer within a second or has stopped.
  bool fetch(Snapshot& out);

 private:
  int fd_ = -1;
  std::mutex mutex_;
  std::condition_variable published_;
  std::atomic<uint64_t> requested_{0}, served_{0};
  bool closed_ = false;
  Snapshot snapshot_;
};

}  // namespace uroced
