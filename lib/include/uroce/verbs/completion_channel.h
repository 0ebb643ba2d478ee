// SPDX-License-Identifier: BSD-3-Clause
// Completion channel (ibv_comp_channel): how an application sleeps until a
// completion arrives instead of polling.
//
//   auto ch = dev.create_comp_channel(err);
//   auto cq = dev.create_cq(depth, ch.get(), 0, err);
//   cq->req_notify(false);                  // ibv_req_notify_cq
//   ... poll the CQ empty, then:
//   CompletionQueue* ev_cq;
//   ch->get_event(ev_cq);                   // ibv_get_cq_event: sleeps
//   ev_cq->ack_events(1);                   // ibv_ack_cq_events
//   ev_cq->req_notify(false); ... poll it again
//
// fd() is an eventfd, readable while an event waits: it can be watched with
// poll/epoll or an event loop (Boost.Asio's posix::stream_descriptor), and
// set O_NONBLOCK, after which get_event answers EAGAIN instead of blocking.
//
// Someone must run the engine for a completion to arrive. In threaded mode
// (Device::start_engine_thread) the engine thread does, and signals the
// channel; the application's thread sleeps. In embedded mode get_event runs
// the engine itself until an event comes (it does not sleep), and the fd
// only becomes readable while the application polls the device
// (docs/engine.md, "Waiting for completions").
#pragma once

#include "uroce/api.h"

#include <memory>

namespace uroce {

namespace transport {
class CqChannel;
}
namespace detail {
struct Access;
}

class Device;
class CompletionQueue;
namespace client {
class CompletionChannel;
}

class UROCE_API CompletionChannel {
 public:
  // Every CQ created with the channel must be destroyed first (verbs:
  // EBUSY); destroying it earlier aborts.
  ~CompletionChannel();
  CompletionChannel(const CompletionChannel&) = delete;
  CompletionChannel& operator=(const CompletionChannel&) = delete;

  int fd() const;
  // ibv_get_cq_event: waits for the next event of an armed CQ and returns
  // 0 with the CQ in `cq`, or an errno: EAGAIN when fd() is O_NONBLOCK and
  // no event waits, EINTR when a signal interrupted the wait. Each event
  // must be acknowledged (CompletionQueue::ack_events) before the CQ is
  // destroyed.
  int get_event(CompletionQueue*& cq);

 private:
  friend class Device;
  friend struct detail::Access;
  explicit CompletionChannel(Device* device);

  Device* device_;
  std::unique_ptr<transport::CqChannel> core_;
  std::unique_ptr<client::CompletionChannel> remote_;  // a client of uroced
};

}  // namespace uroce
