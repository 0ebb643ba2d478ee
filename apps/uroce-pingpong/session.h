// SPDX-License-Identifier: BSD-3-Clause
// One ping-pong session on an open device: create the context, post the
// receives, print the local address(es), swap them with the peer over TCP
// in the example's format, connect, run, and print the result.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include "options.h"
#include "uroce/exchange/tcp_channel.h"
#include "uroce/port/endpoint.h"

namespace uroce::pingpong {

// The device a session runs on: a port of its own (an Endpoint, whose
// engine this process runs) or a client of uroced (--daemon), whose engine
// runs in the daemon: nothing to poll, and the daemon resolves the peer's
// MAC (a modify to RTR answers EHOSTUNREACH until it knows it).
class Station {
 public:
  explicit Station(uroce::Endpoint& ep) : ep_(&ep), dev_(&ep.device()) {}
  explicit Station(Device& dev) : dev_(&dev) {}
  Device& device() { return *dev_; }
  // Called when the CQ was found empty. Through the daemon the work is in
  // its threads: the CPU goes to them (busy pollers easily outnumber cores).
  int poll() {
    if (ep_) return ep_->poll();
    std::this_thread::yield();
    return 0;
  }
  bool daemon() const { return ep_ == nullptr; }
  // The peer's MAC by ARP/ND on our own port; through the daemon, left to
  // its engine (connect retries instead).
  bool resolve(const wire::IpAddr& peer, std::chrono::milliseconds timeout, std::string& error) {
    return ep_ == nullptr || ep_->resolve(peer, timeout, error);
  }

 private:
  uroce::Endpoint* ep_ = nullptr;
  Device* dev_ = nullptr;
};

// rc_pingpong (Mode::rc) and ud_pingpong (Mode::ud): one QP. `listener`:
// the server's, bound before anything was printed; nullptr for a client.
int run_single_qp(Station& st, exchange::TcpListener* listener, const Options& o);
// srq_pingpong: -q QPs on one SRQ.
int run_srq(Station& st, exchange::TcpListener* listener, const Options& o);

// "uroce-pingpong: MSG" on stderr; returns 1.
int fail(const std::string& msg);

}  // namespace uroce::pingpong
