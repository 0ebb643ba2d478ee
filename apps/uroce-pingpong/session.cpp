// SPDX-License-Identifier: BSD-3-Clause
#include "session.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "context.h"
#include "report.h"
#include "run.h"
#include "srq_context.h"
#include "srq_run.h"
#include "ud_context.h"
#include "uroce/exchange/pingpong.h"
#include "uroce/exchange/tcp_channel.h"

namespace uroce::pingpong {
namespace {

using std::chrono::milliseconds;

exchange::PingpongDest local_dest(Station& st, const Options& o, uint32_t qpn) {
  exchange::PingpongDest d;
  d.lid = 0;  // Ethernet: no LID
  d.qpn = qpn;
  d.psn = uint32_t(lrand48() & 0xffffff);
  d.gid = st.device().gids()[size_t(o.gid_idx)];
  return d;
}

// The peer's MAC by ARP/ND: the QP (RC) or the address handle (UD) needs it.
bool resolve_peer(Station& st, const Options& o, const exchange::PingpongDest& remote, std::string& error) {
  return remote.gid == wire::IpAddr{} || st.resolve(remote.gid, milliseconds(o.timeout_ms), error);
}

// Connects the QP(s). Through the daemon the modify to RTR itself starts
// the resolution of the peer's MAC and answers EHOSTUNREACH until the
// daemon knows it: tried again until --timeout.
template <class Fn>
bool connect_retrying(Station& st, const Options& o, Fn&& connect, std::string& error) {
  const auto until = std::chrono::steady_clock::now() + milliseconds(o.timeout_ms);
  for (;;) {
    error.clear();
    if (connect(error)) return true;
    if (!st.daemon() || error.find(std::strerror(EHOSTUNREACH)) == std::string::npos ||
        std::chrono::steady_clock::now() >= until)
      return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
}

// The TCP connection of the exchange; the engine keeps running while we
// wait on it (it answers the peer's ARP and acknowledges its packets).
std::unique_ptr<exchange::TcpChannel> open_channel(Station& st, exchange::TcpListener* listener,
                                                  const Options& o, std::string& error) {
  const exchange::Idle idle = [&st] { st.poll(); };
  auto ch = listener
                ? listener->accept(milliseconds(o.accept_timeout_ms), idle, error)
                : exchange::TcpChannel::connect(o.server, o.tcp_port, milliseconds(o.timeout_ms), idle, error);
  if (ch && listener) listener->close();  // a second client is refused, as by rc_pingpong
  if (ch) ch->set_timeout(milliseconds(o.timeout_ms));
  return ch;
}

// -e: the loop sleeps on the completion channel, so the engine must run
// without it: on a thread of its own for the run, embedded again after.
bool start_engine(Station& st, const Options& o, std::string& error) {
  return !o.events || st.device().start_engine_thread(-1, error);
}

void stop_engine(Station& st, const Options& o) {
  if (!o.events) return;
  st.device().stop_engine_thread();
  drain([&st] { return st.poll(); });
}

template <class Ctx>
int run_with(Station& st, exchange::TcpListener* listener, const Options& o, std::unique_ptr<Ctx> ctx,
             const char* local_gid_sep) {
  const bool client = !o.server.empty();
  const int routs = ctx->post_recv(int(o.rx_depth));
  if (routs < int(o.rx_depth)) return fail("couldn't post receive (" + std::to_string(routs) + ")");
  const exchange::PingpongDest mine = local_dest(st, o, ctx->qp().qp_num());
  print_address("local address: ", mine, local_gid_sep);

  std::string error;
  auto ch = open_channel(st, listener, o, error);
  if (!ch) return fail(error);
  const auto connect = [&](const exchange::PingpongDest& r, std::string& e) {
    return resolve_peer(st, o, r, e) &&
           connect_retrying(st, o, [&](std::string& ce) { return ctx->connect(r, mine.psn, ce); }, e);
  };
  exchange::PingpongDest remote;
  if (client) {
    if (!exchange::pingpong_client_exchange(*ch, mine, remote, error)) return fail(error);
  } else if (!exchange::pingpong_server_exchange(*ch, mine, connect, remote, error)) {
    return fail(error);
  }
  print_address("remote address:", remote);
  if (client && !connect(remote, error)) return fail(error);

  if (!start_engine(st, o, error)) return fail(error);
  const RunResult r = run_pingpong(*ctx, [&] { return st.poll(); }, o, client, routs);
  stop_engine(st, o);
  if (!r.error.empty()) return fail(r.error);
  print_result(o.size, o.iters, r.usec);
  if (r.mismatches)
    return fail("--chk: " + std::to_string(r.mismatches) + " of " + std::to_string(o.iters) +
                " received messages were wrong; first: " + r.first_mismatch);
  return 0;
}

}  // namespace

int fail(const std::string& msg) {
  std::fprintf(stderr, "uroce-pingpong: %s\n", msg.c_str());
  return 1;
}

int run_single_qp(Station& st, exchange::TcpListener* listener, const Options& o) {
  const bool client = !o.server.empty();
  std::string error;
  if (o.mode == Mode::ud) {
    auto ctx = UdContext::create(st.device(), o, client, error);
    if (!ctx) return fail(error);
    return run_with(st, listener, o, std::move(ctx), ": ");  // ud_pingpong's local line has ": GID"
  }
  auto ctx = Context::create(st.device(), o, client, error);
  if (!ctx) return fail(error);
  return run_with(st, listener, o, std::move(ctx), ", ");
}

int run_srq(Station& st, exchange::TcpListener* listener, const Options& o) {
  const bool client = !o.server.empty();
  std::string error;
  auto ctx = SrqContext::create(st.device(), o, error);
  if (!ctx) return fail(error);
  const int routs = ctx->post_recv(int(o.rx_depth));
  if (routs < int(o.rx_depth)) return fail("couldn't post receive (" + std::to_string(routs) + ")");
  std::vector<exchange::PingpongDest> mine;
  for (int i = 0; i < ctx->num_qp(); ++i) {
    mine.push_back(local_dest(st, o, ctx->qp(i).qp_num()));
    print_address("local address: ", mine.back());
  }

  auto ch = open_channel(st, listener, o, error);
  if (!ch) return fail(error);
  // One GID for all QPs, as srq_pingpong connects them all to dest[0]'s.
  const auto connect = [&](const std::vector<exchange::PingpongDest>& r, std::string& e) {
    return resolve_peer(st, o, r[0], e) &&
           connect_retrying(st, o, [&](std::string& ce) { return ctx->connect(mine, r, ce); }, e);
  };
  std::vector<exchange::PingpongDest> remote;
  if (client) {
    if (!exchange::srq_pingpong_client_exchange(*ch, mine, remote, error)) return fail(error);
  } else if (!exchange::srq_pingpong_server_exchange(*ch, mine, connect, remote, error)) {
    return fail(error);
  }
  for (int i = 0; i < ctx->num_qp(); ++i) print_address("remote address:", remote[size_t(i)]);
  if (client && !connect(remote, error)) return fail(error);

  if (!start_engine(st, o, error)) return fail(error);
  const RunResult r = run_srq_pingpong(*ctx, [&] { return st.poll(); }, o, client, routs);
  stop_engine(st, o);
  if (!r.error.empty()) return fail(r.error);
  print_result(o.size, o.iters, r.usec);
  if (r.mismatches)
    return fail("--chk: " + std::to_string(r.mismatches) + " received messages were wrong; first: " +
                r.first_mismatch);
  return 0;
}

}  // namespace uroce::pingpong
