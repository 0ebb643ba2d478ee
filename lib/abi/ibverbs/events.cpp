// SPDX-License-Identifier: BSD-3-Clause
// Completion channels and asynchronous events over uroce's: the channel's
// and the device's descriptors are the native eventfds themselves, so a
// program polls them, sets them O_NONBLOCK, and the calls honour it. What
// this layer adds is the verbs bookkeeping: which ibv_cq / ibv_qp / ibv_srq
// an event names, and the *_events_completed counters destroy waits on.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cstring>

#include "exports.h"
#include "shim.h"

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

// Fills `ev` from a native event; false if its object is being destroyed
// (no longer listed): the event is dropped. Under the device's control.
bool to_verbs_event(DeviceRec& rec, const AsyncEvent& e, ibv_async_event& ev) {
  std::memset(&ev, 0, sizeof ev);
  ev.event_type = e.event_type;
  switch (element_of(e.event_type)) {
    case Element::qp: {
      Qp* qp = find_impl(rec.qps, e.qp);
      if (!qp) return false;
      ev.element.qp = &qp->qp;
      count_reported(qp->qp.mutex, qp->events_reported);
      return true;
    }
    case Element::cq: {
      Cq* cq = find_impl(rec.cqs, e.cq);
      if (!cq) return false;
      ev.element.cq = &cq->cq;
      count_reported(cq->cq.mutex, cq->async_events_reported);
      return true;
    }
    case Element::srq: {
      Srq* srq = find_impl(rec.srqs, e.srq);
      if (!srq) return false;
      ev.element.srq = &srq->srq;
      count_reported(srq->srq.mutex, srq->events_reported);
      return true;
    }
    case Element::port:
      ev.element.port_num = 1;
      return true;
    case Element::device:
      return true;
  }
  return true;
}

}  // namespace
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

// Waits by poll() on the device's descriptor, unless it is O_NONBLOCK, and
// takes events under the control mutex, which also keeps the object lists
// still while an event is matched to its object.
UROCE_V11(ibv_get_async_event) int uroce_v11_ibv_get_async_event(ibv_context* c, ibv_async_event* ev) {
  Context* ctx = ctx_of(c);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(ctx->rec->control);
      AsyncEvent e;
      bool got;
      while ((got = ctx->device().get_async_event(e)) && !to_verbs_event(*ctx->rec, e, *ev)) {
      }
      if (got) return 0;
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
