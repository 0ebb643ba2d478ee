// SPDX-License-Identifier: BSD-3-Clause
#include "remote.h"

#include <rte_mbuf.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>
#include <unordered_set>

#include "app_support.h"
#include "bw.h"
#include "cm_link.h"
#include "endpoint.h"
#include "lat.h"
#include "perftest_glue.h"
#include "raw.h"
#include "raw_sides.h"
#include "report.h"
#include "uroce/exchange/perftest.h"
#include "uroce/exchange/tcp_channel.h"
#include "uroce/port/endpoint.h"

namespace uroce::perf {
namespace {

using exchange::Millis;
using exchange::PerftestDest;
using exchange::PerftestSession;

volatile std::sig_atomic_t interrupted = 0;  // --run_infinitely: SIGINT ends the run

int fail(const std::string& msg) {
  std::fprintf(stderr, "uroce-perf: %s\n", msg.c_str());
  return 1;
}

class Remote {
 public:
  // perftest's --reversed swaps the test roles, not the exchange's: the
  // TCP server sends, the TCP client waits, and every exchange keeps its
  // order (ctx_hand_shake goes by servername).
  explicit Remote(const Options& o)
      : o_(o), client_(!o.server.empty()), sender_(client_ != (o.reversed && o.kind == Kind::bw)) {}
  int run();
  // Before the process ends: a thread still polling the port would race
  // with its closing.
  void stop_engine() {
    if (port_end_) device().stop_engine_thread();
  }
  void flush_capture() {
    std::string err;
    if (port_end_ && !port_end_->flush_capture(err)) std::fprintf(stderr, "uroce: %s\n", err.c_str());
  }

 private:
  bool open(std::string& error);
  bool connect_exchange(std::string& error);
  bool start_session(std::string& error);
  // -R: the conversation's connection, the test's, and their ends.
  bool open_cm(std::string& error);
  bool connect_cm_channel(std::string& error);
  bool connect_cm_qps(std::string& error);
  bool connect_with_retry(QueuePair& qp, const cm::ConnParam& p, uint64_t& id, std::string& error);
  cm::ConnParam cm_params() const;
  void disconnect_cm();
  bool swap_dests(std::string& error);
  bool connect_qps(std::string& error);
  bool set_up(std::string& error);
  bool run_test(std::string& error);
  bool run_one_sided_bw(std::string& error);
  bool run_send_bw(std::string& error);
  void print_receiver_row(const BwServer& s, uint64_t want);
  bool run_bidir_bw(std::string& error);
  bool run_bidir_size(uint64_t size, std::string& error);
  bool run_infinitely(std::string& error);
  bool drive(BwClient& c, std::string& error);
  void check_no_sends();
  bool print_peer_report(const exchange::PerftestBwReport& peer, std::string& error);
  bool run_lat(std::string& error);
  bool close(std::string& error);
  bool prepare();
  // A failed step of the exchange whose peer has gone: say what that means.
  std::string peer_gone_hint(const std::string& error) const {
    if (!ch_ || !ch_->peer_closed() || error.find("another test") != std::string::npos) return "";
    return std::string(" (the ") + (client_ ? "server" : "client") +
           " closed the connection: it failed or runs another test; see its output)";
  }
  // What --verify established on this side, for the closing line.
  std::string verdict() const {
    if (!o_.verify) return "";
    return verified_here_ ? "; data verified" : "; no data to check on this side";
  }
  bool verified_here_ = false;
  uint64_t serve_calls_ = 0;
  // perftest's latency rows: both ends of a ping-pong (SEND, WRITE), only
  // the client of READ and atomics (the server's NIC answers alone).
  bool lat_row_here() const { return client_ || o_.verb == Verb::send || o_.verb == Verb::write; }
  // A SEND test's receiving side (-b: both), waiting for what the peer sends.
  bool receives() const { return !sender_ || o_.bidirectional; }
  RunInfo run_info() const;
  bool while_client_runs(const std::function<bool()>& step);
  bool run_raw_size(uint64_t size, std::string& error);
  PacketPort& port() { return port_end_->packet_port(); }
  DpdkPort& dpdk_port() { return port_end_->dpdk_port(); }
  Device& device() { return port_end_->device(); }
  // A measured loop's turn of the engine: -e sleeps on the channel instead
  // (the engine thread runs it).
  void engine_turn() {
    if (o_.use_event) wait_events({ep_.get()}, event_wait_ms(o_));
    else port_end_->poll();
  }
  void idle_poll() {
    if (!raw_running_) port_end_->poll();  // the raw test reads the port itself
    if (serving_) serving_();
    if (watchdog_) watchdog_->check();
  }

  Options o_;    // a copy: -c UD caps its sizes at the path MTU agreed with the peer
  bool client_;  // the TCP client (SERVER argument given)
  std::chrono::steady_clock::time_point next_rnr_look_{};  // check_no_sends
  bool sender_;  // runs the test's client side: the TCP client, or the server with --reversed
  // The port and device (uroce::Endpoint); ep_ is the benchmark's side on it.
  std::unique_ptr<uroce::Endpoint> port_end_;
  std::unique_ptr<Endpoint> ep_;
  std::unique_ptr<exchange::TcpListener> listener_;  // the server's, bound before anything is printed
  std::unique_ptr<CmLink> cm_;                 // -R
  std::vector<uint64_t> cm_ids_;               // -R: the test QPs' connections
  std::unique_ptr<exchange::Channel> ch_;      // TCP, or -R's CmChannel
  std::unique_ptr<PerftestSession> session_;
  std::unique_ptr<Watchdog> watchdog_;
  std::function<void()> serving_;  // the server's side of the test, stepped while it waits
  std::unique_ptr<BwServer> send_server_;
  std::unique_ptr<BwServer> server_;  // WRITE, READ, atomics: ready before the client starts
  bool raw_running_ = false;
  rte_mempool* raw_pool_ = nullptr;
  std::vector<PeerInfo> remote_;
  std::vector<PerftestDest> first_round_;  // the peer's first records, which the second must repeat
  uint32_t mtu_ = 1024;
  std::vector<BwResult> bw_;
  std::vector<LatResult> lat_;
};

bool Remote::open(std::string& error) {
  EndpointConfig ec;
  ec.dev = o_.dev;
  ec.ip = o_.ip;
  ec.mac = o_.mac;
  set_vlan(ec.device, o_.vlan, o_.pcp);
  ec.eal_args = app::split_args(o_.eal);
  ec.pcap = o_.pcap;
  ec.mtu = o_.mtu > 1024 ? 9000 : 1500;
  ec.exchange_peer = o_.server;
  ec.device.name = client_ ? "uroce_c" : "uroce_s";
  ec.device.cc = o_.cc;
  ec.device.idle_sleep_max_us = o_.idle_sleep_us;
  port_end_ = uroce::Endpoint::open(ec, error);
  if (!port_end_) return false;
  mtu_ = o_.mtu ? o_.mtu : path_mtu_for(dpdk_port().mtu());
  if (mtu_ + 80 > dpdk_port().mtu())
    return error = "-m " + std::to_string(mtu_) + " does not fit port " + dpdk_port().name() + " (MTU " +
                   std::to_string(dpdk_port().mtu()) + ")",
           false;
  cap_ud_sizes(o_, mtu_);  // again once the peer's MTU is known
  std::random_device rd;
  ep_ = Endpoint::create(device(), o_, buffer_bytes(o_), rd() ^ uint32_t(getpid()), error);
  return ep_ != nullptr;
}

bool Remote::connect_exchange(std::string& error) {
  if (o_.rdma_cm) return connect_cm_channel(error) && start_session(error);
  const Millis timeout(uint64_t(o_.timeout_s) * 1000);
  const exchange::Idle idle = [this] { idle_poll(); };
  auto tcp = client_ ? exchange::TcpChannel::connect(o_.server, o_.tcp_port, timeout, idle, error)
                     : listener_->accept(Millis(0), idle, error);
  if (!tcp) return false;
  if (listener_) listener_->close();  // a second client is refused, as by perftest
  tcp->set_timeout(timeout);
  ch_ = std::move(tcp);
  return start_session(error);
}

// perftest's first steps, over TCP or -R's channel alike: versions,
// system data, the MTU.
bool Remote::start_session(std::string& error) {
  session_ = std::make_unique<PerftestSession>(
      *ch_, client_ ? exchange::PerftestRole::kClient : exchange::PerftestRole::kServer,
      o_.rdma_cm ? exchange::PerftestRecordFormat::kBinary : exchange::PerftestRecordFormat::kText);
  exchange::PerftestSysData sys, peer_sys;
  int peer_mtu = 0;
  if (!session_->exchange_versions(error) || !session_->exchange_sys_data(sys, peer_sys, error) ||
      !session_->exchange_mtu(mtu_enum(mtu_), peer_mtu, error))
    return false;
  mtu_ = mtu_bytes(PerftestSession::agree_mtu(mtu_enum(mtu_), peer_mtu));
  cap_ud_sizes(o_, mtu_);
  return true;
}

// One ctx_hand_shake per QP; the records received are the peer's QPs.
// perftest carries no QP count; a peer with another -q shows in the
// records (exchange::perftest_qp_mismatch), checked as each one comes so
// that neither side waits for a record that will not come.
bool Remote::swap_dests(std::string& error) {
  const bool again = !first_round_.empty();
  std::vector<PerftestDest> got;
  got.reserve(ep_->qp_count());
  const char* peer_role = client_ ? "server" : "client";
  // Only the newest record can be the first sign (a QPN seen before, or a
  // record that differs from its first round's): looked at alone, so that
  // thousands of QPs do not cost a scan of all records per record.
  std::unordered_set<uint32_t> seen;
  for (size_t q = 0; q < ep_->qp_count(); ++q) {
    PerftestDest peer;
    if (!session_->hand_shake(to_dest(ep_->info(q)), peer, error)) return false;
    // Thousands of records, one round trip each, can take longer than the
    // watchdog's time with no RoCE frame: each one shows the peer is there.
    watchdog_->alive();
    got.push_back(peer);
    const bool suspect = again ? q >= first_round_.size() || peer.qpn != first_round_[q].qpn ||
                                     peer.psn != first_round_[q].psn
                               : !seen.insert(peer.qpn).second;
    if (!suspect) continue;
    error = again ? exchange::perftest_qp_mismatch(first_round_, &got, ep_->qp_count(), peer_role)
                  : exchange::perftest_qp_mismatch(got, nullptr, ep_->qp_count(), peer_role);
    if (!error.empty()) return false;
  }
  if (!again) first_round_ = got;
  remote_.clear();
  for (const PerftestDest& d : got) remote_.push_back(to_info(d));
  return true;
}

bool Remote::connect_qps(std::string& error) {
  if (!port_end_->resolve(remote_[0].gid, Millis(uint64_t(o_.timeout_s) * 1000), error)) return false;
  for (size_t q = 0; q < ep_->qp_count(); ++q)
    if (int err = ep_->connect(q, remote_[q], o_, mtu_enum(mtu_)))
      return error = "connecting QP " + std::to_string(q) + " failed: " + std::strerror(err), false;
  return true;
}

// perftest's steps 2-4 (docs/exchange.md): records, connect, records again
// and a barrier; the latency tests swap QP 0's record once more first. The
// send tests swap QP 0's record between the two rounds instead (with -q 2
// the order shows: the second round must start after that swap).
bool Remote::set_up(std::string& error) {
  const PerftestDest me = to_dest(ep_->info(0));
  PerftestDest ignored;
  if (o_.rdma_cm) {
    // create_rdma_cm_connection: a sync, the test's connections, a sync
    // (records of zeros, before anything is known); then perftest's
    // records as without -R, but no QP to connect.
    const PerftestDest zero{};
    if (!session_->hand_shake(zero, ignored, error) || !connect_cm_qps(error) ||
        !session_->hand_shake(zero, ignored, error) || !swap_dests(error))
      return false;
    if (o_.verb == Verb::send) return prepare() && session_->barrier(me, error) && swap_dests(error);
    return swap_dests(error) && prepare() && session_->barrier(me, error);
  }
  if (o_.kind == Kind::lat && o_.verb != Verb::send && !session_->hand_shake(me, ignored, error)) return false;
  if (!swap_dests(error) || !connect_qps(error)) return false;
  if (o_.verb == Verb::send) return prepare() && session_->barrier(me, error) && swap_dests(error);
  return swap_dests(error) && prepare() && session_->barrier(me, error);
}

// Memory the peer will write is ready before the barrier that lets it.
bool Remote::prepare() {
  if (o_.kind == Kind::lat) {
    std::memset(ep_->buf(0), 0, ep_->buf_bytes());
  } else if ((!sender_ || o_.bidirectional) && o_.verb != Verb::send && o_.verb != Verb::raw) {
    const std::vector<uint64_t> all = sizes(o_);
    server_ = std::make_unique<BwServer>(*ep_, o_, *std::max_element(all.begin(), all.end()));
    server_->start();
  }
  return true;
}

// WRITE, READ, atomics: the sender runs every size; the other side's NIC
// serves them while it waits on the closing barrier, then prints the
// sender's report.
bool Remote::run_one_sided_bw(std::string& error) {
  const PerftestDest me = to_dest(ep_->info(0));
  const std::vector<uint64_t> all = sizes(o_);
  exchange::PerftestBwReport mine, peer;
  if (sender_) {
    for (uint64_t size : all) {
      BwClient c(*ep_, remote_, o_, size);
      c.start();
      if (!drive(c, error)) return false;
      bw_.push_back(c.finish());
      print_bw_row(o_, bw_.back());
      if (!bw_.back().error.empty()) return error = bw_.back().error, false;
    }
    verified_here_ = o_.verify && o_.verb == Verb::read;
    mine = report_of(bw_.back(), o_);
  }
  if (!sender_) {
    serving_ = [this] {
      server_->step();
      check_no_sends();
    };
    watchdog_->reset();
  }
  // A SEND test's sender passes the barrier too (its per-size one): the
  // RNR check goes on until the report comes.
  const bool ok = sender_ ? session_->barrier(me, error) : while_client_runs([&] { return session_->barrier(me, error); });
  const bool swapped = ok && session_->exchange_bw_reports(mine, false, peer, error);
  serving_ = nullptr;
  if (!swapped) return false;
  if (sender_) return true;
  return print_peer_report(peer, error);
}

// The waiting side prints the sender's report and checks what it holds.
bool Remote::print_peer_report(const exchange::PerftestBwReport& peer, std::string& error) {
  bw_.push_back(print_bw_report(o_, peer));
  if (!server_->error().empty()) return error = server_->error(), false;
  // The atomic counter must equal what the sender completed (its report,
  // over all QPs; -q spreads -n evenly, -D does not).
  const bool can_check = o_.verb == Verb::write || (o_.verb == Verb::atomic && !o_.duration);
  if (o_.verify && can_check) {
    error = server_->verify(std::vector<uint64_t>(ep_->qp_count(), peer.iters / std::max<size_t>(ep_->qp_count(), 1)));
    verified_here_ = error.empty();
  }
  return error.empty();
}

// SEND: per size, the receiver posts its receives before a barrier and
// counts them; with -a a barrier also closes each size.
bool Remote::run_send_bw(std::string& error) {
  const PerftestDest me = to_dest(ep_->info(0));
  for (uint64_t size : sizes(o_)) {
    if (sender_) {
      BwClient c(*ep_, remote_, o_, size);
      c.start();
      if (!session_->barrier(me, error)) return false;
      if (!drive(c, error)) return false;
      bw_.push_back(c.finish());
      print_bw_row(o_, bw_.back());
      if (!bw_.back().error.empty()) return error = bw_.back().error, false;
    } else {
      send_server_ = std::make_unique<BwServer>(*ep_, o_, size);
      BwServer& s = *send_server_;
      s.start();
      if (!session_->barrier(me, error)) return false;
      watchdog_->reset();
      // -n: every message; -D: the duration, then it keeps receiving while
      // it waits for the sender to finish (the next barrier or close);
      // --run_infinitely: until the sender closes.
      const uint64_t want = o_.iters * ep_->qp_count();
      const auto t0 = std::chrono::steady_clock::now();
      auto running = [&] {
        if (o_.run_infinitely) return false;
        if (!o_.duration) return s.received() < want;
        return std::chrono::steady_clock::now() - t0 < std::chrono::seconds(o_.duration);
      };
      for (unsigned n = 1; running() && s.error().empty(); ++n) {
        s.step();
        engine_turn();
        watchdog_->check();
        // The sender speaks on the exchange only once every message is
        // here (-n): one that speaks before has run another test. UD and
        // UC: it has sent them all, and what is missing now was lost.
        if (n % 4096 == 0 && !o_.duration && ch_->peer_spoke()) {
          port_end_->poll();
          s.step();  // what was acknowledged is in the CQ by now
          if (ep_->unreliable()) {
            s.drain(want, [this] { port_end_->poll(); });
            break;
          }
          if (s.received() < want)
            return error = "the client spoke on the exchange after " + std::to_string(s.received()) + " of " +
                           std::to_string(want) + " SENDs: it likely runs another test (write_bw, read_bw, atomic_bw)",
                   false;
        }
      }
      serving_ = [this] { send_server_->step(); };
      if (!s.error().empty()) return error = s.error(), false;
      if (!o_.run_infinitely) print_receiver_row(s, want);
      if (o_.verify && !o_.duration) {
        if ((error = s.verify({})) != "") return false;
        verified_here_ = true;
      }
    }
    if (o_.all_sizes && !session_->barrier(me, error)) return false;
  }
  return true;
}

// perftest's SEND receiver prints a row of its own: what arrived, from the
// first message to the last.
void Remote::print_receiver_row(const BwServer& s, uint64_t want) {
  bw_.push_back(s.result());
  print_bw_row(o_, bw_.back());
  if (!o_.duration && s.received() < want)
    std::printf(" uroce: %lu B: %lu of %lu %s messages lost on the way\n", (unsigned long)s.result().size,
                (unsigned long)(want - s.received()), (unsigned long)want, o_.conn == Conn::uc ? "UC" : "UD");
}

// -b: both sides send and serve at once, each size opened by a barrier
// (perftest: after the receives are posted); with -a the one-sided tests
// close it with another (perftest from version 4.6 on). The reports are
// swapped and each side prints the sum, except SEND with -D, where each
// prints its own.
bool Remote::run_bidir_bw(std::string& error) {
  for (uint64_t size : sizes(o_))
    if (!run_bidir_size(size, error)) return false;
  return true;
}

bool Remote::run_bidir_size(uint64_t size, std::string& error) {
  const PerftestDest me = to_dest(ep_->info(0));
  const bool send = o_.verb == Verb::send;
  BwClient c(*ep_, remote_, o_, size);
  c.start();
  if (send) {
    send_server_ = std::make_unique<BwServer>(*ep_, o_, size);
    send_server_->start();
  }
  BwServer& rx = send ? *send_server_ : *server_;
  // The peer may start first: its messages need this side's engine and
  // receives from the barrier on.
  serving_ = [&rx] { rx.step(); };
  if (!session_->barrier(me, error)) return false;
  const uint64_t want = o_.iters * ep_->qp_count();
  bool sent = false;
  while (!sent || (send && !o_.duration && rx.received() < want && rx.error().empty())) {
    if (!sent) sent = c.step();
    engine_turn();
    rx.step();
    if (sent) watchdog_->check();  // only the peer's messages are missing
    if (sent && ep_->unreliable()) {  // UD, UC: what does not come soon was lost
      rx.drain(want, [this] { port_end_->poll(); });
      break;
    }
  }
  BwResult mine = c.finish();
  if (send && !o_.duration && rx.received() < want) mine.lost = want - rx.received();
  if (mine.error.empty()) mine.error = rx.error();
  if (!mine.error.empty()) return print_bw_row(o_, mine), error = mine.error, false;
  if (o_.all_sizes && !send && !while_client_runs([&] { return session_->barrier(me, error); })) return false;
  if (send && o_.duration) {
    bw_.push_back(mine);
    print_bw_row(o_, mine);
  } else {
    exchange::PerftestBwReport peer;
    if (!while_client_runs([&] { return session_->exchange_bw_reports(report_of(mine, o_), false, peer, error); }))
      return false;
    bw_.push_back(sum_of(mine, result_of(o_, peer)));
    print_bw_row(o_, bw_.back());
    if (mine.lost)
      std::printf(" uroce: %lu B: %lu of %lu %s messages from the peer lost on the way\n", (unsigned long)size,
                  (unsigned long)mine.lost, (unsigned long)want, o_.conn == Conn::uc ? "UC" : "UD");
    // What the peer wrote or sent here is complete once its report came;
    // READ was checked by finish(). The one-sided target is sized for the
    // largest message: checked after it.
    if (o_.verify && !o_.duration && (send || size == sizes(o_).back())) {
      const std::string bad = o_.verb == Verb::read ? "" : rx.verify(std::vector<uint64_t>(ep_->qp_count(), o_.iters));
      if (!bad.empty()) return error = bad, false;
      verified_here_ = true;
    }
  }
  if (send && o_.all_sizes && !while_client_runs([&] { return session_->barrier(me, error); })) return false;
  return true;
}

// The sender's loop. Its frames leave whether or not the peer takes them:
// the TCP connection shows that the peer is still there.
bool Remote::drive(BwClient& c, std::string& error) {
  for (unsigned n = 1; !c.step(); ++n) {
    engine_turn();
    if (n % 4096 == 0 && ch_->peer_closed())
      return error = std::string("the ") + (client_ ? "server" : "client") +
                     " closed the connection during the run: it failed or runs another test (see its output)",
             false;
  }
  return true;
}

// A WRITE, READ or atomic test's passive side that answers SENDs with RNR
// NAKs (no receive is posted) has a peer running a SEND test.
void Remote::check_no_sends() {
  if (++serve_calls_ % 4096) return;
  // The counters sum every QP's: a few looks a second (see Watchdog::check).
  const auto now = std::chrono::steady_clock::now();
  if (now < next_rnr_look_) return;
  next_rnr_look_ = now + std::chrono::milliseconds(100);
  if (device().counters().transport.send_rnr_err > 0)
    throw std::runtime_error(std::string("the ") + (client_ ? "server" : "client") +
                             " sends SENDs, which this test does not receive: it likely runs send_bw or send_lat");
}

// --run_infinitely, the sending side: a -D run after another, a row each,
// until SIGINT; then the closing exchange as after any run, so that the
// other side (which waits there) ends cleanly and prints the last row.
bool Remote::run_infinitely(std::string& error) {
  std::signal(SIGINT, [](int) { interrupted = 1; });
  const PerftestDest me = to_dest(ep_->info(0));
  if (o_.verb == Verb::send && !session_->barrier(me, error)) return false;
  BwResult last;
  while (!interrupted) {
    BwClient c(*ep_, remote_, o_, o_.size);
    c.start();
    if (!drive(c, error)) return false;
    BwResult r = c.finish();
    if (!r.error.empty()) return print_bw_row(o_, r), error = r.error, false;
    if (!interrupted) print_bw_row(o_, r), last = r;
    if (!interrupted && o_.resources) print_resources(stdout);
  }
  std::signal(SIGINT, SIG_DFL);
  if (last.size == 0) last.size = o_.size;
  bw_.push_back(last);
  if (o_.verb == Verb::send) return true;
  exchange::PerftestBwReport peer;
  return session_->barrier(me, error) && session_->exchange_bw_reports(report_of(last, o_), false, peer, error);
}

bool Remote::run_lat(std::string& error) {
  const PerftestDest me = to_dest(ep_->info(0));
  for (uint64_t size : sizes(o_)) {
    LatSide side(*ep_, remote_[0], o_, size, client_);
    side.start(false);  // cleared by prepare()
    // send_lat: the receives are posted before the barrier, at every size.
    if (o_.verb == Verb::send && !session_->barrier(me, error)) return false;
    watchdog_->reset();
    while (!side.step()) {
      engine_turn();
      watchdog_->check();
    }
    lat_.push_back(side.finish());
    if (lat_row_here()) print_lat_row(o_, lat_.back());
    if (!lat_.back().error.empty()) return error = lat_.back().error, false;
  }
  verified_here_ = o_.verify && client_;  // the client checks what came back
  return true;
}

// Both sides step on the port directly; the engine is not polled meanwhile.
bool Remote::run_raw_size(uint64_t size, std::string& error) {
  const PerftestDest me = to_dest(ep_->info(0));
  if (raw_pool_ == nullptr) {
    raw_pool_ = rte_pktmbuf_pool_create("uroce_raw", 8191, 256, 0, RTE_PKTMBUF_HEADROOM + 9100, SOCKET_ID_ANY);
    if (raw_pool_ == nullptr) return error = "cannot create the raw frame pool (give EAL more memory)", false;
  }
  wire::MacAddr peer_mac;
  if (!device().neighbor_mac(remote_[0].gid, peer_mac)) return error = "peer MAC unknown", false;
  if (!session_->barrier(me, error)) return false;
  raw_running_ = true;
  watchdog_->reset();
  bool ok = true;
  if (o_.kind == Kind::lat) {
    RawLatSide side(port(), raw_pool_, peer_mac, o_, size, client_);
    watchdog_->watch(side.progress());
    try {
      while (!side.step()) watchdog_->check();
    } catch (const std::runtime_error& e) {
      if (!o_.raw_acks) throw;  // else the likely cause: a peer without it sends no ACK-sized frames
      throw std::runtime_error(std::string(e.what()) + " (--raw-acks: give it to both sides)");
    }
    lat_.push_back(side.finish());
    verified_here_ = o_.verify && lat_.back().error.empty();  // each frame checked as it came
  } else if (client_) {
    RawSender sender(port(), raw_pool_, peer_mac, o_, size);
    watchdog_->watch(sender.progress());
    // Frames leave whether or not a server receives them: its TCP
    // connection is what shows it is still there.
    for (uint64_t steps = 1; ok && !sender.step(); ++steps) {
      watchdog_->check();
      if (steps % 4096 == 0 && ch_->peer_closed())
        ok = (error = "the server closed the connection during the run (it is gone)", false);
    }
    bw_.push_back(sender.finish());
  } else {
    RawReceiver receiver(port(), o_, size);
    watchdog_->watch(receiver.progress());
    serving_ = [&] { receiver.step(); };
    ok = while_client_runs([&] { return session_->barrier(me, error); });  // until the client has sent everything
    serving_ = nullptr;
    bw_.push_back(receiver.finish());
    verified_here_ = o_.verify && bw_.back().error.empty();
    if (receiver.lost()) std::printf(" uroce: %lu raw frames lost on the way\n", (unsigned long)receiver.lost());
  }
  raw_running_ = false;
  watchdog_->watch(nullptr);
  if (!ok) return false;
  if (o_.kind == Kind::bw && !client_) return true;  // its closing barrier was the wait above
  // run_test reports a failed side; its peer may never come to the barrier.
  if (o_.kind == Kind::lat && !lat_.back().error.empty()) return true;
  return session_->barrier(me, error);
}

bool Remote::run_test(std::string& error) {
  if (o_.verb == Verb::raw) {
    o_.kind == Kind::bw ? print_bw_header(o_) : print_lat_header(o_);
    for (uint64_t size : sizes(o_)) {
      if (!run_raw_size(raw_frame_size(size, dpdk_port().mtu()), error)) return false;
      if (o_.kind == Kind::bw) print_bw_row(o_, bw_.back());
      else if (client_) {
        print_lat_row(o_, lat_.back());
        if (o_.raw_acks) print_ack_frames(lat_.back());  // raw_lat's own option
      }
      const std::string& e = o_.kind == Kind::bw ? bw_.back().error : lat_.back().error;
      if (!e.empty()) return error = e, false;
    }
    return true;
  }
  if (o_.kind == Kind::bw) print_bw_header(o_);
  else if (lat_row_here()) print_lat_header(o_);
  if (o_.kind == Kind::lat) return run_lat(error);
  if (o_.bidirectional) return run_bidir_bw(error);
  if (o_.run_infinitely && sender_) return run_infinitely(error);
  return o_.verb == Verb::send ? run_send_bw(error) : run_one_sided_bw(error);
}

// ctx_close_connection, except where perftest has none: write_lat just
// closes the socket.
bool Remote::close(std::string& error) {
  // perftest's write_lat has no closing step and just closes its socket.
  // Ours says "done" and waits, still polling, for the peer's "done" or
  // that close: a client that stopped polling at its last echo could leave
  // the server waiting for an ACK that was lost (perftest ignores the
  // extra bytes).
  if (o_.kind == Kind::lat && o_.verb == Verb::write) {
    char done[sizeof exchange::kPerftestDone];
    bool eof = false;
    const bool ok = while_client_runs([&] {
      return ch_->send(exchange::kPerftestDone, sizeof done, error) && ch_->recv_or_eof(done, sizeof done, eof, error);
    });
    if (!ok) error.clear();  // the test is complete; a peer already gone is done too
    return true;
  }
  // read_lat: the server closes at once and waits there for the whole run;
  // so does a SEND receiver while the sender runs infinitely.
  if ((!client_ && o_.kind == Kind::lat && (o_.verb == Verb::read || o_.verb == Verb::atomic)) ||
      (o_.run_infinitely && !sender_))
    return while_client_runs([&] { return session_->close(to_dest(ep_->info(0)), error); });
  return session_->close(to_dest(ep_->info(0)), error);
}

// A step the server sits in while the client runs the test: no deadline on
// the exchange, since a run may be long; the watchdog still catches a peer
// that has gone silent.
bool Remote::while_client_runs(const std::function<bool()>& step) {
  const Millis saved = ch_->timeout();
  ch_->set_timeout(Millis(0));
  watchdog_->reset();
  const bool ok = step();
  ch_->set_timeout(saved);
  return ok;
}

RunInfo Remote::run_info() const {
  RunInfo r;
  r.device = o_.ib_dev.empty() ? port_end_->dpdk_port().name() + " (" + port_end_->dpdk_port().driver() + ")" : o_.ib_dev;
  // A raw test's MTU is its largest frame: the port MTU and the Ethernet header and FCS.
  r.mtu = o_.verb == Verb::raw ? port_end_->dpdk_port().mtu() + 18u : mtu_;
  r.server = !sender_;
  for (size_t q = 0; q < ep_->qp_count(); ++q) r.local.push_back(ep_->info(q));
  r.remote = remote_;
  return r;
}

int Remote::run() {
  std::string error;
  // A busy TCP port is a failure to report before any banner or port work.
  if (!client_ && !o_.rdma_cm && !(listener_ = exchange::TcpListener::listen(o_.tcp_port, error)))
    return fail(error);
  if (!open(error) || (o_.rdma_cm && !open_cm(error))) return fail(error);
  watchdog_ = std::make_unique<Watchdog>(device(), Millis(uint64_t(o_.timeout_s) * 1000));
  try {
    if (!client_) print_waiting_for_client(o_);
    if (!connect_exchange(error) || !set_up(error)) return fail(error);
    print_banner(o_, run_info());
    if (o_.use_event && o_.verb != Verb::raw && !device().engine_thread_running() &&
        !device().start_engine_thread(-1, error))
      return fail(error);
    const bool ok = run_test(error);
    if (o_.kind == Kind::bw || lat_row_here()) print_footer(o_);
    if (!ok || !close(error)) return fail(error + peer_gone_hint(error));
    if (o_.rdma_cm) {
      disconnect_cm();  // the CM needs the engine for its DREQs and DREPs
      device().stop_engine_thread();
    } else {
      device().stop_engine_thread();
      // Neither side polls its port from here on; once both know that, the
      // ports can close (a memif peer still polling would crash).
      ch_->linger(Millis(2000));
    }
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  if (!write_json(o_, run_info(), bw_, lat_row_here() ? lat_ : std::vector<LatResult>{}, cc_stats_json(o_, client_ ? "client" : "server", *ep_), error)) return fail(error);
  if ((sender_ || o_.bidirectional) && !check_limits(o_, bw_).empty()) return fail(check_limits(o_, bw_));  // -w / -y
  const DeviceCounters c = device().counters();
  std::printf(" uroce: %lu packets sent, %lu received, %lu retransmitted%s\n",
              (unsigned long)c.transport.sent_pkts, (unsigned long)c.transport.rcvd_pkts,
              (unsigned long)c.transport.retransmitted_pkts, verdict().c_str());
  print_cc_stats(o_, client_ ? "client" : "server", *ep_);
  return 0;
}

// -R: the engine runs on a thread of its own (the connection manager
// needs it), and this thread's posts and polls drive it too
// (Progress::kCallersDrive): the measured loops see no thread crossing.
// The server listens from here on, for the conversation and the test's
// connections alike (perftest's server listens twice, and a client that
// comes between the two is refused).
bool Remote::open_cm(std::string& error) {
  if (!device().start_engine_thread(-1, error, Device::Progress::kCallersDrive)) return false;
  if (!(cm_ = CmLink::open(device(), error))) return false;
  auto ch = CmChannel::create(device(), *cm_, error);
  if (!ch) return false;
  ch_ = std::move(ch);
  if (client_) return true;
  if (const int rc = cm_->manager().listen(o_.tcp_port))
    return error = "-R: couldn't listen on port " + std::to_string(o_.tcp_port) + ": " + std::strerror(rc) +
                   (rc == EADDRINUSE ? " (another program on this device listens there)" : ""),
           false;
  return true;
}

// perftest's, for the test's connections: READ depths only where the test
// reads, its default retry counts. No private data (rdma_cm's header only).
cm::ConnParam Remote::cm_params() const {
  cm::ConnParam p;
  if (o_.verb == Verb::read || o_.verb == Verb::atomic)
    p.responder_resources = p.initiator_depth = uint8_t(std::min<uint32_t>(ep_->info(0).out_reads, 255));
  return p;
}

// A REQ that reaches the server before it listens is refused (REJ reason
// 8): perftest's server listens for the test's connections only after a
// sync, and any server may start after its client. Tried again, with the
// QP back in RESET, until --timeout.
bool Remote::connect_with_retry(QueuePair& qp, const cm::ConnParam& p, uint64_t& id, std::string& error) {
  wire::IpAddr server;
  wire::IpAddr::parse(o_.server, server);  // checked with the options
  const Millis timeout(uint64_t(o_.timeout_s) * 1000);
  const auto until = std::chrono::steady_clock::now() + timeout;
  const auto idle = [this] { idle_poll(); };
  for (;;) {
    std::string why;
    if (cm_->connect(qp, server, o_.tcp_port, p, timeout, idle, id, why)) return true;
    cm_->manager().release(id);
    if (why.find("REJ reason 8") == std::string::npos || std::chrono::steady_clock::now() >= until)
      return error = "-R: connecting to " + o_.server + " port " + std::to_string(o_.tcp_port) + ": " + why, false;
    auto& ch = static_cast<CmChannel&>(*ch_);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RESET;
    if (&qp == &ch.qp() ? !ch.reset() : qp.modify(a, IBV_QP_STATE) != 0)
      return error = "-R: couldn't make a refused QP ready again", false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

bool Remote::connect_cm_channel(std::string& error) {
  auto& ch = static_cast<CmChannel&>(*ch_);
  const Millis timeout(uint64_t(o_.timeout_s) * 1000);
  const cm::ConnParam p;  // perftest's conversation: SENDs only, retry counts 7
  uint64_t id = 0;
  std::string peer;
  if (client_) {
    if (!connect_with_retry(ch.qp(), p, id, error)) return false;
    peer = o_.server;
  } else {
    wire::IpAddr from;
    // The server waits for its client as long as it takes, as without -R.
    if (!cm_->accept(ch.qp(), p, Millis(0), timeout, {}, id, from, error)) return error = "-R: " + error, false;
    peer = from.is_v4_mapped() ? from.to_string().substr(7) : from.to_string();
  }
  ch.connected(id, peer + " (rdma_cm, port " + std::to_string(o_.tcp_port) + ")");
  ch.set_idle([this] { idle_poll(); });
  ch.set_timeout(timeout);
  return true;
}

// One connection per QP, to the port of the conversation: the client
// connects them in order, the server accepts them as they come.
bool Remote::connect_cm_qps(std::string& error) {
  const Millis timeout(uint64_t(o_.timeout_s) * 1000);
  const cm::ConnParam p = cm_params();
  for (size_t q = 0; q < ep_->qp_count(); ++q) {
    uint64_t id = 0;
    wire::IpAddr from;
    const bool ok = client_ ? connect_with_retry(ep_->qp(q), p, id, error)
                            : cm_->accept(ep_->qp(q), p, timeout, timeout, [this] { idle_poll(); }, id, from, error);
    if (!ok) return error = "-R: test connection " + std::to_string(q) + ": " + error, false;
    cm_ids_.push_back(id);
    watchdog_->alive();
  }
  return true;
}

// The client ends the test's connections (DREQ) and waits for the DREPs;
// the server waits for those DREQs and ends any connection left itself.
// Then the conversation's, as the peer's process would at its exit.
void Remote::disconnect_cm() {
  const Millis wait(2000);
  if (client_)
    for (uint64_t id : cm_ids_) cm_->manager().disconnect(id);
  const auto until = std::chrono::steady_clock::now() + wait;
  for (uint64_t id : cm_ids_)
    while (!cm_->disconnected(id) && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (uint64_t id : cm_ids_)
    if (!cm_->disconnected(id)) cm_->disconnect(id, wait);
  for (size_t q = 0; q < ep_->qp_count(); ++q) cm_->manager().detach_qp(ep_->qp(q));
  ch_->linger(wait);
}

}  // namespace

void run_remote(const Options& o) {
  Remote remote(o);
  const int rc = remote.run();
  remote.stop_engine();
  // The port is not closed: a memif peer's disconnect is handled by DPDK's
  // interrupt thread, which races with closing our own memif port (DPDK
  // 22.11 crashes in either order). Both sides have stopped polling
  // (linger), so the process can end with its port open.
  remote.flush_capture();
  app::exit_now(rc);
}

}  // namespace uroce::perf
