// SPDX-License-Identifier: BSD-3-Clause
// uroce-example-write: one RDMA WRITE between two uroce endpoints over real
// DPDK ports, checked byte by byte on the receiving side.
//
//   uroce-example-write --loopback
//       Both ends in this process, on two ring-PMD ports joined back to
//       back (no NIC, no hugepages, no root).
//   uroce-example-write --dev DEV --ip IP [--mac MAC] [--eal "ARGS"] [--tcp-port N]
//       Server: waits for a client on TCP port N (default 18520).
//   uroce-example-write --dev DEV --ip IP [...] --connect HOST
//       Client: writes 4096 bytes into the server's buffer.
//
// DEV is what DPDK opens: a PCI address ("0000:3b:00.0") or a vdev string
// ("net_af_packet0,iface=eth1"); IP is this end's RoCE address. The two
// ends swap QPN, PSN, GID, rkey and buffer address over a TCP socket, then
// uroce::Endpoint connects the RC QPs (ARP/ND included) and the client
// posts one RDMA WRITE with immediate: the immediate tells the server the
// data is there. Exit status 0 only if the server saw every byte right.
//
// Build it against an installed liburoce with `dependency('uroce')` alone
// (docs/install.md).
#include <arpa/inet.h>
#include <endian.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "uroce/port/eal.h"
#include "uroce/port/endpoint.h"
#include "uroce/verbs/verbs.h"

namespace {

using namespace uroce;
using std::chrono::milliseconds;

constexpr size_t kBytes = 4096;
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
constexpr milliseconds kTimeout{10000};

int fail(const std::string& msg) {
  std::fprintf(stderr, "uroce-example-write: %s\n", msg.c_str());
  return 1;
}

uint8_t pattern(size_t i) { return uint8_t(i * 7 + 13); }

// What one side owns on its endpoint, created in the order verbs needs
// and destroyed in reverse (the QP before the MR and CQ, all before the PD).
struct Side {
  std::unique_ptr<Endpoint> ep;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mr;
  std::unique_ptr<QueuePair> qp;
  uint32_t psn = 0;

  uint8_t* buf() const { return static_cast<uint8_t*>(mr->addr()); }
  ~Side() {
    qp.reset();
    if (mr) pd->dereg_mr(mr);
  }
};

bool make_side(std::unique_ptr<Endpoint> ep, uint32_t psn, Side& s, std::string& error) {
  s.ep = std::move(ep);
  s.psn = psn;
  s.pd = s.ep->device().alloc_pd();
  int err = 0;
  s.cq = s.ep->device().create_cq(16, err);
  if (s.cq) s.mr = s.pd->alloc_mr(kBytes, kAccess, err);
  QpInitAttr init;
  init.send_cq = init.recv_cq = s.cq.get();
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  if (s.mr) s.qp = s.pd->create_qp(init, err);
  if (!s.qp) error = std::string("setting up PD, CQ, MR and QP: ") + std::strerror(err);
  return s.qp != nullptr;
}

// What the peer needs to know about this side, as sent over TCP.
struct Card {
  uint32_t qpn = 0, psn = 0, rkey = 0;
  uint64_t addr = 0;
  wire::IpAddr gid;
};

Card card_of(const Side& s) {
  return {s.qp->qp_num(), s.psn, s.mr->rkey(), reinterpret_cast<uintptr_t>(s.mr->addr()), s.ep->gid()};
}

// 36 bytes, integers big-endian: both ends agree whatever their CPUs.
using CardBytes = std::array<uint8_t, 36>;

CardBytes encode(const Card& c) {
  CardBytes b{};
  const uint32_t w[3] = {htobe32(c.qpn), htobe32(c.psn), htobe32(c.rkey)};
  const uint64_t a = htobe64(c.addr);
  std::memcpy(b.data(), w, 12);
  std::memcpy(b.data() + 12, &a, 8);
  std::memcpy(b.data() + 20, c.gid.bytes.data(), 16);
  return b;
}

Card decode(const CardBytes& b) {
  Card c;
  uint32_t w[3];
  uint64_t a;
  std::memcpy(w, b.data(), 12);
  std::memcpy(&a, b.data() + 12, 8);
  std::memcpy(c.gid.bytes.data(), b.data() + 20, 16);
  c.qpn = be32toh(w[0]);
  c.psn = be32toh(w[1]);
  c.rkey = be32toh(w[2]);
  c.addr = be64toh(a);
  return c;
}

// Both ends connect their QP to the other's card. `idle` polls the other
// end when both live in this thread.
bool connect(Side& s, const Card& peer, std::string& error, const std::function<void()>& idle = {}) {
  RcConnectOptions o;
  o.sq_psn = s.psn;
  o.access = kAccess;
  return s.ep->connect_rc(*s.qp, {peer.qpn, peer.psn, peer.gid}, o, kTimeout, error, idle) == 0;
}

// The server's part before the data comes: a receive for the immediate.
bool post_receive(Side& s, std::string& error) {
  RecvWr wr;
  const RecvWr* bad = nullptr;
  if (int err = s.qp->post_recv(&wr, &bad)) return error = std::string("post_recv: ") + std::strerror(err), false;
  return true;
}

bool post_write(Side& s, const Card& peer, std::string& error) {
  for (size_t i = 0; i < kBytes; ++i) s.buf()[i] = pattern(i);
  ibv_sge sge{reinterpret_cast<uintptr_t>(s.buf()), uint32_t(kBytes), s.mr->lkey()};
  SendWr wr;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(uint32_t(kBytes));
  wr.wr.rdma.remote_addr = peer.addr;
  wr.wr.rdma.rkey = peer.rkey;
  const SendWr* bad = nullptr;
  if (int err = s.qp->post_send(&wr, &bad)) return error = std::string("post_send: ") + std::strerror(err), false;
  return true;
}

// Polls until one completion arrives; `idle` as in connect.
bool wait_completion(Side& s, ibv_wc& wc, std::string& error, const std::function<void()>& idle = {}) {
  const auto until = std::chrono::steady_clock::now() + kTimeout;
  while (s.cq->poll(1, &wc) == 0) {
    if (std::chrono::steady_clock::now() > until) return error = "no completion within 10 s", false;
    s.ep->poll();
    if (idle) idle();
  }
  if (wc.status == IBV_WC_SUCCESS) return true;
  // rdma-core's words and the number, as uroce's other tools print a status.
  error = std::string("completion: ") + ibv_wc_status_str(wc.status) + " (" + std::to_string(int(wc.status)) + ")";
  return false;
}

bool verify(const Side& s, const ibv_wc& wc, std::string& error) {
  if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || ntohl(wc.imm_data) != kBytes)
    return error = "the receive completion is not the WRITE's immediate", false;
  for (size_t i = 0; i < kBytes; ++i)
    if (s.buf()[i] != pattern(i)) return error = "byte " + std::to_string(i) + " differs", false;
  return true;
}

int run_loopback() {
  EalConfig eal;
  eal.quiet = true;
  std::string error;
  std::unique_ptr<DpdkPort> pa, pb;
  if (!eal_init(eal, error) || !open_ring_pair("uroce_example", 1500, pa, pb, error)) return fail(error);
  EndpointConfig ca, cb;
  ca.ip = "192.168.79.1";
  cb.ip = "192.168.79.2";
  ca.device.name = "uroce_ex0";
  cb.device.name = "uroce_ex1";
  Side a, b;  // a writes into b
  auto ea = Endpoint::adopt(std::move(pa), ca, error);
  auto eb = ea ? Endpoint::adopt(std::move(pb), cb, error) : nullptr;
  if (!eb || !make_side(std::move(ea), 0x1000, a, error) || !make_side(std::move(eb), 0x2000, b, error))
    return fail(error);
  const auto poll_a = [&] { a.ep->poll(); };
  const auto poll_b = [&] { b.ep->poll(); };
  ibv_wc wa{}, wb{};
  if (!connect(a, card_of(b), error, poll_b) || !connect(b, card_of(a), error, poll_a) ||
      !post_receive(b, error) || !post_write(a, card_of(b), error) || !wait_completion(a, wa, error, poll_b) ||
      !wait_completion(b, wb, error, poll_a) || !verify(b, wb, error))
    return fail(error);
  std::printf("uroce-example-write: loopback %s -> %s over %s: RDMA WRITE of %zu bytes verified\n",
              a.ep->gid().to_string().c_str(), b.ep->gid().to_string().c_str(), a.ep->dpdk_port().name().c_str(),
              kBytes);
  return 0;
}

// --- The TCP exchange of the two-process mode ------------------------------

// Reads or writes exactly n bytes, polling the endpoint while it waits so
// it keeps answering ARP and acknowledging the peer.
bool transfer(int fd, Endpoint& ep, void* data, size_t n, bool out, std::string& error) {
  auto* p = static_cast<uint8_t*>(data);
  const auto until = std::chrono::steady_clock::now() + kTimeout;
  for (size_t done = 0; done < n;) {
    pollfd pfd{fd, short(out ? POLLOUT : POLLIN), 0};
    if (::poll(&pfd, 1, 0) == 1) {
      const ssize_t k = out ? ::send(fd, p + done, n - done, MSG_NOSIGNAL) : ::recv(fd, p + done, n - done, 0);
      if (k <= 0) return error = "the TCP peer went away", false;
      done += size_t(k);
    } else if (std::chrono::steady_clock::now() > until) {
      return error = "TCP peer silent for 10 s", false;
    }
    ep.poll();
  }
  return true;
}

int tcp_connect(const std::string& host, uint16_t port, std::string& error) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int e = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res))
    return error = host + ": " + gai_strerror(e), -1;
  // The server may start a moment later: retry refused connections.
  const auto until = std::chrono::steady_clock::now() + kTimeout;
  int fd = -1;
  while (fd < 0 && std::chrono::steady_clock::now() < until) {
    fd = ::socket(res->ai_family, SOCK_STREAM, 0);
    if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
      std::this_thread::sleep_for(milliseconds(100));
    }
  }
  freeaddrinfo(res);
  if (fd < 0) error = "cannot connect to " + host + ":" + std::to_string(port);
  return fd;
}

int tcp_accept(uint16_t port, std::string& error) {
  const int ls = ::socket(AF_INET6, SOCK_STREAM, 0);
  const int on = 1, off = 0;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  a.sin6_addr = in6addr_any;
  if (::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(ls, 1) != 0) {
    ::close(ls);
    return error = "TCP port " + std::to_string(port) + ": " + std::strerror(errno), -1;
  }
  const int fd = ::accept(ls, nullptr, nullptr);
  ::close(ls);
  if (fd < 0) error = std::string("accept: ") + std::strerror(errno);
  return fd;
}

// The client sends its card first; the server connects its QP to it and
// posts the receive for the immediate before it answers with its own card,
// so the client's WRITE never finds the server unready.
bool server_setup(Side& s, int fd, Card& peer, std::string& error) {
  CardBytes theirs{}, mine = encode(card_of(s));
  if (!transfer(fd, *s.ep, theirs.data(), theirs.size(), false, error)) return false;
  peer = decode(theirs);
  return connect(s, peer, error) && post_receive(s, error) &&
         transfer(fd, *s.ep, mine.data(), mine.size(), true, error);
}

// Then the immediate's completion, the check, and the verdict (one byte).
bool serve(Side& s, int fd, Card& peer, std::string& error) {
  ibv_wc wc{};
  if (!server_setup(s, fd, peer, error) || !wait_completion(s, wc, error)) return false;
  const bool ok = verify(s, wc, error);
  uint8_t verdict = ok ? 1 : 0;
  return transfer(fd, *s.ep, &verdict, 1, true, error) && ok;
}

bool write_to(Side& s, int fd, Card& peer, std::string& error) {
  CardBytes mine = encode(card_of(s)), theirs{};
  if (!transfer(fd, *s.ep, mine.data(), mine.size(), true, error) ||
      !transfer(fd, *s.ep, theirs.data(), theirs.size(), false, error))
    return false;
  peer = decode(theirs);
  ibv_wc wc{};
  if (!connect(s, peer, error) || !post_write(s, peer, error) || !wait_completion(s, wc, error)) return false;
  uint8_t verdict = 0;
  if (!transfer(fd, *s.ep, &verdict, 1, false, error)) return false;
  return verdict == 1 || (error = "the server found the data wrong", false);
}

struct Args {
  bool loopback = false;
  std::string connect;  // empty: server
  uint16_t tcp_port = 18520;
  EndpointConfig ec;
};

int run_two_process(const Args& a) {
  std::string error;
  std::unique_ptr<Endpoint> ep = Endpoint::open(a.ec, error);
  Side s;
  if (!ep || !make_side(std::move(ep), uint32_t(getpid()) & 0xffffff, s, error)) return fail(error);
  const bool client = !a.connect.empty();
  const int fd = client ? tcp_connect(a.connect, a.tcp_port, error) : tcp_accept(a.tcp_port, error);
  if (fd < 0) return fail(error);
  Card peer;
  const bool ok = client ? write_to(s, fd, peer, error) : serve(s, fd, peer, error);
  ::close(fd);
  if (!ok) return fail(error);
  std::printf("uroce-example-write: %s %s, peer %s: RDMA WRITE of %zu bytes verified\n", client ? "client" : "server",
              s.ep->gid().to_string().c_str(), peer.gid.to_string().c_str(), kBytes);
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: uroce-example-write --loopback\n"
               "       uroce-example-write --dev DEV --ip IP [--mac MAC] [--eal \"ARGS\"] [--tcp-port N] "
               "[--connect HOST]\n");
  return 2;
}

bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--loopback") {
      a.loopback = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    const std::string v = argv[++i];
    if (k == "--dev") a.ec.dev = v;
    else if (k == "--ip") a.ec.ip = v;
    else if (k == "--mac") a.ec.mac = v;
    else if (k == "--connect") a.connect = v;
    else if (k == "--tcp-port") a.tcp_port = uint16_t(std::strtoul(v.c_str(), nullptr, 10));
    else if (k == "--eal") {
      for (size_t p = 0, q; p < v.size(); p = q + 1) {
        q = v.find(' ', p);
        if (q == std::string::npos) q = v.size();
        if (q > p) a.ec.eal_args.push_back(v.substr(p, q - p));
      }
    } else {
      return false;
    }
  }
  return a.loopback || (!a.ec.dev.empty() && !a.ec.ip.empty());
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, a)) return usage();
  return a.loopback ? run_loopback() : run_two_process(a);
}
