// SPDX-License-Identifier: BSD-3-Clause
#include "cm_session.h"

#include <poll.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "context.h"
#include "report.h"
#include "run.h"
#include "uroce/cm/connection_manager.h"

namespace uroce::pingpong {
namespace {

using Clock = std::chrono::steady_clock;

// The manager's next event, or false at `limit_ms` (0: no limit).
bool next_event(cm::ConnectionManager& m, uint32_t limit_ms, cm::Event& e) {
  const auto until = Clock::now() + std::chrono::milliseconds(limit_ms);
  while (!m.get_event(e)) {
    if (limit_ms && Clock::now() >= until) return false;
    pollfd p{m.event_fd(), POLLIN, 0};
    poll(&p, 1, 100);
  }
  return true;
}

cm::ConnParam params() {
  cm::ConnParam p;
  // rc_pingpong's QPs take one READ each way (max_rd_atomic 1, max_dest_rd_atomic 1).
  p.responder_resources = 1;
  p.initiator_depth = 1;
  return p;
}

// Sets the connection up; `id` names it, `peer` is the other side's address.
bool establish(cm::ConnectionManager& m, Context& ctx, const Options& o, uint64_t& id, cm::Event& est,
               std::string& error) {
  const bool client = !o.server.empty();
  if (client) {
    wire::IpAddr server;
    if (!wire::IpAddr::parse(o.server, server))
      return error = "--cm: " + o.server + " is not an IP address (the server's RoCE address)", false;
    if (const int rc = m.connect(ctx.qp(), server, o.tcp_port, params(), id))
      return error = "couldn't send the connection request: " + std::string(std::strerror(rc)), false;
    if (!next_event(m, 0, est)) return false;
    if (est.type != cm::EventType::established) return error = cm::describe(est), false;
    est.peer = server;
    return true;
  }
  if (const int rc = m.listen(o.tcp_port))
    return error = "couldn't listen on port " + std::to_string(o.tcp_port) + ": " + std::strerror(rc), false;
  cm::Event req;
  if (!next_event(m, o.accept_timeout_ms, req) || req.type != cm::EventType::connect_request)
    return error = "no connection request within --accept-timeout", false;
  id = req.id;
  if (const int rc = m.accept(id, ctx.qp(), params()))
    return error = "couldn't accept the connection: " + std::string(std::strerror(rc)), false;
  if (!next_event(m, o.timeout_ms, est) || est.type != cm::EventType::established)
    return error = "the client did not complete the connection within --timeout", false;
  est.peer = req.peer;
  return true;
}

// What the exchange settled, in rc_pingpong's address lines.
void print_addresses(Station& st, Context& ctx, const Options& o, const cm::Event& est) {
  ibv_qp_attr a{};
  QpInitAttr init;
  ctx.qp().query(a, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN | IBV_QP_DEST_QPN, init);
  exchange::PingpongDest mine, remote;
  mine.qpn = ctx.qp().qp_num();
  mine.psn = a.sq_psn;
  mine.gid = st.device().gids()[size_t(o.gid_idx)];
  remote.qpn = a.dest_qp_num;
  remote.psn = a.rq_psn;
  remote.gid = est.peer;
  print_address("local address: ", mine);
  print_address("remote address:", remote);
}

}  // namespace

int run_cm(Station& st, const Options& o) {
  const bool client = !o.server.empty();
  std::string error;
  // The manager needs the engine on a thread of its own, for the whole run.
  if (!st.device().start_engine_thread(-1, error)) return fail(error);
  int rc = 1;
  {
    auto m = cm::ConnectionManager::open(st.device(), error);
    if (!m) {
      st.device().stop_engine_thread();
      return fail(error);
    }
    auto ctx = Context::create(st.device(), o, client, error);
    uint64_t id = 0;
    cm::Event est;
    int routs = 0;
    if (ctx) {
      routs = ctx->post_recv(int(o.rx_depth));
      if (routs < int(o.rx_depth)) error = "couldn't post receive (" + std::to_string(routs) + ")";
    }
    if (ctx && error.empty() && establish(*m, *ctx, o, id, est, error)) {
      print_addresses(st, *ctx, o, est);
      const RunResult r = run_pingpong(*ctx, [] { std::this_thread::yield(); return 0; }, o, client, routs);
      // The client ends the connection, as rdma_cm's examples do; a server
      // that hears nothing ends it itself.
      const auto disconnected = [&m] {
        cm::Event e;
        while (next_event(*m, 2000, e))
          if (e.type == cm::EventType::disconnected) return true;
        return false;
      };
      if (client || !disconnected()) {
        m->disconnect(id);
        disconnected();
      }
      if (!r.error.empty()) {
        error = r.error;
      } else {
        print_result(o.size, o.iters, r.usec);
        rc = 0;
        if (r.mismatches) {
          error = "--chk: " + std::to_string(r.mismatches) + " of " + std::to_string(o.iters) +
                  " received messages were wrong; first: " + r.first_mismatch;
          rc = 1;
        }
      }
    }
    if (ctx) m->detach_qp(ctx->qp());
  }
  st.device().stop_engine_thread();
  return rc == 0 ? 0 : fail(error);
}

}  // namespace uroce::pingpong
