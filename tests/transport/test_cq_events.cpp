// SPDX-License-Identifier: BSD-3-Clause
// Completion channels in embedded mode on the simulated wire: an armed CQ
// queues one event for the next completion (or the next solicited one),
// nothing before arming, nothing more until armed again; destroying a CQ
// waits for its events to be acknowledged.
#include <fcntl.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "verbs_test_util.h"

using namespace uroce;
using namespace uroce::vt;

namespace {

Opts with_channel(Opts o) {
  o.cq_channel = true;
  return o;
}

struct EventPair : Pair {
  EventPair() : Pair(7, with_channel(default_a()), with_channel(default_b())) {
    for (Node* n : {&a, &b}) {
      const int fd = n->channel->fd();
      REQUIRE(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
    }
  }
  // One SEND a -> b; returns once both completions were polled.
  void send(uint64_t id, unsigned flags = IBV_SEND_SIGNALED) {
    REQUIRE(post_recv(b, 1000 + id, 0, 256) == 0);
    REQUIRE(post_send(a, id, 0, 64, flags) == 0);
    REQUIRE(wait(b, 1).size() == 1);
    REQUIRE(wait(a, 1).size() == 1);
  }
  bool readable(Node& n) {
    pollfd p{n.channel->fd(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }
  // get_event on a non-blocking channel: the CQ, or nullptr on EAGAIN.
  CompletionQueue* event(Node& n) {
    CompletionQueue* cq = nullptr;
    const int e = n.channel->get_event(cq);
    if (e == EAGAIN) return nullptr;
    REQUIRE(e == 0);
    return cq;
  }
};

}  // namespace

TEST_CASE("cq events: none before arming, one per arming", "[cq-events]") {
  EventPair p;
  p.send(1);
  CHECK_FALSE(p.readable(p.b));
  CHECK(p.event(p.b) == nullptr);

  REQUIRE(p.b.cq->req_notify(false) == 0);
  CHECK_FALSE(p.readable(p.b));  // arming alone signals nothing
  p.send(2);
  CHECK(p.readable(p.b));
  CHECK(p.event(p.b) == p.b.cq.get());
  CHECK_FALSE(p.readable(p.b));
  p.b.cq->ack_events(1);

  // Not re-armed: the next completion is silent.
  p.send(3);
  CHECK_FALSE(p.readable(p.b));
  CHECK(p.event(p.b) == nullptr);
  // a's CQ was never armed.
  CHECK(p.event(p.a) == nullptr);

  // Armed twice before a completion: still one event.
  REQUIRE(p.b.cq->req_notify(false) == 0);
  REQUIRE(p.b.cq->req_notify(false) == 0);
  p.send(4);
  CHECK(p.event(p.b) == p.b.cq.get());
  CHECK(p.event(p.b) == nullptr);
  p.b.cq->ack_events(1);

  // A CQ without a channel cannot be armed.
  int err = 0;
  auto plain = p.a.dev->create_cq(16, err);
  REQUIRE(plain);
  CHECK(plain->req_notify(false) == EINVAL);
  CHECK(plain->channel() == nullptr);
  // A channel of another device, or a vector that does not exist: EINVAL.
  CHECK(p.a.dev->create_cq(16, p.b.channel.get(), 0, err) == nullptr);
  CHECK(err == EINVAL);
  CHECK(p.a.dev->create_cq(16, p.a.channel.get(), p.a.dev->num_comp_vectors(), err) == nullptr);
  CHECK(err == EINVAL);
}

TEST_CASE("cq events: solicited only wakes on the SE bit or an error", "[cq-events]") {
  EventPair p;
  REQUIRE(p.b.cq->req_notify(true) == 0);
  p.send(1);  // no SE
  CHECK(p.event(p.b) == nullptr);
  p.send(2, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
  CHECK(p.event(p.b) == p.b.cq.get());
  p.b.cq->ack_events(1);
  // Sending with SE arms nothing on the sender's side: a's CQ gets plain
  // send completions.
  REQUIRE(p.a.cq->req_notify(true) == 0);
  p.send(3, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
  CHECK(p.event(p.a) == nullptr);
  // An unsuccessful completion wakes a solicited-only CQ: a receive
  // flushed by the QP's move to the error state.
  REQUIRE(post_recv(p.a, 77, 0, 64) == 0);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  REQUIRE(p.a.qp->modify(attr, IBV_QP_STATE) == 0);
  p.run_for(1'000'000);
  CHECK(p.event(p.a) == p.a.cq.get());
  p.a.cq->ack_events(1);
}

TEST_CASE("cq events: several CQs on one channel, events in order", "[cq-events]") {
  EventPair p;
  int err = 0;
  // b's second CQ shares b's channel.
  auto extra = p.b.dev->create_cq(8, p.b.channel.get(), 0, err);
  REQUIRE(extra);
  REQUIRE(p.b.cq->req_notify(false) == 0);
  REQUIRE(extra->req_notify(false) == 0);
  p.send(1);
  CHECK(p.event(p.b) == p.b.cq.get());
  CHECK(p.event(p.b) == nullptr);
  p.b.cq->ack_events(1);
  // A CQ destroyed with an event queued and never handed out: the event
  // goes with it, and the descriptor is quiet again.
  REQUIRE(p.b.cq->req_notify(false) == 0);
  p.send(2);
  CHECK(p.readable(p.b));
  p.b.qp.reset();
  p.b.cq.reset();
  CHECK_FALSE(p.readable(p.b));
  CHECK(p.event(p.b) == nullptr);
}

TEST_CASE("cq events: destroying a CQ waits for its events to be acknowledged", "[cq-events]") {
  EventPair p;
  REQUIRE(p.b.cq->req_notify(false) == 0);
  p.send(1);
  CompletionQueue* cq = p.event(p.b);
  REQUIRE(cq == p.b.cq.get());
  p.b.qp.reset();
  std::atomic<bool> destroyed{false};
  std::thread t([&] {
    p.b.cq.reset();
    destroyed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK_FALSE(destroyed.load());
  cq->ack_events(1);
  t.join();
  CHECK(destroyed.load());
}

namespace {

bool fd_readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

}  // namespace

TEST_CASE("async events: retries exhausted make QP_FATAL, readable on the device's descriptor", "[async-events]") {
  Opts oa = Pair::default_a();
  oa.timeout = 5;
  oa.retry_cnt = 1;
  Pair p(31, oa);
  Device& da = *p.a.dev;
  const int fd = da.async_event_fd();
  REQUIRE(fd >= 0);
  REQUIRE(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
  AsyncEvent ev;
  CHECK_FALSE(fd_readable(fd));
  CHECK(da.wait_async_event(ev) == EAGAIN);

  p.fabric.wire().cut(p.port_a(), p.port_b());
  REQUIRE(post_send(p.a, 1, 0, 100) == 0);
  const auto wc = p.wait(p.a, 1, kSecond);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_RETRY_EXC_ERR);
  CHECK(fd_readable(fd));
  REQUIRE(da.wait_async_event(ev) == 0);
  CHECK(ev.event_type == IBV_EVENT_QP_FATAL);
  CHECK(ev.qp == p.a.qp.get());
  CHECK_FALSE(fd_readable(fd));
  CHECK_FALSE(da.get_async_event(ev));

  // A modify to ERR is the application's own doing: no event.
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  REQUIRE(p.b.qp->modify(attr, IBV_QP_STATE) == 0);
  CHECK_FALSE(fd_readable(p.b.dev->async_event_fd()));
  CHECK_FALSE(p.b.dev->get_async_event(ev));
}

TEST_CASE("async events: CQ_ERR on the first overflow; a destroyed object's events go", "[async-events]") {
  Opts ob = Pair::default_b();
  ob.cq_entries = 2;
  Pair p(32, Pair::default_a(), ob);
  Device& db = *p.b.dev;
  for (uint64_t i = 0; i < 4; ++i) REQUIRE(post_recv(p.b, 10 + i, 0, 256) == 0);
  for (uint64_t i = 0; i < 4; ++i) REQUIRE(post_send(p.a, i, 0, 64) == 0);
  REQUIRE(p.wait(p.a, 4).size() == 4);
  CHECK(p.b.cq->overflowed());
  AsyncEvent ev;
  REQUIRE(db.get_async_event(ev));  // the non-blocking call takes the count too
  CHECK(ev.event_type == IBV_EVENT_CQ_ERR);
  CHECK(ev.cq == p.b.cq.get());
  CHECK_FALSE(fd_readable(db.async_event_fd()));
  CHECK_FALSE(db.get_async_event(ev));  // once, not per completion
  CHECK(drain(*p.b.cq).size() == 4);     // none lost

  // An event about a QP destroyed before it was taken is dropped, count
  // and all.
  Opts oa = Pair::default_a();
  oa.timeout = 5;
  oa.retry_cnt = 0;
  Pair q(33, oa);
  q.fabric.wire().cut(q.port_a(), q.port_b());
  REQUIRE(post_send(q.a, 1, 0, 100) == 0);
  REQUIRE(q.wait(q.a, 1, kSecond).size() == 1);
  CHECK(fd_readable(q.a.dev->async_event_fd()));
  q.a.qp.reset();
  CHECK_FALSE(fd_readable(q.a.dev->async_event_fd()));
  CHECK_FALSE(q.a.dev->get_async_event(ev));
}

TEST_CASE("async events: LAST_WQE_REACHED when a QP on an SRQ enters the error state", "[async-events]") {
  Opts ob = Pair::default_b();
  ob.srq_wr = 16;
  ob.max_recv_wr = 0;
  Pair p(34, Pair::default_a(), ob);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  REQUIRE(p.b.qp->modify(attr, IBV_QP_STATE) == 0);
  AsyncEvent ev;
  REQUIRE(p.b.dev->get_async_event(ev));
  CHECK(ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED);
  CHECK(ev.qp == p.b.qp.get());
  CHECK_FALSE(p.b.dev->get_async_event(ev));  // once
}
