// SPDX-License-Identifier: BSD-3-Clause
// Threaded mode: the engine runs on a thread of its own and application
// threads reach it the way software reaches a NIC.
//
// Data path (no lock, no allocation): post_send/post_recv validate on the
// caller's thread, copy the WR into the QP's single-producer/single-consumer
// submission ring (qp_submit.h) and ring the device's doorbell, a
// multi-producer/single-consumer ring of QP pointers in which a QP sits at
// most once. The engine thread drains the doorbells, runs the queued posts
// through the (single-threaded) transport, polls the engine, publishes how
// many WRs each busy QP has retired, and moves each CQ's completions into the
// CQ's SP/SC ring of ibv_wc, where CompletionQueue::poll takes them.
//
// Control path (create, destroy, modify, query, register, SRQ posts,
// counters, neighbours): a Pause. The caller asks, the engine thread drains
// the doorbells (so every post made before the call has reached the
// transport), parks and acknowledges; the call runs on the caller's thread;
// then the engine resumes. A recursive mutex serialises control calls; the
// data path never takes it. In embedded mode a Pause is only that mutex.
//
// Callers drive (start's callers_drive): the thread that posts or polls
// runs the engine itself when no one else does (a try-lock per call, the
// drive lock), as embedded mode does, instead of waiting for the engine
// thread: a message then crosses no thread. The rings stay as they are,
// their consumer and producer sides being whoever holds the drive lock.
// While application threads drive, the engine thread naps; it takes over
// when none has driven for a nap's length (timers, ACKs and receives go on
// while the application computes) or at once when one is about to block
// (begin_wait(), from CompletionChannel::get_event). The nap starts at
// kFirstCallersNapNs and doubles up to DeviceConfig::idle_sleep_max_us
// while callers go on driving; it starts short again whenever the engine
// thread, taking over, finds work (a program that waits by watching memory
// drives only between its waits). A Pause holds the drive lock too.
#pragma once

#include <atomic>
#include <memory>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

struct rte_ring;

namespace uroce {
namespace transport {
class Cq;
struct Qp;
}
namespace engine {
class Engine;
}
}  // namespace uroce

namespace uroce::detail {

struct QpSubmit;

class EngineThread {
 public:
  explicit EngineThread(engine::Engine& eng) : eng_(eng) {}
  ~EngineThread();
  EngineThread(const EngineThread&) = delete;
  EngineThread& operator=(const EngineThread&) = delete;

  // cpu -1: no pinning. False with a message if the thread cannot start
  // (already running, no memory for the rings, cpu not allowed).
  bool start(int cpu, bool callers_drive, std::string& error);
  // Runs the posts still queued, then joins; the device is embedded again.
  void stop();
  bool threaded() const { return threaded_.load(std::memory_order_acquire); }
  bool callers_drive() const { return callers_drive_.load(std::memory_order_relaxed); }
  engine::Engine& engine() { return eng_; }

  // Control path; reentrant on one thread. Prefer the Pause guard.
  void pause();
  void resume();

  // Objects of the device (call while paused). attach fails (message in
  // error) only in threaded mode, when the object's ring cannot be made.
  // A QP's submission queue lives in `sub`, owned by its QueuePair: made
  // here when the thread first drives the QP, kept until the QP dies.
  bool attach_qp(transport::Qp& qp, std::unique_ptr<QpSubmit>& sub, std::string& error);
  void detach_qp(transport::Qp& qp);
  bool attach_cq(transport::Cq& cq, std::string& error);
  void detach_cq(transport::Cq& cq);
  // After a control call on qp (paused): its state as the caller's checks
  // see it, and its retired counts, are brought up to date.
  void after_control(QpSubmit* sub);

  // Data path: qp's submission ring has new commands. Callers drive: a
  // post that need not run at once (`urgent` false: receives, which only
  // have to be in place before their message arrives) leaves itself to
  // the next engine turn while callers drive.
  void ring(QpSubmit& s, bool urgent = true);
  // Callers drive: one engine turn on the calling thread unless another
  // thread is in one (or a control call runs); true if it ran.
  bool drive();
  // Callers drive: the calling thread is about to block; the engine thread
  // takes over now rather than after its nap, and keeps the engine while
  // any thread is blocked (until end_wait), whatever other callers do.
  void begin_wait();
  void end_wait();

  // Idle policy. After kIdleSpinNs without work the thread naps on a futex
  // (woken at once by a doorbell, a pause or stop), for kFirstNapNs first,
  // doubling up to DeviceConfig::idle_sleep_max_us, never past the
  // engine's next timer: without a receive interrupt a frame that arrives
  // during a nap waits for its end. A port with one (has_rx_interrupt)
  // wakes the thread when a frame arrives: naps of kRxSleepMinNs or more
  // sleep on it (PacketPort::rx_sleep), and go on doubling up to
  // kRxSleepMaxNs. A caller's engine turn wakes such a sleep, since it
  // may have armed a timer the sleep does not know of.
  static constexpr uint64_t kIdleSpinNs = 200'000;
  static constexpr uint64_t kFirstNapNs = 20'000;
  static constexpr uint64_t kFirstCallersNapNs = 10'000;
  static constexpr uint64_t kRxSleepMinNs = 1'000'000;
  static constexpr uint64_t kRxSleepMaxNs = 100'000'000;

 private:
  void wake();
  bool work_waiting() const;
  // may_rx_sleep: an idle nap, which a frame may end (not a callers' nap).
  void nap(uint64_t ns, bool may_rx_sleep);
  void idle_wait(uint64_t idle_since, uint64_t& backoff, uint64_t deadline);
  void loop(int cpu);
  void park();
  int drain_doorbells();
  void publish();
  bool try_lock_drive() { return !driving_.exchange(true, std::memory_order_acquire); }
  void lock_drive();
  void unlock_drive() { driving_.store(false, std::memory_order_release); }
  // One engine turn (drive lock held): posts, engine, completions.
  int turn();
  // Callers drive: whether an application thread has driven since the
  // engine thread last looked; it then naps instead of driving.
  bool callers_driving(uint64_t& seen);
  struct Attached {
    transport::Qp* qp;
    std::unique_ptr<QpSubmit>* sub;
  };
  void mark_busy(QpSubmit& s);
  bool prepare(const Attached& a, std::string& error);
  bool prepare(transport::Cq& cq, std::string& error);
  // The loop on a free EAL worker lcore, else on a thread of its own.
  void launch(int cpu);
  static int lcore_main(void* self);
  void join();

  engine::Engine& eng_;
  std::recursive_mutex control_;
  int depth_ = 0;           // nesting of pause() on the thread holding control_
  bool handshake_ = false;  // the outermost pause() parked the engine thread
  std::thread thread_;
  // The EAL worker lcore the loop was launched on, or LCORE_ID_ANY when it
  // runs on thread_ (registered with DPDK).
  unsigned worker_lcore_ = ~0u;
  int launch_cpu_ = -1;
  std::string start_error_;
  rte_ring* doorbells_ = nullptr;
  std::vector<Attached> qps_;
  std::unordered_map<const transport::Qp*, size_t> slot_;  // index in qps_
  std::vector<transport::Cq*> cqs_;
  std::vector<QpSubmit*> busy_;  // QPs with WRs executed and not yet retired

  alignas(64) std::atomic<bool> threaded_{false};
  std::atomic<bool> callers_drive_{false};
  // The engine thread's DPDK lcore id, lent to callers that drive; under
  // the drive lock, and LCORE_ID_ANY (no cache) while the thread holds none.
  unsigned engine_lcore_ = ~0u;  // LCORE_ID_ANY
  // Held for an engine turn, by the engine thread or a caller, and by a Pause.
  alignas(64) std::atomic<bool> driving_{false};
  // Turns run by callers (the engine thread only reads it), and a caller's
  // request that the engine thread take over at once.
  alignas(64) std::atomic<uint64_t> caller_turns_{0};
  std::atomic<bool> handoff_{false};
  std::atomic<int> waiters_{0};  // threads between begin_wait and end_wait
  // The engine thread naps because callers drive (it reads no doorbell).
  std::atomic<bool> callers_nap_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int> started_{0};  // 1 running, -1 failed to start
  alignas(64) std::atomic<bool> pause_req_{false};
  alignas(64) std::atomic<bool> parked_{false};
  // Written by the engine thread around a nap, read by every doorbell.
  alignas(64) std::atomic<bool> sleeping_{false};
  std::atomic<uint32_t> wake_word_{0};
  // The nap is a sleep on the port's receive interrupt: wakers write
  // wake_fd_ (an eventfd, made at start when the port has the interrupt).
  std::atomic<bool> rx_sleeping_{false};
  bool rx_interrupt_ = false;
  int wake_fd_ = -1;
};

// A control call's scope: the engine thread is parked (threaded mode) and
// no other control call runs.
class Pause {
 public:
  explicit Pause(EngineThread& t) : t_(t) { t_.pause(); }
  ~Pause() { t_.resume(); }
  Pause(const Pause&) = delete;
  Pause& operator=(const Pause&) = delete;

 private:
  EngineThread& t_;
};

// begin_wait .. end_wait for a scope; nothing when `t` is null.
class WaitScope {
 public:
  explicit WaitScope(EngineThread* t) : t_(t) {
    if (t_) t_->begin_wait();
  }
  ~WaitScope() {
    if (t_) t_->end_wait();
  }
  WaitScope(const WaitScope&) = delete;
  WaitScope& operator=(const WaitScope&) = delete;

 private:
  EngineThread* t_;
};

}  // namespace uroce::detail
