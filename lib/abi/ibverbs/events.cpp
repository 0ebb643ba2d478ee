// SPDX-License-Identifier: BSD-3-Clause
// Completion channels and asynchronous events over uroce's. A channel's
// descriptor is the native eventfd itself. The device's event queue is one
// for all its contexts, while verbs gives each context its own: a router
// thread per open device takes each event and queues it on the context
// that owns its object, whose async_fd (an eventfd of its own) counts its
// queue. Programs poll either descriptor, set it O_NONBLOCK, and the calls
// honour it. This layer also keeps the verbs bookkeeping: which ibv_cq /
// ibv_qp / ibv_srq an event names, and the *_events_completed counters
// destroy waits on.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "exports.h"
#include "shim.h"
#include "../../util/quiet_thread.h"

namespace uroce::abi {
namespace {

template <class T, class Native>
T* find_impl(const std::vector<T*>& v, const Native* native) {
  auto it = std::find_if(v.begin(), v.end(), [&](T* x) { return x->impl.get() == native; });
  return it == v.end() ? nullptr : *it;
}

// Counts one more event handed out for an object, under its mutex.
void count_reported(pthread_mutex_t& mutex, uint32_t& reported) {
  pthread_mutex_lock(&mutex);
  ++reported;
  pthread_mutex_unlock(&mutex);
}

// Adds n acknowledged events and wakes a destroy waiting for them.
void count_acked(pthread_mutex_t& mutex, pthread_cond_t& cond, uint32_t& completed, unsigned n) {
  pthread_mutex_lock(&mutex);
  completed += n;
  pthread_cond_signal(&cond);
  pthread_mutex_unlock(&mutex);
}

enum class Element { qp, cq, srq, port, device };

Element element_of(ibv_event_type t) {
  switch (t) {
    case IBV_EVENT_CQ_ERR:
      return Element::cq;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      return Element::qp;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      return Element::srq;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE:
      return Element::port;
    default:
      return Element::device;
  }
}

// The context an object belongs to.
Context* owner(ibv_context* c) { return ctx_of(c); }

void push_event(Context& ctx, const PendingEvent& ev) {
  std::lock_guard<std::mutex> lock(ctx.event_mutex);
  ctx.events.push_back(ev);
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t w = write(ctx.event_fd, &one, sizeof one);
}

// One count off a context's semaphore eventfd, whose count is the length
// of its queue (under event_mutex): never blocks.
void take_count(Context& ctx) {
  uint64_t v;
  [[maybe_unused]] const ssize_t r = read(ctx.event_fd, &v, sizeof v);
}

// To the context that owns the event's object; a port or device event to
// every context, as the kernel tells every open file of the device. An
// object no longer listed is being destroyed: its event is dropped. Under
// the device's control.
void route(DeviceRec& rec, const AsyncEvent& e) {
  PendingEvent ev{e.event_type};
  Context* to = nullptr;
  switch (element_of(e.event_type)) {
    case Element::qp:
      if ((ev.qp = find_impl(rec.qps, e.qp))) to = owner(ev.qp->qp.context);
      break;
    case Element::cq:
      if ((ev.cq = find_impl(rec.cqs, e.cq))) to = owner(ev.cq->cq.context);
      break;
    case Element::srq:
      if ((ev.srq = find_impl(rec.srqs, e.srq))) to = owner(ev.srq->srq.context);
      break;
    case Element::port:
    case Element::device:
      for (Context* ctx : rec.contexts) push_event(*ctx, ev);
      return;
  }
  if (to) push_event(*to, ev);
}

void run_router(DeviceRec* rec) {
  const int device_fd = rec->device().async_event_fd();
  // A daemon's device reports its death once and then stays readable (EOF
  // on its pipe): after that event only the stop is watched.
  bool fatal = false;
  for (;;) {
    pollfd fds[2] = {{rec->router_stop, POLLIN, 0}, {device_fd, POLLIN, 0}};
    if (poll(fds, fatal ? 1 : 2, -1) < 0) continue;  // EINTR
    if (fds[0].revents) return;
    std::lock_guard<std::mutex> lock(rec->control);
    AsyncEvent e;
    while (rec->device().get_async_event(e)) {
      route(*rec, e);
      if (e.event_type == IBV_EVENT_DEVICE_FATAL) fatal = true;
    }
  }
}

// Fills `ev` from a routed event and counts it as handed out.
void to_verbs_event(const PendingEvent& p, ibv_async_event& ev) {
  std::memset(&ev, 0, sizeof ev);
  ev.event_type = p.type;
  switch (element_of(p.type)) {
    case Element::qp:
      ev.element.qp = &p.qp->qp;
      count_reported(p.qp->qp.mutex, p.qp->events_reported);
      break;
    case Element::cq:
      ev.element.cq = &p.cq->cq;
      count_reported(p.cq->cq.mutex, p.cq->async_events_reported);
      break;
    case Element::srq:
      ev.element.srq = &p.srq->srq;
      count_reported(p.srq->srq.mutex, p.srq->events_reported);
      break;
    case Element::port:
      ev.element.port_num = 1;
      break;
    case Element::device:
      break;
  }
}

}  // namespace

bool start_event_router(DeviceRec& rec) {
  rec.router_stop = eventfd(0, EFD_CLOEXEC);
  if (rec.router_stop < 0) return false;
  rec.router = uroce::util::quiet_thread("uroce-events", run_router, &rec);
  return true;
}

void stop_event_router(DeviceRec& rec) {
  if (rec.router_stop < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t w = write(rec.router_stop, &one, sizeof one);
  rec.router.join();
  close(rec.router_stop);
  rec.router_stop = -1;
}

bool join_events(Context& ctx) {
  // Blocking, as the program expects its async_fd to be until it sets
  // O_NONBLOCK; the count read back is never more than was written.
  ctx.event_fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
  if (ctx.event_fd < 0) return false;
  std::lock_guard<std::mutex> lock(ctx.rec->control);
  ctx.rec->contexts.push_back(&ctx);
  return true;
}

void leave_events(Context& ctx) {
  {
    std::lock_guard<std::mutex> lock(ctx.rec->control);
    erase_one(ctx.rec->contexts, &ctx);
  }
  if (ctx.event_fd >= 0) close(ctx.event_fd);
  ctx.event_fd = -1;
}

void withdraw_events(DeviceRec& rec, const void* object) {
  for (Context* ctx : rec.contexts) {
    std::lock_guard<std::mutex> lock(ctx->event_mutex);
    auto names = [&](const PendingEvent& e) { return e.qp == object || e.cq == object || e.srq == object; };
    for (const PendingEvent& e : ctx->events)
      if (names(e)) take_count(*ctx);
    ctx->events.erase(std::remove_if(ctx->events.begin(), ctx->events.end(), names), ctx->events.end());
  }
}

}  // namespace uroce::abi

using namespace uroce;
using namespace uroce::abi;

extern "C" {

UROCE_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* c) {
  Context* ctx = ctx_of(c);
  auto* ch = new Channel;
  int err = 0;
  {
    std::lock_guard<std::mutex> lock(ctx->rec->control);
    ch->impl = ctx->device().create_comp_channel(err);
  }
  if (!ch->impl) return delete ch, errno = err ? err : ENOMEM, nullptr;
  ch->ch.context = c;
  ch->ch.fd = ch->impl->fd();
  ch->ch.refcnt = 0;
  return &ch->ch;
}

UROCE_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  if (exited()) return 0;
  Channel* ch = channel_of(channel);
  {
    std::lock_guard<std::mutex> lock(ctx_of(channel->context)->rec->control);
    if (channel->refcnt) return EBUSY;
    ch->impl.reset();
  }
  delete ch;
  return 0;
}

UROCE_V11(ibv_get_cq_event) int uroce_v11_ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq_out,
                                                           void** cq_context) {
  Channel* ch = channel_of(channel);
  for (;;) {
    CompletionQueue* native = nullptr;
    if (const int rc = ch->impl->get_event(native); rc != 0) return errno = rc, -1;
    std::lock_guard<std::mutex> lock(ch->cqs_mutex);
    Cq* cq = find_impl(ch->cqs, native);
    if (!cq) {
      // Its destroy has begun and waits for this event: acknowledged here.
      native->ack_events(1);
      continue;
    }
    count_reported(cq->cq.mutex, cq->comp_events_reported);
    *cq_out = &cq->cq;
    *cq_context = cq->cq.cq_context;
    return 0;
  }
}

UROCE_V11(ibv_ack_cq_events) void uroce_v11_ibv_ack_cq_events(ibv_cq* c, unsigned int n) {
  cq_of(c)->impl->ack_events(n);
  count_acked(c->mutex, c->cond, c->comp_events_completed, n);
}

// Waits by poll() on the context's descriptor, unless it is O_NONBLOCK.
UROCE_V11(ibv_get_async_event) int uroce_v11_ibv_get_async_event(ibv_context* c, ibv_async_event* ev) {
  Context* ctx = ctx_of(c);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(ctx->event_mutex);
      if (!ctx->events.empty()) {
        take_count(*ctx);
        to_verbs_event(ctx->events.front(), *ev);
        ctx->events.pop_front();
        return 0;
      }
    }
    const int flags = fcntl(c->async_fd, F_GETFL);
    if (flags >= 0 && (flags & O_NONBLOCK)) return errno = EAGAIN, -1;
    pollfd p{c->async_fd, POLLIN, 0};
    if (poll(&p, 1, -1) < 0) return -1;
  }
}

UROCE_V11(ibv_ack_async_event) void uroce_v11_ibv_ack_async_event(ibv_async_event* ev) {
  switch (element_of(ev->event_type)) {
    case Element::qp: {
      ibv_qp* q = ev->element.qp;
      count_acked(q->mutex, q->cond, q->events_completed, 1);
      break;
    }
    case Element::cq: {
      ibv_cq* c = ev->element.cq;
      count_acked(c->mutex, c->cond, c->async_events_completed, 1);
      break;
    }
    case Element::srq: {
      ibv_srq* s = ev->element.srq;
      count_acked(s->mutex, s->cond, s->events_completed, 1);
      break;
    }
    default:
      break;
  }
}

}  // extern "C"
