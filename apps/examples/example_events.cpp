// SPDX-License-Identifier: BSD-3-Clause
// uroce-example-events: an application that sleeps until its completions
// arrive, in a Boost.Asio event loop, instead of polling.
//
//   uroce-example-events [--count N]
//
// Two endpoints in this process on two ring-PMD ports joined back to back
// (no NIC, no hugepages, no root), each device's engine on a thread of its
// own (threaded mode). Each side's CQ reports to a completion channel whose
// descriptor the io_context watches through a posix::stream_descriptor:
// when it turns readable the side takes the channel's events, acknowledges
// them, arms its CQ again and polls it empty. Side a sends N messages, 16 in
// flight; side b receives them and reposts its receives. Then a last message
// goes out a second later, from an Asio timer: meanwhile every thread of the
// process sleeps (the application in epoll, the engine threads in their
// idle naps), and the run fails if the process used more than 10% of that
// second's CPU time. Exit status 0 when all N + 1 messages arrived intact.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <utility>  // before Asio: its awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "uroce/port/eal.h"
#include "uroce/port/endpoint.h"
#include "uroce/verbs/verbs.h"

namespace {

using namespace uroce;
namespace asio = boost::asio;
using std::chrono::milliseconds;

constexpr uint32_t kMsg = 256;     // bytes per message
constexpr uint32_t kRecvs = 64;    // b's receives, reposted as they complete
constexpr uint32_t kWindow = 16;   // a's messages in flight
constexpr milliseconds kTimeout{10000};
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE;

int fail(const std::string& msg) {
  std::fprintf(stderr, "uroce-example-events: %s\n", msg.c_str());
  return 1;
}

double cpu_seconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

uint8_t pattern(uint64_t msg, size_t i) { return uint8_t(msg * 29 + i * 7); }

// One end: its objects in the order verbs creates them (destroyed in
// reverse), and the channel's descriptor in the io_context.
struct Side {
  std::unique_ptr<Endpoint> ep;
  std::unique_ptr<CompletionChannel> channel;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mr;
  std::unique_ptr<QueuePair> qp;
  std::unique_ptr<asio::posix::stream_descriptor> watch;
  uint32_t psn = 0;

  uint8_t* slot(uint64_t i) const { return static_cast<uint8_t*>(mr->addr()) + (i % kRecvs) * kMsg; }
  ~Side() {
    watch.reset();
    qp.reset();
    if (mr) pd->dereg_mr(mr);
    cq.reset();
  }
};

bool make_side(std::unique_ptr<Endpoint> ep, uint32_t psn, asio::io_context& io, Side& s, std::string& error) {
  s.ep = std::move(ep);
  s.psn = psn;
  Device& dev = s.ep->device();
  int err = 0;
  s.channel = dev.create_comp_channel(err);
  if (!s.channel) return error = std::string("create_comp_channel: ") + std::strerror(err), false;
  s.pd = dev.alloc_pd();
  s.cq = dev.create_cq(2 * kRecvs, s.channel.get(), 0, err);
  if (s.cq) s.mr = s.pd->alloc_mr(kRecvs * kMsg, kAccess, err);
  QpInitAttr init;
  init.send_cq = init.recv_cq = s.cq.get();
  init.cap.max_send_wr = kWindow;
  init.cap.max_recv_wr = kRecvs;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  if (s.mr) s.qp = s.pd->create_qp(init, err);
  if (!s.qp) return error = std::string("setting up PD, CQ, MR and QP: ") + std::strerror(err), false;
  // The loop's own descriptor (Asio closes it): a duplicate shares the
  // open file, so O_NONBLOCK set here is what get_event sees.
  const int fd = dup(s.channel->fd());
  if (fd < 0 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0)
    return error = std::string("channel descriptor: ") + std::strerror(errno), false;
  s.watch = std::make_unique<asio::posix::stream_descriptor>(io, fd);
  return true;
}

bool post_recv(Side& s, uint64_t i) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(s.slot(i)), kMsg, s.mr->lkey()};
  RecvWr wr;
  wr.wr_id = i;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  const RecvWr* bad = nullptr;
  return s.qp->post_recv(&wr, &bad) == 0;
}

bool post_send(Side& s, uint64_t i) {
  uint8_t* p = s.slot(i);
  for (size_t k = 0; k < kMsg; ++k) p[k] = pattern(i, k);
  ibv_sge sge{reinterpret_cast<uintptr_t>(p), kMsg, s.mr->lkey()};
  SendWr wr;
  wr.wr_id = i;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  const SendWr* bad = nullptr;
  return s.qp->post_send(&wr, &bad) == 0;
}

// The verbs pattern after a channel turned readable: take and acknowledge
// the events, arm the CQ for the next one, then poll it empty (a
// completion that came before the arming is found by this poll; one that
// comes after it makes the descriptor readable again).
template <class OnWc>
bool on_readable(Side& s, OnWc&& on_wc, std::string& error) {
  CompletionQueue* cq = nullptr;
  unsigned events = 0;
  int e;
  while ((e = s.channel->get_event(cq)) == 0) ++events;
  if (e != EAGAIN) return error = std::string("get_event: ") + std::strerror(e), false;
  s.cq->ack_events(events);
  if (s.cq->req_notify(false) != 0) return error = "req_notify failed", false;
  ibv_wc wc[16];
  int n;
  while ((n = s.cq->poll(16, wc)) > 0)
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS)
        return error = std::string("completion: ") + ibv_wc_status_str(wc[i].status), false;
      if (!on_wc(wc[i])) return false;
    }
  return true;
}

// Keeps a side's descriptor watched until the handler says stop.
void watch(Side& s, std::function<bool()> handler) {
  s.watch->async_wait(asio::posix::stream_descriptor::wait_read, [&s, handler](boost::system::error_code ec) {
    if (!ec && handler()) watch(s, handler);
  });
}

int run(uint64_t count) {
  EalConfig eal;
  eal.quiet = true;
  std::string error;
  std::unique_ptr<DpdkPort> pa, pb;
  if (!eal_init(eal, error) || !open_ring_pair("uroce_events", 1500, pa, pb, error)) return fail(error);
  EndpointConfig ca, cb;
  ca.ip = "192.168.81.1";
  cb.ip = "192.168.81.2";
  ca.device.name = "uroce_ev0";
  cb.device.name = "uroce_ev1";
  asio::io_context io;
  Side a, b;
  auto ea = Endpoint::adopt(std::move(pa), ca, error);
  auto eb = ea ? Endpoint::adopt(std::move(pb), cb, error) : nullptr;
  if (!eb || !make_side(std::move(ea), 0x100, io, a, error) || !make_side(std::move(eb), 0x200, io, b, error))
    return fail(error);

  // Connecting runs both engines from this thread (embedded mode); then
  // each engine gets a thread of its own.
  RcConnectOptions o;
  o.access = kAccess;
  o.sq_psn = a.psn;
  if (a.ep->connect_rc(*a.qp, {b.qp->qp_num(), b.psn, b.ep->gid()}, o, kTimeout, error, [&] { b.ep->poll(); }))
    return fail(error);
  o.sq_psn = b.psn;
  if (b.ep->connect_rc(*b.qp, {a.qp->qp_num(), a.psn, a.ep->gid()}, o, kTimeout, error, [&] { a.ep->poll(); }))
    return fail(error);
  if (!a.ep->device().start_engine_thread(-1, error) || !b.ep->device().start_engine_thread(-1, error))
    return fail(error);

  const uint64_t total = count + 1;  // the last one after the quiet second
  uint64_t sent = 0, acked = 0, received = 0;
  bool ok = true;
  for (uint64_t i = 0; i < kRecvs; ++i) ok &= post_recv(b, i);
  for (; sent < std::min<uint64_t>(kWindow, count); ++sent) ok &= post_send(a, sent);
  if (!ok || a.cq->req_notify(false) || b.cq->req_notify(false)) return fail("posting the first work requests");

  double quiet_cpu = -1;
  double quiet_wall = 0;
  asio::steady_timer timer(io);
  auto quiet_start = std::chrono::steady_clock::now();
  double cpu_at_start = 0;
  const auto send_last = [&] {
    cpu_at_start = cpu_seconds();
    quiet_start = std::chrono::steady_clock::now();
    timer.expires_after(std::chrono::seconds(1));
    timer.async_wait([&](boost::system::error_code) {
      quiet_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - quiet_start).count();
      quiet_cpu = cpu_seconds() - cpu_at_start;
      if (!post_send(a, sent++)) ok = false, error = "post_send of the last message";
    });
  };

  watch(a, [&] {
    ok = ok && on_readable(a, [&](const ibv_wc&) {
      ++acked;
      if (sent < count) return post_send(a, sent++) || (error = "post_send", false);
      if (acked == count) send_last();
      return true;
    }, error);
    return ok && acked < total;
  });
  watch(b, [&] {
    ok = ok && on_readable(b, [&](const ibv_wc& wc) {
      const uint64_t i = received++;
      if (wc.wr_id != i) return error = "receives out of order", false;
      for (size_t k = 0; k < kMsg; ++k)
        if (b.slot(i)[k] != pattern(i, k)) return error = "message " + std::to_string(i) + " differs", false;
      return post_recv(b, i + kRecvs) || (error = "post_recv", false);
    }, error);
    return ok && received < total;
  });
  // The whole run is bounded: a lost wake-up would otherwise hang it.
  io.run_for(kTimeout + std::chrono::seconds(2));
  if (!ok) return fail(error);
  if (received != total || acked != total)
    return fail("received " + std::to_string(received) + ", acknowledged " + std::to_string(acked) + " of " +
                std::to_string(total) + " messages");
  const double share = quiet_cpu / quiet_wall;
  std::printf("uroce-example-events: %llu messages of %u bytes, each completion awaited on a channel; "
              "process CPU while waiting %.1f ms in %.0f ms (%.1f%%)\n",
              static_cast<unsigned long long>(total), kMsg, 1e3 * quiet_cpu, 1e3 * quiet_wall, 100 * share);
  if (share > 0.10) return fail("the process was not idle while it waited");
  a.ep->device().stop_engine_thread();
  b.ep->device().stop_engine_thread();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t count = 2000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
      count = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: uroce-example-events [--count N]\n");
      return 2;
    }
  }
  if (count == 0) return fail("--count must be at least 1");
  return run(count);
}
