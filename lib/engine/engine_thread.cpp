// SPDX-License-Identifier: BSD-3-Clause
#include "engine_thread.h"
#include "util/quiet_thread.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>
#include <rte_per_lcore.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "engine.h"
#include "../transport/qp.h"
#include "qp_submit.h"
#include "uroce/port/packet_port.h"
#include "transport/cq.h"

namespace uroce::detail {
namespace {

// One doorbell slot per QP: a QP is in the ring at most once.
constexpr unsigned kMaxQps = 65536;
constexpr unsigned kDoorbellBurst = 32;
// Idle rounds before the engine thread starts yielding the CPU between
// rounds: a few microseconds of spinning keep latency low under load, and
// yielding keeps an idle device from starving threads sharing its core.
constexpr unsigned kIdleSpins = 64;

// Worker lcores EAL started (-l/--lcores with more than one) and that run
// no function: the engine may take one. An EAL lcore has its lcore id, so
// the loop needs no rte_thread_register, which turns DPDK's multi-process
// off for good (a process that serves dpdk-dumpcap needs it on).
std::mutex g_worker_lcores_lock;
bool g_worker_lcore_claimed[RTE_MAX_LCORE];

unsigned claim_worker_lcore() {
  std::lock_guard<std::mutex> lock(g_worker_lcores_lock);
  unsigned lc;
  RTE_LCORE_FOREACH_WORKER(lc) {
    if (!g_worker_lcore_claimed[lc] && rte_eal_get_lcore_state(lc) == WAIT) {
      g_worker_lcore_claimed[lc] = true;
      return lc;
    }
  }
  return LCORE_ID_ANY;
}

void release_worker_lcore(unsigned lc) {
  std::lock_guard<std::mutex> lock(g_worker_lcores_lock);
  g_worker_lcore_claimed[lc] = false;
}

long futex(std::atomic<uint32_t>* word, int op, uint32_t val, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val, timeout, nullptr, 0);
}

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

template <class Pred>
void spin_until(Pred done) {
  for (unsigned i = 0; !done(); ++i) {
    if (i < 256) rte_pause();
    else std::this_thread::yield();
  }
}

std::string ring_name(const char* prefix) {
  static std::atomic<unsigned> serial{0};
  return prefix + std::to_string(serial++);
}

}  // namespace

EngineThread::~EngineThread() {
  stop();
  rte_ring_free(doorbells_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

bool EngineThread::prepare(const Attached& a, std::string& error) {
  std::unique_ptr<QpSubmit>& sub = *a.sub;
  if (!sub) {
    auto s = std::make_unique<QpSubmit>();
    s->thread = this;
    s->qp = a.qp;
    if (!make_submit(*s, *a.qp, error)) return false;
    sub = std::move(s);
  }
  sync_submit(*sub, *a.qp);
  // Work posted before the thread started is retired by it too.
  if (publish_retired(*sub, *a.qp)) mark_busy(*sub);
  return true;
}

bool EngineThread::prepare(transport::Cq& cq, std::string& error) {
  if (!cq.make_ring(ring_name("uroce_cq").c_str())) {
    error = "completion queue of " + std::to_string(cq.capacity()) + " entries: cannot create its ring: " +
            rte_strerror(rte_errno);
    return false;
  }
  cq.set_threaded(true);
  return true;
}

bool EngineThread::start(int cpu, bool callers_drive, std::string& error) {
  std::lock_guard<std::recursive_mutex> lock(control_);
  if (threaded()) {
    error = "the engine thread is already running";
    return false;
  }
  if (cpu >= CPU_SETSIZE) {
    error = "cpu " + std::to_string(cpu) + " is out of range";
    return false;
  }
  if (qps_.size() > kMaxQps) {
    error = "threaded mode drives at most " + std::to_string(kMaxQps) + " QPs per device";
    return false;
  }
  if (doorbells_ == nullptr) {
    // DPDK's default multi-producer mode. (Its relaxed RTS/HTS modes keep
    // a preempted poster from holding the others up, but ThreadSanitizer
    // cannot follow their mixed-size atomics even with one producer.)
    doorbells_ = rte_ring_create(ring_name("uroce_db").c_str(), kMaxQps, SOCKET_ID_ANY,
                                 RING_F_SC_DEQ | RING_F_EXACT_SZ);
    if (doorbells_ == nullptr) {
      error = std::string("cannot create the doorbell ring: ") + rte_strerror(rte_errno);
      return false;
    }
  }
  busy_.clear();
  for (const Attached& a : qps_)
    if (!prepare(a, error)) return false;
  for (transport::Cq* cq : cqs_)
    if (!prepare(*cq, error)) return false;
  stop_.store(false);
  pause_req_.store(false);
  parked_.store(false);
  started_.store(0);
  handoff_.store(false);
  callers_drive_.store(callers_drive, std::memory_order_relaxed);
  const PacketPort* port = eng_.device_config().port;
  rx_interrupt_ = port != nullptr && port->has_rx_interrupt();
  if (rx_interrupt_ && wake_fd_ < 0) wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  rx_interrupt_ = rx_interrupt_ && wake_fd_ >= 0;
  threaded_.store(true, std::memory_order_release);
  launch(cpu);
  spin_until([&] { return started_.load(std::memory_order_acquire) != 0; });
  if (started_.load() < 0) {
    join();
    threaded_.store(false, std::memory_order_release);
    error = start_error_;
    return false;
  }
  return true;
}

void EngineThread::stop() {
  std::lock_guard<std::recursive_mutex> lock(control_);
  if (!threaded()) return;
  stop_.store(true, std::memory_order_release);
  wake();
  join();
  // A caller's turn begun before the stop ends before embedded mode starts.
  lock_drive();
  threaded_.store(false, std::memory_order_release);
  unlock_drive();
  for (transport::Cq* cq : cqs_) cq->set_threaded(false);
}

void EngineThread::launch(int cpu) {
  worker_lcore_ = claim_worker_lcore();
  if (worker_lcore_ != LCORE_ID_ANY) {
    launch_cpu_ = cpu;
    if (rte_eal_remote_launch(&EngineThread::lcore_main, this, worker_lcore_) == 0) return;
    release_worker_lcore(worker_lcore_);
    worker_lcore_ = LCORE_ID_ANY;
  }
  thread_ = util::quiet_thread("uroce-engine", &EngineThread::loop, this, cpu);
}

int EngineThread::lcore_main(void* self) {
  util::block_async_signals();  // as quiet_thread's
  pthread_setname_np(pthread_self(), "uroce-engine");
  auto* t = static_cast<EngineThread*>(self);
  t->loop(t->launch_cpu_);
  return 0;
}

void EngineThread::join() {
  if (worker_lcore_ == LCORE_ID_ANY) {
    thread_.join();
    return;
  }
  rte_eal_wait_lcore(worker_lcore_);
  release_worker_lcore(worker_lcore_);
  worker_lcore_ = LCORE_ID_ANY;
}

void EngineThread::wake() {
  // After the caller's store (a doorbell, a request): a seq_cst fence
  // against nap()'s store of sleeping_ then check of the same.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!sleeping_.load(std::memory_order_acquire)) return;
  wake_word_.fetch_add(1, std::memory_order_release);
  futex(&wake_word_, FUTEX_WAKE_PRIVATE, 1, nullptr);
  // Both: a receive-interrupt sleep that could not start falls back to the
  // futex.
  if (rx_sleeping_.load(std::memory_order_relaxed)) {
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
  }
}

bool EngineThread::work_waiting() const {
  return rte_ring_count(doorbells_) != 0 || pause_req_.load(std::memory_order_acquire) ||
         stop_.load(std::memory_order_acquire) || handoff_.load(std::memory_order_acquire);
}

void EngineThread::nap(uint64_t ns, bool may_rx_sleep) {
  const uint32_t seen = wake_word_.load(std::memory_order_acquire);
  const bool rx = may_rx_sleep && rx_interrupt_ && ns >= kRxSleepMinNs;
  rx_sleeping_.store(rx, std::memory_order_relaxed);
  // Release: a waker that sees sleeping_ sees rx_sleeping_ too.
  sleeping_.store(true, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!work_waiting() && !(rx && eng_.device_config().port->rx_sleep(ns, wake_fd_))) {
    const timespec t{time_t(ns / 1000000000u), long(ns % 1000000000u)};
    futex(&wake_word_, FUTEX_WAIT_PRIVATE, seen, &t);
  }
  sleeping_.store(false, std::memory_order_relaxed);
  if (rx) {
    rx_sleeping_.store(false, std::memory_order_relaxed);
    uint64_t count;
    (void)!read(wake_fd_, &count, sizeof count);  // non-blocking: what wakers wrote
  }
}

void EngineThread::idle_wait(uint64_t idle_since, uint64_t& backoff, uint64_t deadline) {
  const uint64_t max_ns = uint64_t(eng_.device_config().idle_sleep_max_us) * 1000;
  if (max_ns == 0 || monotonic_ns() - idle_since < kIdleSpinNs) {
    std::this_thread::yield();
    return;
  }
  // A frame ends a sleep on the port's interrupt: such sleeps may be long.
  const uint64_t cap = rx_interrupt_ ? std::max(max_ns, kRxSleepMaxNs) : max_ns;
  // Never past the engine's next timer (retransmission, RNR, ARP, pacing).
  uint64_t ns = std::min(backoff, cap);
  if (deadline != kNever) {
    const uint64_t now = eng_.device_config().clock->now_ns();
    ns = deadline > now ? std::min(ns, deadline - now) : 0;
  }
  if (ns > 0) nap(ns, true);
  backoff = std::min(backoff * 2, cap);
}

void EngineThread::loop(int cpu) {
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (const int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set); e != 0) {
      start_error_ = "cannot pin the engine thread to cpu " + std::to_string(cpu) + ": " + std::strerror(e);
      started_.store(-1, std::memory_order_release);
      return;
    }
  }
  // An lcore id gives this thread its own mempool caches; without one DPDK
  // still works, through the pools' shared rings. A worker lcore has one.
  const bool eal_lcore = rte_lcore_id() != LCORE_ID_ANY;
  const bool registered = !eal_lcore && rte_thread_register() == 0;
  if (!eal_lcore && !registered)
    std::fprintf(stderr, "uroce: engine thread not registered with DPDK (%s); mempool caches bypassed\n",
                 rte_strerror(rte_errno));
  // Naps end when asked: a slack of 50 us (Linux's default) on each would
  // add to the latency of the first frame after a quiet spell.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  // A caller may drive as soon as threaded_ is set, before this line.
  lock_drive();
  engine_lcore_ = rte_lcore_id();
  unlock_drive();
  started_.store(1, std::memory_order_release);
  unsigned idle = 0;
  uint64_t idle_since = 0;
  uint64_t backoff = kFirstNapNs;
  uint64_t seen_turns = caller_turns_.load(std::memory_order_relaxed);
  uint64_t callers_backoff = kFirstCallersNapNs;
  for (;;) {
    if (pause_req_.load(std::memory_order_acquire)) {
      park();
      continue;
    }
    if (stop_.load(std::memory_order_acquire)) break;
    if (callers_driving(seen_turns)) {
      // The application runs the engine, timers included. Look again after
      // a nap that grows while callers go on driving.
      const uint64_t max_ns = uint64_t(eng_.device_config().idle_sleep_max_us) * 1000;
      callers_nap_.store(true, std::memory_order_relaxed);
      if (max_ns > 0) nap(std::min(callers_backoff, max_ns), false);
      else std::this_thread::yield();
      callers_nap_.store(false, std::memory_order_relaxed);
      callers_backoff = std::min(callers_backoff * 2, std::max(max_ns, kFirstCallersNapNs));
      idle = 0;
      backoff = kFirstNapNs;
      continue;
    }
    if (!try_lock_drive()) {
      std::this_thread::yield();
      continue;
    }
    const int work = turn();
    // Read under the lock: in callers-drive mode a caller may be running
    // the engine (and growing its timer lists) as soon as it is released.
    const uint64_t deadline = work == 0 && idle >= kIdleSpins ? eng_.next_deadline() : kNever;
    unlock_drive();
    if (work > 0) {
      idle = 0;
      backoff = kFirstNapNs;
      // Work the callers left (a program that waits by watching memory,
      // as ib_write_lat does, drives only between its waits): look again
      // soon after they next drive.
      callers_backoff = kFirstCallersNapNs;
    } else if (++idle == kIdleSpins) {
      idle_since = monotonic_ns();
    } else if (idle > kIdleSpins) {
      idle_wait(idle_since, backoff, deadline);
    }
  }
  // Posts made before stop() reach the transport; embedded mode goes on.
  lock_drive();
  drain_doorbells();
  publish();
  // Callers may drive until stop() takes the lock: not on an lcore id
  // that is unregistered below and may go to another thread.
  engine_lcore_ = LCORE_ID_ANY;
  unlock_drive();
  if (registered) rte_thread_unregister();
}

int EngineThread::turn() {
  int work = drain_doorbells();
  work += eng_.poll();
  publish();
  return work;
}

bool EngineThread::callers_driving(uint64_t& seen) {
  if (!callers_drive()) return false;
  // A blocked waiter needs the engine thread even while other threads
  // drive now and then (a post, a poll): their turns are not continuous.
  if (handoff_.exchange(false, std::memory_order_acq_rel) || waiters_.load(std::memory_order_acquire) > 0) {
    seen = caller_turns_.load(std::memory_order_relaxed);
    return false;
  }
  const uint64_t now = caller_turns_.load(std::memory_order_relaxed);
  if (now == seen) return false;
  seen = now;
  // Posts a caller could not run (its try-lock failed) are the engine
  // thread's to run.
  return rte_ring_count(doorbells_) == 0;
}

void EngineThread::lock_drive() {
  spin_until([&] { return try_lock_drive(); });
}

bool EngineThread::drive() {
  if (!try_lock_drive()) return false;
  if (!threaded()) {
    unlock_drive();
    return false;
  }
  // The engine thread's lcore id, for DPDK's per-lcore mempool caches: the
  // drive lock makes this thread the only one using it meanwhile, and an
  // unregistered caller would otherwise bypass the caches.
  const unsigned own = RTE_PER_LCORE(_lcore_id);
  RTE_PER_LCORE(_lcore_id) = engine_lcore_;
  turn();
  RTE_PER_LCORE(_lcore_id) = own;
  caller_turns_.store(caller_turns_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  unlock_drive();
  // The turn may have armed a timer that an engine thread asleep until
  // the next frame does not know of.
  if (rx_sleeping_.load(std::memory_order_relaxed)) wake();
  return true;
}

void EngineThread::begin_wait() {
  waiters_.fetch_add(1, std::memory_order_acq_rel);
  if (!threaded() || !callers_drive()) return;
  handoff_.store(true, std::memory_order_release);
  wake();
}

void EngineThread::end_wait() { waiters_.fetch_sub(1, std::memory_order_acq_rel); }

void EngineThread::park() {
  // Every post made before the pause request is now in a ring: run them,
  // so a control call sees them (dereg_mr answers EBUSY, modify flushes).
  lock_drive();
  drain_doorbells();
  publish();
  unlock_drive();
  parked_.store(true, std::memory_order_release);
  spin_until([&] { return !pause_req_.load(std::memory_order_acquire); });
  parked_.store(false, std::memory_order_release);
}

void EngineThread::pause() {
  control_.lock();
  if (depth_++ > 0) return;
  handshake_ = threaded();
  if (!handshake_) return;
  pause_req_.store(true, std::memory_order_seq_cst);
  wake();
  spin_until([&] { return parked_.load(std::memory_order_acquire); });
  // No caller's turn either while the control call runs.
  lock_drive();
}

void EngineThread::resume() {
  if (--depth_ == 0 && handshake_) {
    handshake_ = false;
    unlock_drive();
    pause_req_.store(false, std::memory_order_release);
    // Until the engine has left park(), a next pause() could mistake the
    // old acknowledgement for a new one.
    spin_until([&] { return !parked_.load(std::memory_order_acquire); });
  }
  control_.unlock();
}

void EngineThread::ring(QpSubmit& s, bool urgent) {
  // Enqueue-then-flag here, clear-flag-then-dequeue in drain_doorbells,
  // both read-modify-writes of the flag: either the engine's drain sees the
  // commands or this sees the flag cleared and rings again.
  if (!s.doorbell.exchange(true, std::memory_order_acq_rel)) {
    while (rte_ring_enqueue(doorbells_, &s) != 0) rte_pause();  // a slot per QP: never full for long
  } else if (!callers_drive()) {
    return;
  }
  // A caller that runs its own post needs no engine thread; one whose
  // try-lock fails leaves the post to the lock's holder or the engine
  // thread (which runs waiting doorbells even while callers drive).
  if (callers_drive()) {
    if (!urgent && callers_nap_.load(std::memory_order_relaxed)) return;
    if (drive()) return;
  }
  wake();
}

int EngineThread::drain_doorbells() {
  int ran = 0;
  void* batch[kDoorbellBurst];
  for (;;) {
    const unsigned n = rte_ring_dequeue_burst(doorbells_, batch, kDoorbellBurst, nullptr);
    for (unsigned i = 0; i < n; ++i) {
      QpSubmit& s = *static_cast<QpSubmit*>(batch[i]);
      // An exchange, not a store: when a post's own exchange came first,
      // this one reads its `true` and so sees the commands it enqueued.
      s.doorbell.exchange(false, std::memory_order_acq_rel);
      ran += execute(s, *s.qp);
      mark_busy(s);
    }
    if (n < kDoorbellBurst) return ran;
  }
}

void EngineThread::mark_busy(QpSubmit& s) {
  if (s.busy) return;
  s.busy = true;
  busy_.push_back(&s);  // capacity reserved in attach_qp: no allocation
}

void EngineThread::publish() {
  // Retired counts first: a completion polled means its slot is free.
  for (size_t i = 0; i < busy_.size();) {
    QpSubmit& s = *busy_[i];
    if (publish_retired(s, *s.qp)) {
      ++i;
      continue;
    }
    s.busy = false;
    busy_[i] = busy_.back();
    busy_.pop_back();
  }
  for (transport::Cq* cq : cqs_)
    if (cq->pending()) cq->publish();
}

bool EngineThread::attach_qp(transport::Qp& qp, std::unique_ptr<QpSubmit>& sub, std::string& error) {
  if (threaded() && qps_.size() >= kMaxQps) {
    error = "threaded mode drives at most " + std::to_string(kMaxQps) + " QPs per device";
    return false;
  }
  qps_.push_back({&qp, &sub});
  busy_.reserve(qps_.capacity());
  if (threaded() && !prepare(qps_.back(), error)) {
    qps_.pop_back();
    return false;
  }
  slot_[&qp] = qps_.size() - 1;
  return true;
}

void EngineThread::detach_qp(transport::Qp& qp) {
  // In O(1): a device may hold thousands of QPs, destroyed one by one.
  const auto it = slot_.find(&qp);
  if (it == slot_.end()) return;
  const size_t i = it->second;
  slot_.erase(it);
  QpSubmit* s = qps_[i].sub->get();
  qps_[i] = qps_.back();
  qps_.pop_back();
  if (i < qps_.size()) slot_[qps_[i].qp] = i;
  if (s == nullptr) return;
  if (s->busy) std::erase(busy_, s);
  if (!s->doorbell.load()) return;
  // Only a post racing with the QP's destruction (which verbs forbids) can
  // leave it in the doorbell ring; take it out rather than leave a dangling
  // pointer for the engine.
  void* batch[kDoorbellBurst];
  unsigned n = rte_ring_dequeue_burst(doorbells_, batch, kDoorbellBurst, nullptr);
  std::vector<void*> keep;
  while (n > 0) {
    for (unsigned i = 0; i < n; ++i)
      if (batch[i] != s) keep.push_back(batch[i]);
    n = rte_ring_dequeue_burst(doorbells_, batch, kDoorbellBurst, nullptr);
  }
  for (void* p : keep) rte_ring_enqueue(doorbells_, p);
}

bool EngineThread::attach_cq(transport::Cq& cq, std::string& error) {
  cqs_.push_back(&cq);
  if (threaded() && !prepare(cq, error)) {
    cqs_.pop_back();
    return false;
  }
  return true;
}

void EngineThread::detach_cq(transport::Cq& cq) { std::erase(cqs_, &cq); }

void EngineThread::after_control(QpSubmit* sub) {
  if (!threaded() || sub == nullptr) return;
  sub->state = sub->qp->state;
  // Paused: the engine's own bookkeeping may be updated from here.
  if (publish_retired(*sub, *sub->qp)) mark_busy(*sub);
}

}  // namespace uroce::detail
