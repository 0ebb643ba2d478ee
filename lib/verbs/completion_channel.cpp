// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/verbs/completion_channel.h"

#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "access.h"
#include "engine/engine_thread.h"
#include "transport/cq.h"
#include "transport/cq_channel.h"
#include "uroce/client/daemon_client.h"
#include "uroce/verbs/device.h"

namespace uroce {

CompletionChannel::CompletionChannel(Device* device)
    : device_(device), core_(std::make_unique<transport::CqChannel>()) {}

CompletionChannel::~CompletionChannel() {
  if (core_->users() != 0) {
    std::fprintf(stderr, "uroce: completion channel destroyed while %u CQ(s) still use it\n", core_->users());
    std::abort();
  }
}

int CompletionChannel::fd() const { return remote_ ? remote_->fd() : core_->fd(); }

int CompletionChannel::get_event(CompletionQueue*& cq) {
  if (remote_) {
    client::CompletionQueue* rcq = nullptr;
    const int err = remote_->get_event(rcq);
    if (err == 0) cq = static_cast<CompletionQueue*>(rcq->context);
    return err;
  }
  for (;;) {
    detail::EngineThread* waiting = nullptr;
    if (device_->engine_thread_running()) {
      // Callers drive: the engine thread takes over while this one waits.
      if (!core_->has_event()) waiting = &detail::to_thread(*device_);
    } else {
      // Embedded mode: no one else runs the engine, so wait by running it.
      const int flags = fcntl(core_->fd(), F_GETFL);
      const bool nonblocking = flags >= 0 && (flags & O_NONBLOCK);
      while (!core_->has_event()) {
        device_->poll();
        if (nonblocking && !core_->has_event()) return EAGAIN;
      }
    }
    detail::WaitScope scope(waiting);
    if (const int e = core_->consume(); e != 0) return e;
    // Empty only if the event's CQ was destroyed after it was signalled.
    if (transport::Cq* c = core_->take(); c != nullptr) {
      cq = c->owner();
      return 0;
    }
  }
}

}  // namespace uroce
