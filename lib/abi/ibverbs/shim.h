// SPDX-License-Identifier: BSD-3-Clause
// The objects the drop-in libibverbs hands out: each public verbs struct
// (ibv_device, ibv_context, ibv_pd, ...) is the first member of a record
// that also holds the uroce object behind it, so a pointer the application
// passes back converts to the record with a cast (the struct sits at
// offset 0). Only uroce's public C++ API is used below this layer.
#pragma once

#include <infiniband/verbs.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config.h"
#include "uroce/port/endpoint.h"
#include "uroce/verbs/verbs.h"

namespace uroce::abi {

struct Context;
struct Cq;
struct Qp;
struct Srq;

// struct ibv_device, followed by a non-NULL pointer where rdma-core keeps
// its provider's ops: providers loaded by other libraries (libmlx5,
// libefa) compare that pointer with their own and leave the device alone.
struct DeviceRec {
  ibv_device dev{};
  const void* foreign_ops = nullptr;
  int index = 0;
  DeviceSettings settings;
  // The open port and device, shared by every context of this device; or,
  // with settings.daemon, the device as a client of uroced.
  std::mutex open_mutex;
  std::unique_ptr<Endpoint> endpoint;
  std::unique_ptr<Device> remote;
  int open_count = 0;
  bool is_open() const { return endpoint || remote; }
  Device& device() { return endpoint ? endpoint->device() : *remote; }
  // Control calls (create, destroy, modify, query, SRQ posts) on this
  // device's objects, from any context: the engine parks for each, one
  // caller at a time.
  std::mutex control;
  // Live CQs, QPs and SRQs of every context (under `control`), to name the
  // one an asynchronous event is about, and the open contexts, to hand it
  // to the one that owns that object: the device's event queue is one.
  std::vector<Cq*> cqs;
  std::vector<Qp*> qps;
  std::vector<Srq*> srqs;
  std::vector<Context*> contexts;
  // Moves the device's events to their contexts' queues while the device
  // is open (events.cpp); `router_stop` is an eventfd that ends it.
  std::thread router;
  int router_stop = -1;
  // Called (under `control`) before one of this device's QPs is destroyed:
  // the drop-in librdmacm's connection manager lets go of it there, since
  // programs destroy a connected QP with ibv_destroy_qp as often as with
  // rdma_destroy_qp.
  void (*before_qp_destroy)(void* arg, QueuePair& qp) = nullptr;
  void* before_qp_destroy_arg = nullptr;
};

// An event routed to a context, not yet handed out: its object is named
// by the record, so that a destroy can withdraw it.
struct PendingEvent {
  ibv_event_type type;
  Qp* qp = nullptr;
  Cq* cq = nullptr;
  Srq* srq = nullptr;
};

struct Context {
  verbs_context vctx{};  // its last member is the ibv_context handed out
  DeviceRec* rec = nullptr;
  Device& device() { return rec->device(); }
  // This context's asynchronous events: `event_fd` (its async_fd) is a
  // semaphore eventfd that counts them, under event_mutex.
  std::mutex event_mutex;
  std::deque<PendingEvent> events;
  int event_fd = -1;
};

struct Pd {
  ibv_pd pd{};
  std::unique_ptr<ProtectionDomain> impl;
};

struct Mr {
  ibv_mr mr{};
  std::unique_ptr<MemoryRegion> impl;
};

struct Mw {
  ibv_mw mw{};
  std::unique_ptr<MemoryWindow> impl;
};

// Threaded mode lets one application thread poll a CQ and post to a QP at
// a time; verbs promises any number: the mutexes bridge the two.
// An ibv_cq_ex begins with the fields of an ibv_cq (ibv_cq_ex_to_cq is a
// cast): every CQ is one, those made by ibv_create_cq_ex fill the rest.
struct Cq {
  union {
    ibv_cq_ex ex{};
    ibv_cq cq;
  };
  std::unique_ptr<CompletionQueue> impl;
  std::mutex poll_mutex;
  uint32_t empty_polls = 0;  // under poll_mutex, as empty_since
  std::chrono::steady_clock::time_point empty_since;

  // A program that spins on an empty CQ holds a CPU that another thread
  // may need to produce the completion: the engine thread, or on a machine
  // with more busy threads than cores the peer process itself (without a
  // yield, ucx_perftest's am_lat between two processes took 80 us instead
  // of 15 on a loaded 2-core machine). After kSpinBeforeYield of empty
  // polls the poller yields, as the engine itself does when idle; not
  // sooner, since a yield (a system call) delays the completion that
  // arrives meanwhile. The clock is read once per kEmptyPollsPerClockRead
  // polls. Called under poll_mutex after each poll (ibv_poll_cq,
  // ibv_start_poll); true when the caller should yield, once the mutex is
  // released.
  static constexpr uint32_t kEmptyPollsPerClockRead = 64;
  static constexpr auto kSpinBeforeYield = std::chrono::microseconds(20);
  bool after_poll(bool got) {
    if (got) {
      empty_polls = 0;
      return false;
    }
    if (++empty_polls % kEmptyPollsPerClockRead != 0) return false;
    const auto now = std::chrono::steady_clock::now();
    if (empty_polls == kEmptyPollsPerClockRead) {
      empty_since = now;
      return false;
    }
    return now - empty_since >= kSpinBeforeYield;
  }
  // Events handed out, under cq.mutex; ibv_ack_* counts them back in the
  // ibv_cq's *_events_completed and destroy waits on cq.cond for both.
  uint32_t comp_events_reported = 0;
  uint32_t async_events_reported = 0;
  // The completion ibv_start_poll / ibv_next_poll stepped to, read by
  // ibv_wc_read_*; poll_mutex is held from a successful start to end_poll.
  ibv_wc current{};
};

struct Srq {
  ibv_srq srq{};
  std::unique_ptr<SharedReceiveQueue> impl;
  uint32_t events_reported = 0;  // under srq.mutex, as Cq's
};

// struct ibv_comp_channel; `refcnt` counts the CQs that use it.
struct Channel {
  ibv_comp_channel ch{};
  std::unique_ptr<CompletionChannel> impl;
  std::mutex cqs_mutex;
  std::vector<Cq*> cqs;  // to turn an event's CompletionQueue into its ibv_cq
};

// The WRs built between ibv_wr_start and ibv_wr_complete (qp_ex.cpp),
// in storage sized at creation from the QP's capacities: no allocation
// per post.
struct WrBatch {
  std::vector<SendWr> wrs;     // max_send_wr
  std::vector<ibv_sge> sges;   // max_send_sge per WR
  std::vector<uint8_t> bytes;  // max_inline_data per WR, inline data copied
  uint32_t count = 0;
  uint32_t sge_stride = 0;
  uint32_t inline_stride = 0;
  int error = 0;  // the first error of this batch, reported by wr_complete
  // Held from ibv_wr_start to complete/abort: one batch at a time per QP,
  // while ibv_post_recv (which takes only post_mutex) stays open to the
  // thread building it.
  std::mutex mutex;
};

// ibv_qp_ex begins with its ibv_qp (ibv_qp_to_qp_ex's answer is the same
// record); its post API is filled for QPs made with send_ops_flags.
struct Qp {
  union {
    ibv_qp_ex ex{};
    ibv_qp qp;
  };
  std::unique_ptr<QueuePair> impl;
  uint32_t events_reported = 0;  // under qp.mutex, as Cq's
  // Sends and receives share the QP's one submission ring in threaded
  // mode: one mutex for both.
  std::mutex post_mutex;
  std::unique_ptr<WrBatch> batch;  // set when the ibv_wr_* API is enabled
};

struct Ah {
  ibv_ah ah{};
  std::unique_ptr<AddressHandle> impl;
};

inline Context* ctx_of(ibv_context* c) { return reinterpret_cast<Context*>(verbs_get_ctx(c)); }
inline DeviceRec* rec_of(ibv_device* d) { return reinterpret_cast<DeviceRec*>(d); }
inline Pd* pd_of(ibv_pd* p) { return reinterpret_cast<Pd*>(p); }
inline Cq* cq_of(ibv_cq* c) { return reinterpret_cast<Cq*>(c); }
inline Qp* qp_of(ibv_qp* q) { return reinterpret_cast<Qp*>(q); }
inline Srq* srq_of(ibv_srq* s) { return reinterpret_cast<Srq*>(s); }
inline Channel* channel_of(ibv_comp_channel* c) { return reinterpret_cast<Channel*>(c); }

// Takes x out of one of the DeviceRec's or Channel's lists.
template <class T>
void erase_one(std::vector<T*>& v, T* x) {
  v.erase(std::remove(v.begin(), v.end(), x), v.end());
}

// Blocks on the object's cond until `acked()` holds: destroying a CQ, QP
// or SRQ waits until the events handed out for it are acknowledged, as
// libibverbs' destroy calls do.
template <class Pred>
void wait_events_acked(pthread_mutex_t& mutex, pthread_cond_t& cond, Pred acked) {
  pthread_mutex_lock(&mutex);
  while (!acked()) pthread_cond_wait(&cond, &mutex);
  pthread_mutex_unlock(&mutex);
}

// One line on stderr, prefixed "uroce libibverbs: "; `once` keys lines
// that a program would otherwise repeat.
void log_line(const std::string& text);
void log_once(const char* key, const std::string& text);

// The devices of this process's settings, built on first use.
std::vector<DeviceRec*>& devices();
// Whether the library's exit handler has closed the devices. A program's
// exit handler registered before its first verbs call runs after it, as do
// the destructors of static objects made before: destroying an object then
// is a no-op that succeeds (the process's end frees it), instead of
// reaching a device that is gone.
bool exited();
// Whether `path` is the ibdev_path of one of uroce's devices.
DeviceRec* device_by_ibdev_path(const std::string& path);
// The node GUID (EUI-64 of the port's MAC), in network byte order.
uint64_t node_guid_be(const DeviceRec& rec);

// The data path ops placed in ibv_context::ops (verbs.cpp).
void fill_data_ops(ibv_context_ops& ops);
// ibv_create_cq / ibv_create_qp's work, shared with their _ex forms
// (verbs.cpp); nullptr with errno set on failure.
Cq* create_cq(ibv_context* c, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector);
Qp* create_qp(ibv_pd* p, ibv_qp_init_attr* init);
// The verbs_context ops of the extended CQ and QP (cq_ex.cpp, qp_ex.cpp).
ibv_cq_ex* create_cq_ex_op(ibv_context* c, ibv_cq_init_attr_ex* attr);
ibv_qp* create_qp_ex_op(ibv_context* c, ibv_qp_init_attr_ex* attr);
// Asynchronous events (events.cpp): the router runs while the device is
// open (under open_mutex); a context joins and leaves the routing; a
// destroy withdraws the events not yet handed out for its object (under
// the device's control).
bool start_event_router(DeviceRec& rec);
void stop_event_router(DeviceRec& rec);
bool join_events(Context& ctx);
void leave_events(Context& ctx);
void withdraw_events(DeviceRec& rec, const void* object);
// One open of the device fewer (device.cpp).
void release_device(DeviceRec& rec);
// Port attributes, whole (verbs_context::query_port honours its size).
int fill_port_attr(Context& ctx, uint8_t port, ibv_port_attr& attr);

}  // namespace uroce::abi
