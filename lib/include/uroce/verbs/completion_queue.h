// Completion queue: a ring of ibv_wc entries filled by the transport and
// drained by poll(), as ibv_poll_cq.
//
// In threaded mode (Device::start_engine_thread) the engine thread moves
// completions into a single-producer/single-consumer ring that poll() reads
// without a lock: one application thread may poll a CQ at a time.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <vector>

struct rte_ring;

namespace uroce {

namespace detail {
class EngineThread;
}
namespace test {
struct CompletionQueueAccess;  // tests: counters near their 2^32 wrap
}

class CompletionQueue {
 public:
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  // Up to n completions into wc, oldest first; returns how many.
  int poll(int n, ibv_wc* wc);
  uint32_t capacity() const { return capacity_; }
  // Completions waiting; in threaded mode, those poll() can take now.
  uint32_t size() const;
  // A completion arrived while the ring was full (verbs: IBV_EVENT_CQ_ERR).
  // It is kept in an overflow list and still returned in order: never lost.
  // In threaded mode the engine's side holds another `capacity` entries
  // before this is set.
  bool overflowed() const { return overflowed_.load(std::memory_order_relaxed); }

  // Transport side: append one completion.
  void push(const ibv_wc& wc);
  // Transport side: QPs reporting into this CQ (it must outlive them).
  void attach() { ++users_; }
  void detach() { --users_; }

 private:
  friend class Device;
  friend class detail::EngineThread;
  friend struct test::CompletionQueueAccess;
  explicit CompletionQueue(uint32_t capacity);
  // The transport's side of the queue, oldest first.
  int take(int n, ibv_wc* wc);
  bool pending() const { return head_ != tail_ || !overflow_.empty(); }
  // Engine thread: as many completions as fit into wc_ring_.
  void publish();

  // A power of two long (at least capacity_), indexed by the free-running
  // counters masked: a modulo by any other length would cost a division per
  // completion and would jump when the counters wrap at 2^32.
  std::vector<ibv_wc> ring_;
  uint32_t mask_;
  std::vector<ibv_wc> overflow_;
  uint32_t capacity_;
  uint32_t head_ = 0;
  uint32_t tail_ = 0;
  uint32_t users_ = 0;
  std::atomic<bool> overflowed_{false};
  detail::EngineThread* thread_ = nullptr;
  rte_ring* wc_ring_ = nullptr;  // threaded mode: engine -> application
};

}  // namespace uroce
