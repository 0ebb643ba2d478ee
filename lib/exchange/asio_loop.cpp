// SPDX-License-Identifier: BSD-3-Clause
#include "asio_loop.h"

namespace uroce::exchange::detail {

namespace {

// How often the busy-poll loop looks at the socket (an epoll_wait system
// call) and the clock: every this many calls of `idle`. A bw server waits
// in a barrier for the whole measured run while its engine serves
// line-rate traffic from `idle`; a syscall, or even a clock read (slow on
// some VMs), per engine poll would cost it throughput, while a few
// microseconds of extra latency per exchange step cost nothing. At 64 a
// memif write_bw server spent a tenth of its CPU in epoll_wait (perf, on
// a VM where a syscall costs a microsecond or more); 1024 polls of an idle
// engine take about 100 us.
constexpr unsigned kIdleCallsPerSocketPoll = 1024;

}  // namespace

bool drive(asio::io_context& io, const bool& done, const Deadline& deadline, const Idle& idle) {
  // A finished operation leaves the context stopped (out of work).
  io.restart();
  unsigned calls = 0;
  while (!done) {
    if (idle) {
      // Busy-poll: the caller's engine must keep running (it may be the
      // very peer we wait for, or the ARP reply the peer waits for).
      if (calls++ % kIdleCallsPerSocketPoll == 0) {
        io.poll();
        if (done) break;
        if (deadline.passed()) return false;
      }
      idle();
    } else if (deadline.forever) {
      if (io.run_one() == 0) return done;  // no pending work: nothing can complete
    } else {
      // One look before the deadline check: an operation that can finish
      // at once (a refused connect, data already queued) is not a timeout.
      io.poll();
      if (done) break;
      if (deadline.passed()) return false;
      io.run_one_until(deadline.at);
    }
  }
  return true;
}

void settle(asio::io_context& io, const bool& done) {
  io.restart();
  while (!done && io.run_one() != 0) {
  }
}

std::string endpoint_text(const tcp::endpoint& ep) {
  asio::ip::address a = ep.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped()) a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  return host_port_text(a.to_string(), ep.port());
}

std::string host_port_text(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

std::string duration_text(Millis t) {
  if (t.count() > 0 && t.count() % 1000 == 0) return std::to_string(t.count() / 1000) + " s";
  return std::to_string(t.count()) + " ms";
}

}  // namespace uroce::exchange::detail
