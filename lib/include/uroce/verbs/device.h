// SPDX-License-Identifier: BSD-3-Clause
// An RDMA device (ibv_context): one packet port, its GID table, and the
// objects created on it. The engine runs when the application calls poll()
// (embedded mode): receive a burst, run the transport, send what is ready.
// Or it runs on a thread of its own (threaded mode, start_engine_thread):
// application threads then post and poll through lock-free rings, one
// application thread per QP and per CQ at a time (docs/engine.md), and may
// run the engine themselves when it is free (Progress::kCallersDrive).
#pragma once

#include "uroce/api.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "uroce/cc/dcqcn.h"
#include "uroce/port/clock.h"
#include "uroce/port/packet_port.h"
#include "uroce/verbs/counters.h"
#include "uroce/verbs/device_config.h"
#include "uroce/verbs/types.h"
#include "uroce/wire/ip_addr.h"

namespace uroce {

namespace engine {
class Engine;
}
namespace detail {
class EngineThread;
struct Access;
struct RemoteDevice;
}

class ProtectionDomain;
class CompletionQueue;
class CompletionChannel;

class UROCE_API Device {
 public:
  // nullptr with a message naming the problem on failure.
  static std::unique_ptr<Device> open(const DeviceConfig& config, std::string& error);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  std::unique_ptr<ProtectionDomain> alloc_pd();
  // ibv_create_cq: EINVAL if cqe is 0 or above the device limit.
  std::unique_ptr<CompletionQueue> create_cq(int cqe, int& err);
  // ibv_create_cq with a completion channel (nullptr: none) and a
  // completion vector (0 .. num_comp_vectors()-1, else EINVAL).
  std::unique_ptr<CompletionQueue> create_cq(int cqe, CompletionChannel* channel, int comp_vector, int& err);
  // ibv_create_comp_channel: nullptr with err (EMFILE, ENFILE, ENOMEM) if
  // its descriptor cannot be made.
  std::unique_ptr<CompletionChannel> create_comp_channel(int& err);
  // Completion vectors: one, the engine.
  int num_comp_vectors() const { return 1; }

  // Runs the engine once; returns the amount of work done (0 = idle). In
  // threaded mode it does nothing and returns 0.
  int poll();

  // Who runs the engine in threaded mode.
  enum class Progress {
    // The engine thread alone: a post or a completion crosses threads.
    kEngineThread,
    // A thread that posts a send (QueuePair::post_send) or polls
    // (CompletionQueue::poll) runs one engine turn itself unless another
    // thread is in one, as embedded mode does, so a program that polls
    // sees no thread crossing; a receive posted meanwhile waits for the
    // next turn. The engine thread naps while application threads drive
    // (10 us first, doubling up to idle_sleep_max_us; 0: it yields) and
    // takes over when none has driven for a nap (timers, ACKs and receives
    // go on while the program computes or sleeps), and at once when one
    // waits in CompletionChannel::get_event or wait_async_event.
    kCallersDrive,
  };

  // Threaded mode: the engine runs on a new thread, pinned to `cpu` unless
  // it is -1, registered with DPDK as a non-EAL lcore. Posts go through
  // per-QP rings and a doorbell; completions through per-CQ rings; control
  // calls (create, destroy, modify, query, register, SRQ posts, counters,
  // neighbours) park the engine for their duration. False with a message if
  // the thread cannot start. Neither call may race with other calls on the
  // device's objects.
  bool start_engine_thread(int cpu, std::string& error, Progress progress = Progress::kEngineThread);
  // Runs the posts already made, stops the thread: embedded mode again.
  void stop_engine_thread();
  bool engine_thread_running() const;
  // As start_engine_thread set it (kEngineThread when not threaded).
  Progress progress() const;
  // Earliest transport timer (retransmission, RNR), kNever if none.
  uint64_t next_deadline_ns() const;

  // A static neighbour entry (IP -> MAC); it also answers any resolution.
  void add_neighbor(const wire::IpAddr& ip, const wire::MacAddr& mac);
  // Starts ARP (IPv4-mapped) or neighbour solicitation (IPv6) for `ip`
  // unless its MAC is known; poll() sends, repeats and times it out. The
  // device answers ARP/ND for its own GIDs whenever it polls. A QP can
  // reach RTR towards a GID only once its MAC is reachable (else
  // EHOSTUNREACH, and resolution starts).
  NeighborState resolve_neighbor(const wire::IpAddr& ip);
  // The MAC of a reachable neighbour; false if it is not (yet) known.
  bool neighbor_mac(const wire::IpAddr& ip, wire::MacAddr& mac) const;

  const std::string& name() const;
  const std::vector<wire::IpAddr>& gids() const;
  // The port's MAC and Ethernet MTU (the daemon's port for a client of
  // uroced).
  wire::MacAddr mac() const;
  uint16_t mtu() const;
  const DeviceLimits& limits() const;
  // ibv_get_async_event without blocking: the oldest event not yet taken,
  // false if there is none. Destroying a QP, CQ or SRQ drops its events
  // not yet taken (an event taken stays valid until its object goes: there
  // is nothing to acknowledge, ibv_ack_async_event has no counterpart).
  bool get_async_event(AsyncEvent& ev);
  // Readable while an event waits (an eventfd), for poll/epoll or an event
  // loop; may be set O_NONBLOCK.
  int async_event_fd() const;
  // ibv_get_async_event: waits for the next event; 0, or EAGAIN if the
  // descriptor is O_NONBLOCK and none waits, or EINTR. In embedded mode it
  // runs the engine while it waits (events come only from the engine). Use
  // either this or get_async_event from one thread at a time.
  int wait_async_event(AsyncEvent& ev);
  // Sum over live and destroyed QPs plus device-level drops.
  DeviceCounters counters() const;

 private:
  friend struct detail::Access;
  explicit Device(std::unique_ptr<engine::Engine> engine);
  explicit Device(std::unique_ptr<detail::RemoteDevice> remote);
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<detail::EngineThread> thread_;
  uint32_t next_pd_handle_ = 1;
  // A client of uroced: everything goes to the daemon (verbs/remote.cpp).
  std::unique_ptr<detail::RemoteDevice> remote_;
};

}  // namespace uroce
