// SPDX-License-Identifier: BSD-3-Clause
// A connection request rejected and its id destroyed before its event is
// acknowledged, in UCX's order (uct_rdmacm_listener_reject: rdma_reject,
// rdma_destroy_id, rdma_ack_cm_event): the request is the listener's event,
// as librdmacm counts it, so the destroy returns at once; the peer hears
// the rejection. Then a request accepted, with a QP on each id: after
// ESTABLISHED, ibv_query_qp of the state refreshes ibv_qp's own (RTS), as
// rdma-core's does; a failed rdma_create_qp leaves no CQ or channel
// behind; rdma_disconnect of a connection already over succeeds,
// as Linux's, and of an id never connected is EINVAL.
// One device, connecting to its own address. On a null port (UROCE_DEV);
// prints "ok".
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "rdmacm_test_util.h"

using namespace uroce::test;

int main() {
  rdma_event_channel* lch = rdma_create_event_channel();
  rdma_event_channel* ach = rdma_create_event_channel();
  if (!lch || !ach) die("rdma_create_event_channel");
  sockaddr_in local = addr("10.0.0.1", 7992);
  rdma_cm_id* listener = listen_at(lch, local);

  rdma_cm_id* active = nullptr;
  if (rdma_create_id(ach, &active, nullptr, RDMA_PS_TCP) != 0) die("rdma_create_id(active)");
  connect_id(ach, active, local);

  rdma_cm_event* req = expect(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
  if (req->listen_id != listener) die("the request's listen_id is not the listener");
  if (rdma_reject(req->id, nullptr, 0) != 0) die("rdma_reject");
  // A watchdog: a destroy that waits for its own request's acknowledgement
  // never returns.
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 500 && !done.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!done.load()) {
      std::printf("FAIL: rdma_destroy_id of the request's id before its ack did not return in 5 s\n");
      std::fflush(stdout);
      std::_Exit(1);
    }
  });
  if (rdma_destroy_id(req->id) != 0) die("rdma_destroy_id(request)");
  done.store(true);
  watchdog.join();
  if (rdma_ack_cm_event(req) != 0) die("rdma_ack_cm_event after the destroy");
  rdma_cm_event* e = expect(ach, RDMA_CM_EVENT_REJECTED);
  rdma_ack_cm_event(e);
  // As Linux: disconnecting a connection that is over is no error.
  if (rdma_disconnect(active) != 0) die("rdma_disconnect after REJECTED");
  rdma_destroy_qp(active);
  rdma_destroy_id(active);

  // Accepted this time, with a QP on each id: the manager moves the QPs to
  // RTS, and ibv_query_qp of the state refreshes ibv_qp's own, as rdma-core's.
  if (rdma_create_id(ach, &active, nullptr, RDMA_PS_TCP) != 0) die("rdma_create_id(active, again)");
  if (rdma_resolve_addr(active, nullptr, reinterpret_cast<sockaddr*>(&local), 1000) != 0) die("rdma_resolve_addr");
  rdma_ack_cm_event(expect(ach, RDMA_CM_EVENT_ADDR_RESOLVED));
  if (rdma_resolve_route(active, 1000) != 0) die("rdma_resolve_route");
  rdma_ack_cm_event(expect(ach, RDMA_CM_EVENT_ROUTE_RESOLVED));
  // A QP the device cannot make: the CQs and channels made for it go too,
  // and the caller's attributes come back as given.
  // Too many WRs fails the CQ made for them; too many SGEs, the QP itself.
  for (const bool sges : {false, true}) {
    ibv_qp_init_attr big{};
    big.qp_type = IBV_QPT_RC;
    big.cap.max_send_wr = sges ? 4 : 1u << 30;
    big.cap.max_recv_wr = 4;
    big.cap.max_send_sge = sges ? 1000 : 1;
    big.cap.max_recv_sge = 1;
    if (rdma_create_qp(active, nullptr, &big) == 0) die("a QP past the device's limits was made");
    if (active->qp || active->send_cq || active->recv_cq || active->send_cq_channel || active->recv_cq_channel ||
        big.send_cq || big.recv_cq)
      die(sges ? "a QP refused by ibv_create_qp left CQs or channels behind"
               : "a CQ refused left CQs or channels behind");
  }
  qp_and_connect(active);
  req = expect(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
  rdma_cm_id* passive = req->id;
  rdma_ack_cm_event(req);
  small_rc_qp(passive);
  rdma_conn_param p{};
  if (rdma_accept(passive, &p) != 0) die("rdma_accept");
  rdma_ack_cm_event(expect(ach, RDMA_CM_EVENT_ESTABLISHED));
  rdma_ack_cm_event(expect(lch, RDMA_CM_EVENT_ESTABLISHED));
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(active->qp, &attr, IBV_QP_STATE, &init) != 0) die("ibv_query_qp");
  if (attr.qp_state != IBV_QPS_RTS || active->qp->state != IBV_QPS_RTS) {
    std::printf("FAIL: after ESTABLISHED and ibv_query_qp: state %d, ibv_qp's %d, wanted RTS (%d)\n",
                int(attr.qp_state), int(active->qp->state), int(IBV_QPS_RTS));
    return 1;
  }
  if (rdma_disconnect(active) != 0) die("rdma_disconnect");
  rdma_ack_cm_event(expect(ach, RDMA_CM_EVENT_DISCONNECTED));
  rdma_ack_cm_event(expect(lch, RDMA_CM_EVENT_DISCONNECTED));
  if (rdma_disconnect(passive) != 0 || rdma_disconnect(active) != 0) die("rdma_disconnect after DISCONNECTED");
  rdma_destroy_qp(passive);
  rdma_destroy_id(passive);
  if (rdma_destroy_id(listener) != 0) die("rdma_destroy_id(listener)");
  rdma_destroy_qp(active);
  rdma_destroy_id(active);
  // An id that never asked for a connection has none to end: EINVAL.
  rdma_cm_id* idle = nullptr;
  if (rdma_create_id(ach, &idle, nullptr, RDMA_PS_TCP) != 0) die("rdma_create_id(idle)");
  errno = 0;
  if (rdma_disconnect(idle) != -1 || errno != EINVAL) die("rdma_disconnect of an id never connected: not EINVAL");
  rdma_destroy_id(idle);
  rdma_destroy_event_channel(lch);
  rdma_destroy_event_channel(ach);
  std::printf("ok: a request rejected and destroyed before its ack (UCX's order): no wait, the peer rejected; "
              "ibv_query_qp refreshes ibv_qp's state (RTS); rdma_disconnect after the end succeeds\n");
  return 0;
}
