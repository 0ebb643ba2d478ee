// SPDX-License-Identifier: BSD-3-Clause
// Clients of one uroced, each a process of its own (forked before it
// connects), for tests/daemon/daemon_test.sh:
//   daemon_peer SOCKET pair        two clients: WRITE, SEND, READ both ways, data checked
//   daemon_peer SOCKET remote SOCKET2   the same with the second client on another daemon
//   daemon_peer SOCKET many        eight clients in four pairs, all moving data at once
//   daemon_peer SOCKET kill        a third client killed -9: its peer sees errors, the other pair goes on
//   daemon_peer SOCKET isolation   another client's lkey, a bad rkey, malformed control messages and rings
//   daemon_peer SOCKET fork        registered malloc'd memory: neighbours intact, a child gets a copy
//   daemon_peer SOCKET events      a client asleep on a completion channel
//   daemon_peer SOCKET qpn         QP numbers of destroyed QPs and dead clients are not reused at once
//   daemon_peer SOCKET quota       every [limits] quota: ENOMEM past it, per client
//   daemon_peer SOCKET death PID   the daemon killed: posts fail with EIO, destroys succeed
//   daemon_peer SOCKET huge KIB    4 MiB regions from alloc_mr on pages of KIB KiB (2048: huge pages;
//                                  4: the daemon's hugepage_regions off), WRITE and READ between them
//   daemon_peer SOCKET hold        two connected clients, a WRITE each way, then both wait to be
//                                  killed; prints "hold: PID_A PID_B" once the WRITEs completed
// Exit 0 when every check holds, 1 with a message otherwise.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "daemon/protocol.h"
#include "daemon/socket_io.h"
#include "uroce/client/daemon_client.h"

using namespace uroce;
using client::Connection;

namespace {

std::string g_socket;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "FAIL [pid %d]: %s\n", int(getpid()), what.c_str());
  std::fflush(stderr);
  _exit(1);
}
void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

struct Info {
  uint32_t qpn;
  uint32_t rkey;
  uint32_t lkey;
  uint32_t pad;
  uint64_t addr;
  uint8_t gid[16];
};

void send_info(int fd, const Info& i) { check(write(fd, &i, sizeof i) == sizeof i, "exchange write"); }
Info recv_info(int fd) {
  Info i{};
  check(read(fd, &i, sizeof i) == sizeof i, "exchange read");
  return i;
}
void sync_send(int fd) {
  char c = 1;
  check(write(fd, &c, 1) == 1, "sync write");
}
void sync_wait(int fd) {
  char c;
  check(read(fd, &c, 1) == 1, "sync read");
}

// One client: connection, PD, CQ, QP, a region of `bytes`.
struct Side {
  std::unique_ptr<Connection> conn;
  std::unique_ptr<client::CompletionChannel> channel;
  std::unique_ptr<client::ProtectionDomain> pd;
  std::unique_ptr<client::CompletionQueue> cq;
  std::unique_ptr<client::QueuePair> qp;
  std::unique_ptr<client::MemoryRegion> mr;
  uint8_t* buf = nullptr;
  size_t bytes = 0;
  void* heap = nullptr;  // reg_mr's malloc'd block

  Side() = default;
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;
  // The region goes before its memory; the rest in declaration order.
  ~Side() {
    qp.reset();
    mr.reset();
    std::free(heap);
  }

  void open(size_t n, bool malloced, bool with_channel = false, const std::string& socket = g_socket) {
    std::string error;
    conn = Connection::connect(socket, error);
    check(conn != nullptr, "connect: " + error);
    int err = 0;
    pd = conn->alloc_pd(err);
    check(pd != nullptr, "alloc_pd " + std::to_string(err));
    if (with_channel) {
      channel = conn->create_comp_channel(err);
      check(channel != nullptr, "create_comp_channel " + std::to_string(err));
    }
    cq = conn->create_cq(256, channel.get(), err);
    check(cq != nullptr, "create_cq " + std::to_string(err));
    client::QpInitAttr a;
    a.send_cq = a.recv_cq = cq.get();
    a.cap.max_send_wr = 64;
    a.cap.max_recv_wr = 64;
    a.cap.max_send_sge = 2;
    a.cap.max_recv_sge = 2;
    a.cap.max_inline_data = 64;
    qp = pd->create_qp(a, err);
    check(qp != nullptr, "create_qp " + std::to_string(err));
    bytes = n;
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (malloced) {
      // Not page-aligned on purpose: whole pages around it are shared.
      heap = std::malloc(n + 100);
      buf = static_cast<uint8_t*>(heap) + 37;
      std::memset(heap, 0, n + 100);
      mr = pd->reg_mr(buf, n, access, err);
    } else {
      mr = pd->alloc_mr(n, access, err);
      if (mr) buf = static_cast<uint8_t*>(mr->addr());
    }
    check(mr != nullptr, std::string(malloced ? "reg_mr " : "alloc_mr ") + std::to_string(err));
  }

  Info info() const {
    Info i{};
    i.qpn = qp->qp_num();
    i.rkey = mr->rkey();
    i.lkey = mr->lkey();
    i.addr = reinterpret_cast<uintptr_t>(buf);
    std::memcpy(i.gid, conn->gid(), 16);
    return i;
  }

  void connect_to(const Info& peer, uint8_t timeout = 14, uint8_t retry = 7) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    check(qp->modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "INIT");
    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = peer.qpn;
    a.rq_psn = 100;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 1;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.sgid_index = 1;
    a.ah_attr.grh.hop_limit = 64;
    std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
    // A peer behind another daemon: RTR waits for ARP (EHOSTUNREACH meanwhile).
    int rtr = EHOSTUNREACH;
    for (int i = 0; i < 300 && rtr == EHOSTUNREACH; ++i) {
      rtr = qp->modify(a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
      if (rtr == EHOSTUNREACH) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    check(rtr == 0, "RTR " + std::to_string(rtr));
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 100;
    a.timeout = timeout;
    a.retry_cnt = retry;
    a.rnr_retry = 7;
    a.max_rd_atomic = 4;
    check(qp->modify(a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                            IBV_QP_MAX_QP_RD_ATOMIC) == 0,
          "RTS");
  }

  ibv_wc wait_wc(double seconds = 5) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    ibv_wc wc{};
    while (std::chrono::steady_clock::now() < end)
      if (cq->poll(1, &wc) == 1) return wc;
    fail("no completion within " + std::to_string(seconds) + " s");
  }

  void post(ibv_wr_opcode op, uint64_t local_off, uint32_t len, const Info& peer, uint64_t remote_off,
            uint32_t lkey = 0, uint64_t wr_id = 1) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf) + local_off, len, lkey ? lkey : mr->lkey()};
    SendWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = peer.addr + remote_off;
    wr.wr.rdma.rkey = peer.rkey;
    const SendWr* bad = nullptr;
    const int err = qp->post_send(&wr, &bad);
    check(err == 0, "post_send " + std::to_string(err));
  }

  ibv_wc expect(ibv_wc_status status, const char* what) {
    const ibv_wc wc = wait_wc();
    check(wc.status == status, std::string(what) + ": status " + ibv_wc_status_str(wc.status));
    return wc;
  }

  void post_recv(uint64_t off, uint32_t len) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf) + off, len, mr->lkey()};
    RecvWr wr;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    const RecvWr* bad = nullptr;
    check(qp->post_recv(&wr, &bad) == 0, "post_recv");
  }
};

// Readable within ms milliseconds?
bool readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

void fill(uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = uint8_t(seed + i * 7 + (i >> 8));
}
bool same(const uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != uint8_t(seed + i * 7 + (i >> 8))) return false;
  return true;
}

// Runs fn in a child process (forked before it connects); returns its pid.
template <typename Fn>
pid_t spawn(Fn fn) {
  const pid_t pid = fork();
  check(pid >= 0, "fork");
  if (pid == 0) {
    fn();
    std::fflush(nullptr);
    _exit(0);
  }
  return pid;
}

bool child_ok(pid_t pid) {
  int st = 0;
  return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

constexpr size_t kBytes = 256 * 1024;

// The active side WRITEs the first half of its buffer into the peer's and
// SENDs to say so; the peer checks it, WRITEs its own pattern into the
// second half of the active side's buffer and SENDs back; the active side
// checks that and READs the peer's first page back.
constexpr size_t kHalf = kBytes / 2;
constexpr size_t kAnswer = kHalf - 64;  // the last 64 bytes take the SENDs

void pair_active(Side& s, const Info& peer, int ctl, uint8_t seed) {
  fill(s.buf, kHalf, seed);
  s.post_recv(kBytes - 64, 64);
  sync_wait(ctl);  // the peer's receive is posted
  s.post(IBV_WR_RDMA_WRITE, 0, kHalf, peer, 0);
  s.expect(IBV_WC_SUCCESS, "WRITE");
  s.post(IBV_WR_SEND, 0, 32, peer, 0);
  s.expect(IBV_WC_SUCCESS, "SEND");
  const ibv_wc r = s.expect(IBV_WC_SUCCESS, "answer RECV");
  check(r.opcode == IBV_WC_RECV && r.byte_len == 32, "the answer is a 32-byte SEND");
  check(same(s.buf + kHalf, kAnswer, uint8_t(seed + 1)), "the peer's WRITE arrived intact");
  s.post(IBV_WR_RDMA_READ, kBytes - 8192, 4096, peer, 0);
  s.expect(IBV_WC_SUCCESS, "READ");
  check(same(s.buf + kBytes - 8192, 4096, seed), "READ returned what was written");
  sync_send(ctl);  // the peer may go
}

void pair_passive(Side& s, const Info& peer, int ctl, uint8_t seed) {
  s.post_recv(kBytes - 64, 64);
  sync_send(ctl);
  const ibv_wc r = s.expect(IBV_WC_SUCCESS, "RECV");
  check(r.opcode == IBV_WC_RECV && r.byte_len == 32, "a 32-byte SEND");
  check(same(s.buf, kHalf, seed), "the WRITE arrived intact");
  fill(s.buf + kHalf, kAnswer, uint8_t(seed + 1));
  s.post(IBV_WR_RDMA_WRITE, kHalf, uint32_t(kAnswer), peer, kHalf);
  s.expect(IBV_WC_SUCCESS, "answer WRITE");
  s.post(IBV_WR_SEND, 0, 32, peer, 0);
  s.expect(IBV_WC_SUCCESS, "answer SEND");
  sync_wait(ctl);  // until the peer's READ is done
}

// A start line for clients in several processes: each says it is ready
// on one pipe and waits for a byte on another (both -1: no wait).
struct Barrier {
  int ready = -1, go = -1;
  void wait() const {
    if (ready < 0) return;
    sync_send(ready);
    sync_wait(go);
  }
};

// Two clients, this process and a child: `rounds` exchanges of WRITE, SEND
// and READ, data checked; the child connects to `other_socket` (another
// daemon: a remote peer).
void pair_rounds(const std::string& other_socket, uint8_t seed, int rounds, const Barrier& barrier = {}) {
  int sp[2];
  check(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0, "socketpair");
  const pid_t child = spawn([&] {
    close(sp[0]);
    Side b;
    b.open(kBytes, false, false, other_socket);  // daemon-provided memory
    send_info(sp[1], b.info());
    b.connect_to(recv_info(sp[1]));
    for (int r = 0; r < rounds; ++r) pair_passive(b, recv_info(sp[1]), sp[1], uint8_t(seed + 2 * r));
  });
  close(sp[1]);
  Side a;
  a.open(kBytes, true);  // malloc'd memory, registered by remapping
  const Info peer = recv_info(sp[0]);
  send_info(sp[0], a.info());
  a.connect_to(peer);
  barrier.wait();
  for (int r = 0; r < rounds; ++r) {
    send_info(sp[0], a.info());
    pair_active(a, peer, sp[0], uint8_t(seed + 2 * r));
  }
  check(child_ok(child), "the other client failed");
}

int run_pair(const std::string& other_socket = g_socket) {
  pair_rounds(other_socket, 0x21, 1);
  std::printf("pair: data verified both ways (WRITE, SEND, READ)\n");
  return 0;
}

// Four pairs of clients, eight processes, connected before any data moves
// and then all moving it at once.
int run_many() {
  constexpr int kPairs = 4, kRounds = 8;
  int ready[2], go[2];
  check(pipe(ready) == 0 && pipe(go) == 0, "pipe");
  std::vector<pid_t> leaders;
  for (int p = 0; p < kPairs; ++p)
    leaders.push_back(spawn([&, p] {
      // Only this process writes `go`: a pair waiting there sees EOF if it dies.
      close(go[1]);
      close(ready[0]);
      pair_rounds(g_socket, uint8_t(0x10 * (p + 1)), kRounds, {ready[1], go[0]});
    }));
  for (int p = 0; p < kPairs; ++p) {
    check(readable(ready[0], 30000), "a pair did not connect within 30 s");
    sync_wait(ready[0]);
  }
  for (int p = 0; p < kPairs; ++p) sync_send(go[1]);
  for (pid_t pid : leaders) check(child_ok(pid), "a pair failed");
  std::printf("many: %d clients in %d pairs, %d rounds each at once: data verified (WRITE, SEND, READ)\n",
              2 * kPairs, kPairs, kRounds);
  return 0;
}

int run_kill() {
  int sb[2], sc[2];
  check(socketpair(AF_UNIX, SOCK_STREAM, 0, sb) == 0 && socketpair(AF_UNIX, SOCK_STREAM, 0, sc) == 0, "socketpair");
  const pid_t b_pid = spawn([&] {
    close(sb[0]);
    close(sc[0]);
    Side b;
    b.open(kBytes, false);
    send_info(sb[1], b.info());
    b.connect_to(recv_info(sb[1]));
    for (uint8_t round = 0; round < 2; ++round) pair_passive(b, recv_info(sb[1]), sb[1], uint8_t(0x40 + round * 2));
  });
  const pid_t c_pid = spawn([&] {
    close(sb[0]);
    close(sc[0]);
    Side c;
    c.open(kBytes, true);
    send_info(sc[1], c.info());
    c.connect_to(recv_info(sc[1]));
    sync_send(sc[1]);
    pause();  // killed here
  });
  close(sb[1]);
  close(sc[1]);
  Side a, a2;
  a.open(kBytes, false);
  a2.open(kBytes, false);
  const Info b = recv_info(sb[0]);
  send_info(sb[0], a.info());
  a.connect_to(b);
  const Info c = recv_info(sc[0]);
  send_info(sc[0], a2.info());
  a2.connect_to(c, 10, 3);  // 4 ms, 3 retries: a dead peer shows soon
  sync_wait(sc[0]);
  send_info(sb[0], a.info());
  pair_active(a, b, sb[0], 0x40);
  a2.post(IBV_WR_RDMA_WRITE, 0, 4096, c, 0);
  a2.expect(IBV_WC_SUCCESS, "WRITE to the client before it is killed");
  kill(c_pid, SIGKILL);
  waitpid(c_pid, nullptr, 0);
  const auto t0 = std::chrono::steady_clock::now();
  ibv_wc wc{};
  // Its QP is gone: WRITEs to it end in an error (NAK or retries), never hang.
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    a2.post(IBV_WR_RDMA_WRITE, 0, 4096, c, 0, 0, 100 + uint64_t(i));
    wc = a2.wait_wc(5);
    if (wc.status != IBV_WC_SUCCESS) break;
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  check(wc.status != IBV_WC_SUCCESS, "WRITEs to a killed client kept succeeding");
  // The QP that failed is named in an asynchronous event.
  check(readable(a2.conn->async_event_fd(), 2000), "no asynchronous event");
  client::AsyncEvent ev;
  check(a2.conn->get_async_event(ev) == 0 && ev.event_type == IBV_EVENT_QP_FATAL && ev.qp == a2.qp.get(),
        "the event is not IBV_EVENT_QP_FATAL of the failed QP");
  std::printf("kill: WRITE to the killed client: %s after %.0f ms\n", ibv_wc_status_str(wc.status), ms);
  send_info(sb[0], a.info());
  pair_active(a, b, sb[0], 0x42);
  check(child_ok(b_pid), "the surviving client failed");
  std::printf("kill: the other pair still verified its data\n");
  return 0;
}

// A control request sent raw; the reply's status, or -1 if the daemon hung up.
int raw_call(int sock, const void* req, size_t len, int fd = -1) {
  check(daemon::send_datagram(sock, req, len, fd >= 0 ? &fd : nullptr, fd >= 0 ? 1 : 0) == 0, "raw send");
  alignas(8) uint8_t buf[512];
  daemon::Received r = daemon::recv_datagram(sock, buf, sizeof buf);
  daemon::close_fds(r);
  if (r.len <= 0) return -1;
  return reinterpret_cast<const daemon::RepHeader*>(buf)->status;
}

int raw_socket() {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, g_socket.c_str(), g_socket.size());
  const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  check(connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "raw connect");
  return s;
}

int raw_hello(int s, uint32_t version) {
  daemon::HelloReq h{{daemon::Op::hello, sizeof(daemon::HelloReq)}, daemon::kMagic, version};
  return raw_call(s, &h, sizeof h);
}

void check_protocol() {
  int s = raw_socket();
  daemon::AllocPdReq pd{{daemon::Op::alloc_pd, sizeof(daemon::AllocPdReq)}};
  check(raw_call(s, &pd, sizeof pd) == -1, "a request before HELLO is answered");
  close(s);
  s = raw_socket();
  check(raw_hello(s, daemon::kVersion + 1) == EPROTO, "another protocol version is not refused with EPROTO");
  close(s);
  s = raw_socket();
  check(raw_hello(s, daemon::kVersion) == 0, "HELLO");
  daemon::HandleReq bogus{{daemon::Op::destroy_qp, sizeof(daemon::HandleReq)}, 12345};
  check(raw_call(s, &bogus, sizeof bogus) == EINVAL, "an unknown handle is not EINVAL");
  uint8_t longer[sizeof(daemon::HandleReq) + 8]{};
  daemon::HandleReq dq{{daemon::Op::dealloc_pd, sizeof longer}, 1};
  std::memcpy(longer, &dq, sizeof dq);
  check(raw_call(s, longer, sizeof longer) == EINVAL, "a request of the wrong size is not EINVAL");
  check(raw_call(s, &pd, sizeof pd) == 0, "alloc_pd");
  // The connection manager: nothing before cm_open; an id or a QP number
  // that is not the client's is refused.
  daemon::CmListenReq listen{};
  listen.h = {daemon::Op::cm_listen, sizeof listen};
  listen.port = 7000;
  listen.on = 1;
  check(raw_call(s, &listen, sizeof listen) == EINVAL, "cm_listen before cm_open is not EINVAL");
  daemon::AllocPdReq cm_open{{daemon::Op::cm_open, sizeof(daemon::AllocPdReq)}};
  check(raw_call(s, &cm_open, sizeof cm_open) == 0, "cm_open");
  daemon::AllocPdReq get_event{{daemon::Op::cm_get_event, sizeof(daemon::AllocPdReq)}};
  check(raw_call(s, &get_event, sizeof get_event) == EAGAIN, "cm_get_event with no event is not EAGAIN");
  daemon::CmIdReq release{};
  release.h = {daemon::Op::cm_id_op, sizeof release};
  release.id = 1;
  release.what = daemon::CmIdOp::release;
  check(raw_call(s, &release, sizeof release) == EINVAL, "releasing a connection that is not the client's");
  daemon::CmAcceptReq accept{};
  accept.h = {daemon::Op::cm_accept, sizeof accept};
  accept.id = 1;
  check(raw_call(s, &accept, sizeof accept) == EINVAL, "accepting a request that is not the client's");
  daemon::CmConnectReq connect{};
  connect.h = {daemon::Op::cm_connect, sizeof connect};
  connect.qpn = 17;  // no QP of this client
  connect.qp_type = IBV_QPT_RC;
  connect.port = 7000;
  const uint8_t peer[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
  std::memcpy(connect.peer, peer, 16);
  check(raw_call(s, &connect, sizeof connect) == EINVAL, "a REQ offering a QP number that is not the client's");
  connect.qp = 4242;  // no such handle
  check(raw_call(s, &connect, sizeof connect) == EINVAL, "a REQ naming a QP handle that is not the client's");
  check(raw_call(s, &listen, sizeof listen) == 0, "cm_listen");
  check(raw_call(s, &listen, sizeof listen) == EADDRINUSE, "listening twice on a port is not EADDRINUSE");
  // An unsealed memfd could be shrunk under the daemon: refused.
  const int fd = memfd_create("unsealed", MFD_CLOEXEC);
  check(fd >= 0 && ftruncate(fd, 4096) == 0, "memfd");
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  daemon::RegMrReq rm{{daemon::Op::reg_mr, sizeof(daemon::RegMrReq)}, 0, IBV_ACCESS_LOCAL_WRITE,
                      reinterpret_cast<uintptr_t>(page), 4096, reinterpret_cast<uintptr_t>(page),
                      reinterpret_cast<uintptr_t>(page), 4096, 1, 0, {}};
  rm.seg[0] = {reinterpret_cast<uintptr_t>(page), 4096, 0};
  daemon::HandleRep rep{};
  check(daemon::send_datagram(s, &pd, sizeof pd, nullptr, 0) == 0, "raw send");
  daemon::Received r = daemon::recv_datagram(s, &rep, sizeof rep);
  check(r.len == sizeof rep && rep.h.status == 0, "second alloc_pd");
  rm.pd = rep.handle;
  check(raw_call(s, &rm, sizeof rm, fd) == EPERM, "an unsealed memfd is not refused with EPERM");
  rm.iova = ~uint64_t(0) - 100;  // the region's end past 2^64
  check(raw_call(s, &rm, sizeof rm, fd) == EINVAL, "an IOVA range that wraps is not EINVAL");
  rm.iova = rm.addr;
  check(raw_call(s, &rm, sizeof rm) == EINVAL, "reg_mr without a memfd is not EINVAL");
  // A header whose size disagrees with the datagram ends the client.
  daemon::HandleReq lie{{daemon::Op::dealloc_pd, 999}, 1};
  check(raw_call(s, &lie, sizeof lie) == -1, "a lying header size did not end the client");
  close(s);
  close(fd);
}

// post_send_all posts a chain whole or not at all.
void check_post_send_all(Side& a, const Info& b) {
  std::vector<ibv_sge> sges(65, ibv_sge{reinterpret_cast<uintptr_t>(a.buf), 64, a.mr->lkey()});
  std::vector<SendWr> chain(65);
  for (size_t i = 0; i < chain.size(); ++i) {
    chain[i].wr_id = 1000 + i;
    chain[i].sg_list = &sges[i];
    chain[i].num_sge = 1;
    chain[i].opcode = IBV_WR_RDMA_WRITE;
    chain[i].send_flags = IBV_SEND_SIGNALED;
    chain[i].wr.rdma = {b.addr, b.rkey};
    chain[i].next = i + 1 < chain.size() ? &chain[i + 1] : nullptr;
  }
  const SendWr* bad = nullptr;
  // 65 WRs on a 64-slot send queue: none goes.
  check(a.qp->post_send_all(&chain[0], &bad) == ENOMEM && bad == &chain[0], "post_send_all of 65 WRs is not ENOMEM");
  // The third WR has too many SGEs: none goes.
  chain[3].next = nullptr;
  chain[2].num_sge = 3;
  check(a.qp->post_send_all(&chain[0], &bad) == EINVAL && bad == &chain[2], "post_send_all: the bad WR is not named");
  ibv_wc wc{};
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  check(a.cq->poll(1, &wc) == 0, "a refused post_send_all posted something");
  chain[2].num_sge = 1;
  check(a.qp->post_send_all(&chain[0], &bad) == 0, "post_send_all of 4 WRs");
  for (uint64_t i = 0; i < 4; ++i) {
    const ibv_wc w = a.expect(IBV_WC_SUCCESS, "post_send_all's WRITE");
    check(w.wr_id == 1000 + i, "post_send_all's completions are out of order");
  }
}

// A raw request whose whole reply (and descriptors) the caller keeps.
template <typename Rep>
Rep raw_rpc(int sock, const void* req, size_t len, daemon::Received* fds = nullptr) {
  check(daemon::send_datagram(sock, req, len, nullptr, 0) == 0, "raw send");
  Rep rep{};
  daemon::Received r = daemon::recv_datagram(sock, &rep, sizeof rep);
  check(r.len == ssize_t(sizeof rep), "raw reply of the wrong size");
  if (fds != nullptr)
    *fds = r;
  else
    daemon::close_fds(r);
  return rep;
}

size_t open_fds(pid_t pid) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) n += e.exists() ? 1 : 0;
  return n;
}

// Regions the daemon made, allocated and freed many times: the daemon
// keeps no descriptor of them (a client cannot make it run out).
void check_no_fd_leak() {
  const int s = raw_socket();
  ucred peer{};
  socklen_t len = sizeof peer;
  check(getsockopt(s, SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0, "SO_PEERCRED");
  close(s);
  std::string error;
  auto conn = Connection::connect(g_socket, error);
  check(conn != nullptr, "connect: " + error);
  int err = 0;
  auto pd = conn->alloc_pd(err);
  check(pd != nullptr, "alloc_pd");
  const size_t before = open_fds(peer.pid);
  for (int i = 0; i < 32; ++i) {
    auto mr = pd->alloc_mr(4096, IBV_ACCESS_LOCAL_WRITE, err);
    check(mr != nullptr, "alloc_mr " + std::to_string(err));
    check(pd->dereg_mr(mr) == 0, "dereg_mr");
  }
  const size_t after = open_fds(peer.pid);
  check(after <= before + 2, "the daemon holds " + std::to_string(after - before) +
                                 " more descriptors after 32 alloc_mr/dereg_mr");
}

// A client that speaks the protocol by hand: HELLO done, its arena mapped.
struct RawClient {
  int s = raw_socket();
  daemon::Received fds;
  daemon::HelloRep hello{};
  uint8_t* arena = nullptr;
  int doorbell = -1;
  RawClient() {
    daemon::HelloReq h{{daemon::Op::hello, sizeof(daemon::HelloReq)}, daemon::kMagic, daemon::kVersion};
    hello = raw_rpc<daemon::HelloRep>(s, &h, sizeof h, &fds);
    check(hello.h.status == 0 && fds.nfds == 3, "raw HELLO");
    arena = static_cast<uint8_t*>(mmap(nullptr, hello.arena_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fds.fds[0], 0));
    check(arena != MAP_FAILED, "map the arena");
    doorbell = fds.fds[1];
  }
  ~RawClient() {
    munmap(arena, hello.arena_bytes);
    daemon::close_fds(fds);
    if (s >= 0) close(s);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;
};

// A client that writes its rings by hand: refused WQEs whose completions it
// never polls, then a producer index beyond the ring.
void check_hostile_rings() {
  RawClient raw;
  const int s = raw.s;
  uint8_t* const arena = raw.arena;
  const int doorbell = raw.doorbell;
  daemon::AllocPdReq pdq{{daemon::Op::alloc_pd, sizeof(daemon::AllocPdReq)}};
  const auto pd = raw_rpc<daemon::HandleRep>(s, &pdq, sizeof pdq);
  daemon::CreateCqReq cqq{{daemon::Op::create_cq, sizeof(daemon::CreateCqReq)}, 16, 0};
  const auto cq = raw_rpc<daemon::CreateCqRep>(s, &cqq, sizeof cqq);
  daemon::CreateQpReq qpq{{daemon::Op::create_qp, sizeof(daemon::CreateQpReq)}, pd.handle, cq.cq, cq.cq,
                          IBV_QPT_RC, 16, 16, 1, 1, 0, 0, 0};
  const auto qp = raw_rpc<daemon::CreateQpRep>(s, &qpq, sizeof qpq);
  check(pd.h.status == 0 && cq.h.status == 0 && qp.h.status == 0, "raw PD, CQ and QP");
  auto* sq = reinterpret_cast<daemon::RingHeader*>(arena + qp.sq_offset);
  auto* slots = daemon::ring_slots<daemon::SendSlot>(sq);
  // WQEs with an lkey that is nobody's, posted as fast as the ring takes
  // them, for a second: each is refused, and the daemon keeps the
  // refusals only while there is room for them (CQ ring, then a ring's
  // worth more), so it soon stops taking them.
  uint32_t producer = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() < until) {
    if (producer - sq->consumer.value.load(std::memory_order_acquire) < qp.sq_entries) {
      daemon::SendSlot& w = slots[producer & (qp.sq_entries - 1)];
      w = daemon::SendSlot{};
      w.wr_id = producer;
      w.opcode = IBV_WR_SEND;
      w.num_sge = 1;
      w.sge[0] = ibv_sge{0x1000, 8, 0xdead};
      sq->producer.value.store(++producer, std::memory_order_release);
    }
    const uint64_t one = 1;
    (void)!write(doorbell, &one, sizeof one);
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  const uint32_t taken = sq->consumer.value.load(std::memory_order_acquire);
  check(taken >= cq.entries && taken <= 2 * cq.entries + qp.sq_entries,
        "the daemon took " + std::to_string(taken) + " refused WQEs for a CQ of " + std::to_string(cq.entries));
  // A producer index more than a ring ahead: the daemon ends this client
  // (its socket closes) and goes on serving others.
  sq->producer.value.store(sq->consumer.value.load() + qp.sq_entries + 5, std::memory_order_release);
  const uint64_t one = 1;
  (void)!write(doorbell, &one, sizeof one);
  check(readable(s, 2000), "the daemon did not end a client whose producer index ran past its ring");
  char c;
  check(recv(s, &c, 1, 0) == 0, "the daemon's socket did not close");
  std::string error;
  check(Connection::connect(g_socket, error) != nullptr, "the daemon serves no one after a hostile client: " + error);
}

// A raw client's UD QP brought to RTS by hand, with its own qkey.
uint32_t raw_ud_qp(int s, uint32_t pd, uint32_t cq, daemon::CreateQpRep& qp) {
  daemon::CreateQpReq qpq{{daemon::Op::create_qp, sizeof(daemon::CreateQpReq)}, pd, cq, cq,
                          IBV_QPT_UD, 64, 16, 1, 1, 64, 1, 0};
  qp = raw_rpc<daemon::CreateQpRep>(s, &qpq, sizeof qpq);
  check(qp.h.status == 0, "raw UD QP " + std::to_string(qp.h.status));
  auto m = daemon::make_message<daemon::ModifyQpReq>(daemon::Op::modify_qp);
  m.qp = qp.qp;
  m.attr.qp_state = IBV_QPS_INIT;
  m.attr.port_num = 1;
  m.attr.qkey = 0x1111;
  m.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
  check(raw_call(s, &m, sizeof m) == 0, "UD INIT");
  m.attr.qp_state = IBV_QPS_RTR;
  m.attr_mask = IBV_QP_STATE;
  check(raw_call(s, &m, sizeof m) == 0, "UD RTR");
  m.attr.qp_state = IBV_QPS_RTS;
  m.attr.sq_psn = 1;
  m.attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  check(raw_call(s, &m, sizeof m) == 0, "UD RTS");
  return qp.qpn;
}

// Completions of a raw CQ ring, waited for.
std::vector<ibv_wc> raw_poll(daemon::RingHeader* ring, uint32_t entries, uint32_t& consumer, size_t want, int doorbell) {
  std::vector<ibv_wc> got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (got.size() < want && std::chrono::steady_clock::now() < until) {
    const uint64_t one = 1;
    (void)!write(doorbell, &one, sizeof one);
    while (consumer != ring->producer.value.load(std::memory_order_acquire) && got.size() < want)
      got.push_back(daemon::ring_slots<ibv_wc>(ring)[consumer++ & (entries - 1)]);
    ring->consumer.value.store(consumer, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return got;
}

// UD through raw rings: an address handle that is nobody's, one of
// another PD, and handles destroyed right after the sends that name them
// were posted (the engine copies the destination when it takes a WR).
void check_hostile_ud() {
  RawClient raw;
  const int s = raw.s;
  uint8_t* const arena = raw.arena;
  const int doorbell = raw.doorbell;
  const daemon::HelloRep& hello = raw.hello;
  daemon::AllocPdReq pdq{{daemon::Op::alloc_pd, sizeof(daemon::AllocPdReq)}};
  const auto pd = raw_rpc<daemon::HandleRep>(s, &pdq, sizeof pdq);
  const auto pd2 = raw_rpc<daemon::HandleRep>(s, &pdq, sizeof pdq);
  daemon::CreateCqReq cqq{{daemon::Op::create_cq, sizeof(daemon::CreateCqReq)}, 256, 0};
  const auto cq = raw_rpc<daemon::CreateCqRep>(s, &cqq, sizeof cqq);
  check(pd.h.status == 0 && pd2.h.status == 0 && cq.h.status == 0, "raw PDs and CQ");
  auto* cq_ring = reinterpret_cast<daemon::RingHeader*>(arena + cq.ring_offset);
  uint32_t cq_consumer = 0;
  auto ah_req = daemon::make_message<daemon::CreateAhReq>(daemon::Op::create_ah);
  ah_req.attr.port_num = 1;
  ah_req.attr.grh.sgid_index = 1;
  std::memcpy(ah_req.attr.grh.dgid.raw, hello.gid, 16);
  ah_req.pd = pd.handle;
  check(raw_call(s, &ah_req, sizeof ah_req) == EINVAL, "an address handle without a global route");
  ah_req.attr.is_global = 1;
  ah_req.pd = 9999;
  check(raw_call(s, &ah_req, sizeof ah_req) == EINVAL, "an address handle on a PD that is nobody's");
  ah_req.pd = pd2.handle;
  const auto other = raw_rpc<daemon::HandleRep>(s, &ah_req, sizeof ah_req);
  check(other.h.status == 0, "an address handle " + std::to_string(other.h.status));
  daemon::HandleReq bogus{{daemon::Op::destroy_ah, sizeof(daemon::HandleReq)}, 12345};
  check(raw_call(s, &bogus, sizeof bogus) == EINVAL, "destroy_ah of a handle that is nobody's");
  // One WQE per refused case, each on a fresh QP (a refusal ends the QP).
  for (const uint32_t ah : {12345u, other.handle}) {
    daemon::CreateQpRep qp;
    const uint32_t qpn = raw_ud_qp(s, pd.handle, cq.cq, qp);
    auto* sq = reinterpret_cast<daemon::RingHeader*>(arena + qp.sq_offset);
    daemon::SendSlot& w = daemon::ring_slots<daemon::SendSlot>(sq)[0];
    w = daemon::SendSlot{};
    w.wr_id = ah;
    w.opcode = IBV_WR_SEND;
    w.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    w.inline_len = 8;
    w.ah = ah;
    w.remote_qpn = qpn;
    w.remote_qkey = 0x1111;
    sq->producer.value.store(1, std::memory_order_release);
    const auto wc = raw_poll(cq_ring, cq.entries, cq_consumer, 1, doorbell);
    check(wc.size() == 1 && wc[0].wr_id == ah && wc[0].status == IBV_WC_LOC_QP_OP_ERR,
          ah == other.handle ? "a UD send with another PD's address handle was not refused"
                             : "a UD send with an address handle that is nobody's was not refused");
  }
  // 100 rounds of: a handle, 16 signalled sends to this client's own QP
  // naming it, the handle destroyed at once.
  daemon::CreateQpRep qp;
  const uint32_t qpn = raw_ud_qp(s, pd.handle, cq.cq, qp);
  auto* sq = reinterpret_cast<daemon::RingHeader*>(arena + qp.sq_offset);
  uint32_t producer = 0;
  ah_req.pd = pd.handle;
  for (int round = 0; round < 100; ++round) {
    const auto ah = raw_rpc<daemon::HandleRep>(s, &ah_req, sizeof ah_req);
    check(ah.h.status == 0, "create_ah " + std::to_string(ah.h.status));
    for (int i = 0; i < 16; ++i) {
      daemon::SendSlot& w = daemon::ring_slots<daemon::SendSlot>(sq)[producer & (qp.sq_entries - 1)];
      w = daemon::SendSlot{};
      w.wr_id = producer;
      w.opcode = IBV_WR_SEND;
      w.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
      w.inline_len = 8;
      w.ah = ah.handle;
      w.remote_qpn = qpn;
      w.remote_qkey = 0x1111;
      ++producer;
    }
    sq->producer.value.store(producer, std::memory_order_release);
    const uint64_t one = 1;
    (void)!write(doorbell, &one, sizeof one);
    daemon::HandleReq d{{daemon::Op::destroy_ah, sizeof(daemon::HandleReq)}, ah.handle};
    check(raw_call(s, &d, sizeof d) == 0, "destroy_ah");
    const auto wc = raw_poll(cq_ring, cq.entries, cq_consumer, 16, doorbell);
    check(wc.size() == 16, "round " + std::to_string(round) + ": " + std::to_string(wc.size()) + " of 16 completions");
    for (const ibv_wc& c : wc)
      check(c.status == IBV_WC_SUCCESS || c.status == IBV_WC_LOC_QP_OP_ERR,
            std::string("a send whose address handle went: ") + ibv_wc_status_str(c.status));
  }
  std::string error;
  check(Connection::connect(g_socket, error) != nullptr, "the daemon serves no one after the UD checks: " + error);
}

// A raw client's RC QP connected to itself (loopback in the engine) and
// brought to RTS by hand: remote access through its own keys.
daemon::CreateQpRep raw_rc_self_qp(const RawClient& raw, uint32_t pd, uint32_t cq) {
  daemon::CreateQpReq qpq{{daemon::Op::create_qp, sizeof(daemon::CreateQpReq)}, pd, cq, cq,
                          IBV_QPT_RC, 16, 16, 1, 1, 0, 0, 0};
  const auto qp = raw_rpc<daemon::CreateQpRep>(raw.s, &qpq, sizeof qpq);
  check(qp.h.status == 0, "raw RC QP " + std::to_string(qp.h.status));
  auto m = daemon::make_message<daemon::ModifyQpReq>(daemon::Op::modify_qp);
  m.qp = qp.qp;
  m.attr.qp_state = IBV_QPS_INIT;
  m.attr.port_num = 1;
  m.attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  m.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  check(raw_call(raw.s, &m, sizeof m) == 0, "RC INIT");
  m.attr.qp_state = IBV_QPS_RTR;
  m.attr.path_mtu = IBV_MTU_1024;
  m.attr.dest_qp_num = qp.qpn;
  m.attr.rq_psn = 1;
  m.attr.max_dest_rd_atomic = 1;
  m.attr.min_rnr_timer = 1;
  m.attr.ah_attr.is_global = 1;
  m.attr.ah_attr.port_num = 1;
  m.attr.ah_attr.grh.sgid_index = 1;
  m.attr.ah_attr.grh.hop_limit = 64;
  std::memcpy(m.attr.ah_attr.grh.dgid.raw, raw.hello.gid, 16);
  m.attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  check(raw_call(raw.s, &m, sizeof m) == 0, "RC RTR");
  m.attr.qp_state = IBV_QPS_RTS;
  m.attr.sq_psn = 1;
  m.attr.timeout = 14;
  m.attr.retry_cnt = 7;
  m.attr.rnr_retry = 7;
  m.attr.max_rd_atomic = 1;
  m.attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                IBV_QP_MAX_QP_RD_ATOMIC;
  check(raw_call(raw.s, &m, sizeof m) == 0, "RC RTS");
  return qp;
}

// One raw client's PD, CQ, region and a type 2 window, and the work it
// posts by hand on fresh self-connected QPs.
struct RawMwClient {
  RawClient raw;
  daemon::HandleRep pd{};
  daemon::CreateCqRep cq{};
  daemon::MrRep mr{};
  daemon::MwRep mw{};
  uint32_t cq_consumer = 0;
  RawMwClient() {
    daemon::AllocPdReq pdq{{daemon::Op::alloc_pd, sizeof(daemon::AllocPdReq)}};
    pd = raw_rpc<daemon::HandleRep>(raw.s, &pdq, sizeof pdq);
    daemon::CreateCqReq cqq{{daemon::Op::create_cq, sizeof(daemon::CreateCqReq)}, 64, 0};
    cq = raw_rpc<daemon::CreateCqRep>(raw.s, &cqq, sizeof cqq);
    daemon::AllocMrReq mrq{{daemon::Op::alloc_mr, sizeof(daemon::AllocMrReq)}, pd.handle,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND, 8192};
    mr = raw_rpc<daemon::MrRep>(raw.s, &mrq, sizeof mrq);  // the daemon's memory: written, never read here
    mw = alloc(IBV_MW_TYPE_2);
    check(pd.h.status == 0 && cq.h.status == 0 && mr.h.status == 0 && mw.h.status == 0,
          "raw PD, CQ, region and window");
  }
  daemon::MwRep alloc(uint32_t type, uint32_t in_pd = 0) {
    daemon::AllocMwReq q{{daemon::Op::alloc_mw, sizeof(daemon::AllocMwReq)}, in_pd ? in_pd : pd.handle, type};
    return raw_rpc<daemon::MwRep>(raw.s, &q, sizeof q);
  }
  // Posts one slot on a fresh QP and returns its completion.
  ibv_wc post(const daemon::SendSlot& slot) {
    const auto qp = raw_rc_self_qp(raw, pd.handle, cq.cq);
    auto* sq = reinterpret_cast<daemon::RingHeader*>(raw.arena + qp.sq_offset);
    daemon::ring_slots<daemon::SendSlot>(sq)[0] = slot;
    sq->producer.value.store(1, std::memory_order_release);
    auto* cq_ring = reinterpret_cast<daemon::RingHeader*>(raw.arena + cq.ring_offset);
    const auto wc = raw_poll(cq_ring, cq.entries, cq_consumer, 1, raw.doorbell);
    check(wc.size() == 1, "no completion for a raw WQE");
    return wc[0];
  }
  daemon::SendSlot bind(uint32_t window_rkey, uint32_t region_lkey) const {
    daemon::SendSlot w{};
    w.wr_id = 1;
    w.opcode = IBV_WR_BIND_MW;
    w.send_flags = IBV_SEND_SIGNALED;
    w.rkey = window_rkey;
    w.remote_qpn = region_lkey;
    w.remote_addr = mr.addr;
    w.compare_add = 4096;
    w.remote_qkey = IBV_ACCESS_REMOTE_WRITE;
    return w;
  }
};

// Memory windows through raw rings: binds that name another client's
// window or region are refused; another client's invalidation of a bound
// window fails, and the window still lets its owner's QP write.
void check_hostile_mw() {
  RawMwClient x, y;
  // Handles are per client: a number x never got names nothing of x's.
  daemon::HandleReq other{{daemon::Op::dealloc_mw, sizeof(daemon::HandleReq)}, 9999};
  check(raw_call(x.raw.s, &other, sizeof other) == EINVAL, "dealloc_mw of a handle that is nobody's");
  check(x.alloc(3).h.status == EINVAL, "alloc_mw of a type that is not 1 or 2");
  check(x.alloc(IBV_MW_TYPE_1, 9999).h.status == EINVAL, "alloc_mw in a PD that is nobody's");
  // y binds its window on its QP (a type 2 window: accesses through that QP only).
  const uint32_t yk = (y.mw.rkey & ~0xFFu) | ((y.mw.rkey + 1) & 0xFFu);
  const auto y_qp = raw_rc_self_qp(y.raw, y.pd.handle, y.cq.cq);
  auto* y_sq = reinterpret_cast<daemon::RingHeader*>(y.raw.arena + y_qp.sq_offset);
  auto* y_cq = reinterpret_cast<daemon::RingHeader*>(y.raw.arena + y.cq.ring_offset);
  auto post_y = [&](const daemon::SendSlot& slot, uint32_t& producer) {
    daemon::ring_slots<daemon::SendSlot>(y_sq)[producer++ & (y_qp.sq_entries - 1)] = slot;
    y_sq->producer.value.store(producer, std::memory_order_release);
    const auto wc = raw_poll(y_cq, y.cq.entries, y.cq_consumer, 1, y.raw.doorbell);
    check(wc.size() == 1, "no completion for the window's owner");
    return wc[0];
  };
  uint32_t y_producer = 0;
  ibv_wc wc = post_y(y.bind(yk, y.mr.key), y_producer);
  check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW,
        std::string("the owner's bind: ") + ibv_wc_status_str(wc.status));
  // x names y's window, and y's region, in binds: refused before the engine.
  wc = x.post(x.bind(yk, x.mr.key));
  check(wc.status == IBV_WC_MW_BIND_ERR, std::string("a bind of another client's window: ") + ibv_wc_status_str(wc.status));
  const uint32_t xk = (x.mw.rkey & ~0xFFu) | ((x.mw.rkey + 1) & 0xFFu);
  wc = x.post(x.bind(xk, y.mr.key));
  check(wc.status == IBV_WC_MW_BIND_ERR, std::string("a bind to another client's region: ") + ibv_wc_status_str(wc.status));
  wc = x.post(x.bind(0x12345600u, x.mr.key));
  check(wc.status == IBV_WC_MW_BIND_ERR, std::string("a bind of a window that is nobody's: ") + ibv_wc_status_str(wc.status));
  // x invalidates y's bound window by its rkey: another PD's, so it fails.
  daemon::SendSlot inv{};
  inv.wr_id = 2;
  inv.opcode = IBV_WR_LOCAL_INV;
  inv.send_flags = IBV_SEND_SIGNALED;
  inv.imm_data = yk;
  wc = x.post(inv);
  check(wc.status == IBV_WC_LOC_QP_OP_ERR, std::string("a local invalidation of another client's window: ") +
                                               ibv_wc_status_str(wc.status));
  // x's own bind works (the refusals above were for the names, not binds as such).
  wc = x.post(x.bind(xk, x.mr.key));
  check(wc.status == IBV_WC_SUCCESS, std::string("a client's bind of its own window: ") + ibv_wc_status_str(wc.status));
  // The region with x's window bound: ibv_dereg_mr's EINVAL; a region's
  // destructor (kDeregUnbind) unbinds the window and deregisters.
  daemon::HandleReq dereg{{daemon::Op::dereg_mr, sizeof(daemon::HandleReq)}, x.mr.mr};
  check(raw_call(x.raw.s, &dereg, sizeof dereg) == EINVAL, "dereg_mr of a region with a window bound");
  dereg.flags = daemon::kDeregUnbind;
  check(raw_call(x.raw.s, &dereg, sizeof dereg) == 0, "dereg_mr from a destructor, a window bound");
  check(raw_call(x.raw.s, &dereg, sizeof dereg) == EINVAL, "the region is still there");
  // y's window is still bound: y writes through it.
  daemon::SendSlot write{};
  write.wr_id = 3;
  write.opcode = IBV_WR_RDMA_WRITE;
  write.send_flags = IBV_SEND_SIGNALED;
  write.num_sge = 1;
  write.sge[0] = ibv_sge{y.mr.addr + 4096, 64, y.mr.key};
  write.remote_addr = y.mr.addr + 128;
  write.rkey = yk;
  wc = post_y(write, y_producer);
  check(wc.status == IBV_WC_SUCCESS, std::string("a WRITE through the window after another client's invalidation: ") +
                                         ibv_wc_status_str(wc.status));
  // y invalidates it itself: the key then fails.
  inv.imm_data = yk;
  wc = post_y(inv, y_producer);
  check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV,
        std::string("the owner's invalidation: ") + ibv_wc_status_str(wc.status));
  // The QP is its own responder: the responder's access error moves the
  // QP to error, which may flush the WRITE before the NAK completes it.
  wc = post_y(write, y_producer);
  check(wc.status == IBV_WC_REM_ACCESS_ERR || wc.status == IBV_WC_WR_FLUSH_ERR,
        std::string("a WRITE through an invalidated window: ") + ibv_wc_status_str(wc.status));
  daemon::HandleReq mine{{daemon::Op::dealloc_mw, sizeof(daemon::HandleReq)}, y.mw.mw};
  check(raw_call(y.raw.s, &mine, sizeof mine) == 0, "dealloc_mw");
  check(raw_call(y.raw.s, &mine, sizeof mine) == EINVAL, "a second dealloc_mw of one window");
}

// The next connection-manager event of a client of type `type`
// (uroce::cm::EventType: 0 connect_request, 1 established), within 3 s.
daemon::CmEventRep cm_event(Connection& conn, uint32_t type) {
  for (int i = 0; i < 3000; ++i) {
    auto req = daemon::make_message<daemon::AllocPdReq>(daemon::Op::cm_get_event);
    daemon::CmEventRep rep{};
    const int err = conn.call(&req, sizeof req, &rep, sizeof rep);
    if (err == 0 && rep.type == type) return rep;
    check(err == 0 || err == EAGAIN, "cm_get_event " + std::to_string(err));
    if (err == EAGAIN) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  check(false, "no connection-manager event of type " + std::to_string(type) + " in 3 s");
  return {};
}

int cm_open(Connection& conn) {
  auto req = daemon::make_message<daemon::AllocPdReq>(daemon::Op::cm_open);
  daemon::HandleRep rep{};
  int fd = -1;
  check(conn.call(&req, sizeof req, &rep, sizeof rep, -1, &fd) == 0 && fd >= 0, "cm_open");
  return fd;
}

// A SIDR reply names the QP of the handle the client gave, whatever QP
// number it sends beside it: a forged accept cannot send a peer to
// another client's QP.
void check_hostile_sidr() {
  Side listener, victim, asker;
  listener.open(4096, false);
  victim.open(4096, false);
  asker.open(4096, false);
  const int lfd = cm_open(*listener.conn), afd = cm_open(*asker.conn);
  auto listen = daemon::make_message<daemon::CmListenReq>(daemon::Op::cm_listen);
  listen.port = 7100;
  listen.ud = 1;
  listen.on = 1;
  daemon::HandleRep hrep{};
  check(listener.conn->call(&listen, sizeof listen, &hrep, sizeof hrep) == 0, "cm_listen (UD)");
  auto connect = daemon::make_message<daemon::CmConnectReq>(daemon::Op::cm_connect);
  connect.ud = 1;
  connect.port = 7100;
  std::memcpy(connect.peer, listener.conn->gid(), 16);
  daemon::CmIdRep idrep{};
  check(asker.conn->call(&connect, sizeof connect, &idrep, sizeof idrep) == 0, "cm_connect (SIDR REQ)");
  const daemon::CmEventRep req = cm_event(*listener.conn, 0);
  auto accept = daemon::make_message<daemon::CmAcceptReq>(daemon::Op::cm_accept);
  accept.id = req.id;
  accept.ud = 1;
  accept.qp = listener.qp->handle();
  accept.qpn = victim.qp->qp_num();  // forged: another client's QP
  accept.qkey = 0x1234;
  check(listener.conn->call(&accept, sizeof accept, &hrep, sizeof hrep) == 0, "cm_accept (SIDR REP)");
  const daemon::CmEventRep rep = cm_event(*asker.conn, 1);
  check(rep.peer_qpn != victim.qp->qp_num(), "a forged SIDR reply offered another client's QP");
  check(rep.peer_qpn == listener.qp->qp_num(),
        "the SIDR reply offered QP " + std::to_string(rep.peer_qpn) + ", not the one named by handle");
  close(lfd);
  close(afd);
}

int run_isolation() {
  int sp[2];
  check(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0, "socketpair");
  const pid_t child = spawn([&] {
    close(sp[0]);
    Side b;
    b.open(kBytes, false);
    send_info(sp[1], b.info());
    b.connect_to(recv_info(sp[1]));
    sync_send(sp[1]);
    sync_wait(sp[1]);  // until the other side is done
  });
  close(sp[1]);
  Side a;
  a.open(kBytes, false);
  const Info b = recv_info(sp[0]);
  send_info(sp[0], a.info());
  a.connect_to(b);
  sync_wait(sp[0]);
  check_post_send_all(a, b);
  // A WRITE that runs past the peer's region: a remote access error.
  a.post(IBV_WR_RDMA_WRITE, 0, 64, b, kBytes - 32);
  a.expect(IBV_WC_REM_ACCESS_ERR, "a WRITE past the peer's region");
  // B's lkey on B's addresses, posted by A: not one of A's regions. The
  // daemon refuses it before the engine sees it, whatever the QP's state.
  ibv_sge sge{b.addr, 64, b.lkey};
  SendWr wr;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma = {b.addr, b.rkey};
  const SendWr* bad = nullptr;
  check(a.qp->post_send(&wr, &bad) == 0, "post");
  a.expect(IBV_WC_LOC_PROT_ERR, "another client's lkey");
  sync_send(sp[0]);
  check(child_ok(child), "the other client failed");
  check_protocol();
  check_no_fd_leak();
  check_hostile_rings();
  check_hostile_ud();
  check_hostile_mw();
  check_hostile_sidr();
  std::printf("isolation: foreign lkey, bad remote range, malformed requests and rings refused; "
              "UD sends with foreign address handles refused, handles destroyed under posted sends; "
              "binds of foreign windows and regions refused, foreign invalidations failed; "
              "a forged SIDR reply names the client's own QP\n");
  return 0;
}

int run_fork() {
  std::string error;
  auto conn = Connection::connect(g_socket, error);
  check(conn != nullptr, "connect: " + error);
  int err = 0;
  auto pd = conn->alloc_pd(err);
  check(pd != nullptr, "alloc_pd");
  // Three heap objects side by side; the middle one is registered.
  auto* block = static_cast<uint8_t*>(std::malloc(3 * 1000));
  std::memset(block, 'a', 1000);
  std::memset(block + 1000, 'b', 1000);
  std::memset(block + 2000, 'c', 1000);
  auto mr = pd->reg_mr(block + 1000, 1000, IBV_ACCESS_LOCAL_WRITE, err);
  check(mr != nullptr, "reg_mr " + std::to_string(err));
  check(block[0] == 'a' && block[999] == 'a' && block[1000] == 'b' && block[2999] == 'c',
        "registration changed the bytes");
  const pid_t child = spawn([&] {
    std::memset(block, 'X', 3000);  // the child's copy only
  });
  check(child_ok(child), "child");
  check(block[0] == 'a' && block[1500] == 'b' && block[2999] == 'c', "a forked child's writes reached the parent");
  block[0] = 'A';
  check(pd->dereg_mr(mr) == 0, "dereg_mr");
  check(block[0] == 'A' && block[1500] == 'b', "deregistration lost the bytes");
  const pid_t child2 = spawn([&] { block[1] = 'Y'; });
  check(child_ok(child2) && block[1] == 'a', "private again after dereg");
  // Two registrations in one page (two fields of a struct, as rping's
  // buffers): the second shares the first's pages again; the pages stay
  // shared until both are gone.
  auto first = pd->reg_mr(block, 500, IBV_ACCESS_LOCAL_WRITE, err);
  check(first != nullptr, "reg_mr of a first buffer " + std::to_string(err));
  auto second = pd->reg_mr(block + 500, 500, IBV_ACCESS_LOCAL_WRITE, err);
  check(second != nullptr, "reg_mr of a second buffer in the same page " + std::to_string(err));
  check(first->lkey() != second->lkey(), "two registrations have one key");
  // One that reaches past those pages: their range and new pages, side by side.
  const long page = sysconf(_SC_PAGESIZE);
  auto* big = static_cast<uint8_t*>(std::malloc(size_t(3 * page)));
  std::memset(big, 'g', size_t(3 * page));
  auto head = pd->reg_mr(big, 100, IBV_ACCESS_LOCAL_WRITE, err);
  check(head != nullptr, "reg_mr at the start of a block " + std::to_string(err));
  auto across = pd->reg_mr(big + 50, size_t(2 * page), IBV_ACCESS_LOCAL_WRITE, err);
  check(across != nullptr, "reg_mr across a shared range and new pages " + std::to_string(err));
  check(pd->dereg_mr(head) == 0 && big[0] == 'g' && big[2 * page] == 'g', "dereg_mr of the first of two ranges");
  big[page] = 'h';
  check(pd->dereg_mr(across) == 0 && big[page] == 'h' && big[3 * page - 1] == 'g', "dereg_mr across two ranges");
  std::free(big);
  check(pd->dereg_mr(first) == 0, "dereg_mr of the first");
  const pid_t child3 = spawn([&] { block[2] = 'Z'; });
  check(child_ok(child3) && block[2] == 'a', "a forked child shares the pages the second still registers");
  block[3] = 'D';
  check(pd->dereg_mr(second) == 0, "dereg_mr of the second");
  check(block[3] == 'D' && block[1500] == 'b', "the last deregistration lost the bytes");
  // A program's own data (a private file mapping): registered as heap is.
  static uint8_t in_bss[256];
  in_bss[7] = 'q';
  auto bss_mr = pd->reg_mr(in_bss, sizeof in_bss, IBV_ACCESS_LOCAL_WRITE, err);
  check(bss_mr != nullptr && in_bss[7] == 'q', "reg_mr of a static buffer " + std::to_string(err));
  check(pd->dereg_mr(bss_mr) == 0 && in_bss[7] == 'q', "dereg_mr of a static buffer");
  // Registering a range that is not private memory: refused.
  auto stack_mr = pd->reg_mr(&err, sizeof err, IBV_ACCESS_LOCAL_WRITE, err);
  check(stack_mr == nullptr && err == EINVAL, "the stack was registered");
  std::free(block);
  std::printf("fork: neighbours intact, a child writes its own copy\n");
  return 0;
}

// Each [limits] quota of the config case's daemon (max_pd 2, max_cq 3,
// max_qp 1, max_mr 3, max_mr_bytes 4 pages, arena_bytes 64 KiB) refuses
// the object past it with ENOMEM, gives the room back when an object
// goes, and holds per client.
// err by reference: read after the call in the first argument has set it.
void expect_enomem(bool refused, const int& err, const std::string& what) {
  check(refused && err == ENOMEM, what + " was not refused with ENOMEM (err " + std::to_string(err) + ")");
}

void quota_objects(Side& a) {
  int err = 0;
  client::QpInitAttr attr;
  attr.send_cq = attr.recv_cq = a.cq.get();
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
  expect_enomem(a.pd->create_qp(attr, err) == nullptr, err, "a second QP (max_qp)");
  auto pd2 = a.conn->alloc_pd(err);
  check(pd2 != nullptr, "a second PD " + std::to_string(err));
  expect_enomem(a.conn->alloc_pd(err) == nullptr, err, "a third PD (max_pd)");
  pd2.reset();
  check(a.conn->alloc_pd(err) != nullptr, "a PD after one was freed " + std::to_string(err));
  // Open's CQ and QP rings leave less than 48 KiB of the arena: a 1024-entry
  // CQ does not fit, while the count would allow it.
  expect_enomem(a.conn->create_cq(1024, err) == nullptr, err, "a CQ larger than the arena's room (arena_bytes)");
  auto cq2 = a.conn->create_cq(16, err);
  auto cq3 = a.conn->create_cq(16, err);
  check(cq2 != nullptr && cq3 != nullptr, "two small CQs " + std::to_string(err));
  expect_enomem(a.conn->create_cq(16, err) == nullptr, err, "a fourth CQ (max_cq)");
  {  // completion channels: a count of their own, with the same bound
    std::vector<std::unique_ptr<client::CompletionChannel>> chans;
    for (int i = 0; i < 3; ++i) {
      chans.push_back(a.conn->create_comp_channel(err));
      check(chans.back() != nullptr, "completion channel " + std::to_string(i + 1) + " " + std::to_string(err));
    }
    expect_enomem(a.conn->create_comp_channel(err) == nullptr, err, "a fourth completion channel (max_cq)");
  }
  cq3.reset();
  check(a.conn->create_cq(16, err) != nullptr, "a CQ after one was destroyed " + std::to_string(err));
  ibv_ah_attr ah{};
  ah.is_global = 1;
  ah.port_num = 1;
  ah.grh.sgid_index = 1;
  std::memcpy(ah.grh.dgid.raw, a.conn->gid(), 16);
  uint32_t h1 = 0, h2 = 0, h3 = 0;
  check(a.pd->create_ah(ah, h1) == 0 && a.pd->create_ah(ah, h2) == 0, "two address handles");
  err = a.pd->create_ah(ah, h3);
  expect_enomem(err != 0, err, "a third address handle (max_ah)");
  check(a.pd->destroy_ah(h2) == 0 && a.pd->destroy_ah(h2) == EINVAL, "destroy_ah, then again on the same handle");
  check(a.pd->create_ah(ah, h3) == 0, "an address handle after one was destroyed");
  check(a.conn->max_mw() == 2, "the daemon tells a client max_mw");
  uint32_t w1 = 0, w2 = 0, w3 = 0, rkey = 0;
  check(a.pd->alloc_mw(IBV_MW_TYPE_1, w1, rkey) == 0 && a.pd->alloc_mw(IBV_MW_TYPE_2, w2, rkey) == 0,
        "two memory windows");
  err = a.pd->alloc_mw(IBV_MW_TYPE_2, w3, rkey);
  expect_enomem(err != 0, err, "a third memory window (max_mw)");
  check(a.pd->dealloc_mw(w1) == 0 && a.pd->dealloc_mw(w1) == EINVAL, "dealloc_mw, then again on the same handle");
  check(a.pd->alloc_mw(IBV_MW_TYPE_1, w3, rkey) == 0, "a memory window after one was deallocated");
}

void quota_memory(Side& a) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const int access = IBV_ACCESS_LOCAL_WRITE;
  int err = 0;
  // Open's region holds one page: four more pages are past max_mr_bytes.
  expect_enomem(a.pd->alloc_mr(4 * page, access, err) == nullptr, err, "alloc_mr of 4 more pages (max_mr_bytes)");
  auto* heap = static_cast<uint8_t*>(std::malloc(5 * page));
  std::memset(heap, 'm', 5 * page);
  expect_enomem(a.pd->reg_mr(heap + 1, 4 * page, access, err) == nullptr, err, "reg_mr of 5 pages (max_mr_bytes)");
  check(heap[0] == 'm' && heap[5 * page - 1] == 'm', "a refused reg_mr changed the bytes");
  const pid_t child = spawn([&] { heap[0] = 'X'; });
  check(child_ok(child) && heap[0] == 'm', "a refused reg_mr left the pages shared");
  std::free(heap);
  auto mr2 = a.pd->alloc_mr(page, access, err);
  auto mr3 = a.pd->alloc_mr(page, access, err);
  check(mr2 != nullptr && mr3 != nullptr, "two one-page regions " + std::to_string(err));
  expect_enomem(a.pd->alloc_mr(page, access, err) == nullptr, err, "a fourth region (max_mr)");
  check(a.pd->dereg_mr(mr3) == 0, "dereg_mr");
  check(a.pd->alloc_mr(page, access, err) != nullptr, "a region after one was deregistered " + std::to_string(err));
}

int run_quota() {
  Side a;
  a.open(4096, false);
  quota_objects(a);
  quota_memory(a);
  Side b;
  b.open(4096, false);
  std::printf("quota: max_pd, max_cq, max_qp, max_mr, max_ah, max_mw, max_mr_bytes and arena_bytes refuse with ENOMEM, "
              "per client\n");
  return 0;
}

// A QP of the side's PD and CQ, beside its first.
std::unique_ptr<client::QueuePair> another_qp(Side& s) {
  client::QpInitAttr attr;
  attr.send_cq = attr.recv_cq = s.cq.get();
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
  int err = 0;
  auto qp = s.pd->create_qp(attr, err);
  check(qp != nullptr, "create_qp " + std::to_string(err));
  return qp;
}

// QP numbers are not handed out again right away, so a late packet for a
// destroyed QP finds no QP rather than someone else's: create, destroy,
// create gives another number, and the numbers of a client killed with
// SIGKILL are not the next client's.
int run_qpn() {
  constexpr int kQps = 8;
  Side a;
  a.open(4096, false);
  std::vector<uint32_t> used{a.qp->qp_num()};
  a.qp.reset();
  a.qp = another_qp(a);
  check(a.qp->qp_num() != used[0], "a destroyed QP's number came back at once");
  used.push_back(a.qp->qp_num());
  int sp[2];
  check(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0, "socketpair");
  const pid_t dead = spawn([&] {
    Side c;
    c.open(4096, false);
    std::vector<std::unique_ptr<client::QueuePair>> qps;
    for (int i = 1; i < kQps; ++i) qps.push_back(another_qp(c));
    std::vector<uint32_t> nums{c.qp->qp_num()};
    for (const auto& q : qps) nums.push_back(q->qp_num());
    check(write(sp[1], nums.data(), nums.size() * 4) == ssize_t(nums.size() * 4), "write the QPNs");
    pause();  // killed here
  });
  std::vector<uint32_t> theirs(kQps);
  check(read(sp[0], theirs.data(), theirs.size() * 4) == ssize_t(theirs.size() * 4), "read the QPNs");
  kill(dead, SIGKILL);
  waitpid(dead, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the daemon tears the client down
  used.insert(used.end(), theirs.begin(), theirs.end());
  Side d;
  d.open(4096, false);
  std::vector<std::unique_ptr<client::QueuePair>> qps;
  for (int i = 1; i < kQps; ++i) qps.push_back(another_qp(d));
  qps.push_back(std::move(d.qp));
  for (const auto& q : qps)
    check(std::find(used.begin(), used.end(), q->qp_num()) == used.end(),
          "QPN " + std::to_string(q->qp_num()) + " of a destroyed or dead client's QP was handed out again");
  std::printf("qpn: destroyed and dead clients' QP numbers are not reused by the next QPs\n");
  return 0;
}

// A client sleeping on a completion channel: an armed CQ wakes it, an
// unarmed one does not.
int run_events() {
  int sp[2];
  check(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0, "socketpair");
  const pid_t child = spawn([&] {
    close(sp[0]);
    Side b;
    b.open(4096, false, true);
    send_info(sp[1], b.info());
    b.connect_to(recv_info(sp[1]));
    b.post_recv(0, 64);
    b.post_recv(0, 64);
    check(b.cq->req_notify(false) == 0, "req_notify");
    sync_send(sp[1]);
    check(readable(b.channel->fd(), 5000), "no event for an armed CQ");
    client::CompletionQueue* cq = nullptr;
    check(b.channel->get_event(cq) == 0 && cq == b.cq.get(), "get_event");
    b.cq->ack_events(1);
    ibv_wc wc{};
    check(b.cq->poll(1, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV, "the RECV");
    sync_send(sp[1]);  // not armed now
    check(!readable(b.channel->fd(), 300), "an event for a CQ that was not armed");
    b.expect(IBV_WC_SUCCESS, "the second RECV");
    sync_send(sp[1]);
  });
  close(sp[1]);
  Side a;
  a.open(4096, false);
  const Info b = recv_info(sp[0]);
  send_info(sp[0], a.info());
  a.connect_to(b);
  for (int i = 0; i < 2; ++i) {
    sync_wait(sp[0]);
    a.post(IBV_WR_SEND, 0, 16, b, 0);
    a.expect(IBV_WC_SUCCESS, "SEND");
  }
  sync_wait(sp[0]);
  check(child_ok(child), "the sleeping client failed");
  std::printf("events: an armed CQ wakes its channel, an unarmed one does not\n");
  return 0;
}

int run_death(pid_t daemon_pid) {
  Side a;
  a.open(4096, false);
  a.connect_to(a.info());
  a.post(IBV_WR_RDMA_WRITE, 0, 64, a.info(), 128);
  a.expect(IBV_WC_SUCCESS, "WRITE before the daemon dies");
  check(kill(daemon_pid, SIGKILL) == 0, "kill the daemon");
  ibv_wc wc;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (!a.conn->dead() && std::chrono::steady_clock::now() < end) a.cq->poll(1, &wc);
  check(a.conn->dead(), "polling did not notice the daemon is gone");
  check(readable(a.conn->async_event_fd(), 2000), "the event descriptor did not become readable");
  client::AsyncEvent ev;
  check(a.conn->get_async_event(ev) == 0 && ev.event_type == IBV_EVENT_DEVICE_FATAL, "no IBV_EVENT_DEVICE_FATAL");
  check(a.conn->get_async_event(ev) == ENODEV, "a second fatal event");
  ibv_sge sge{reinterpret_cast<uintptr_t>(a.buf), 64, a.mr->lkey()};
  SendWr wr;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  const SendWr* bad = nullptr;
  check(a.qp->post_send(&wr, &bad) == EIO && bad == &wr, "post_send after the daemon died is not EIO");
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  check(a.qp->modify(attr, IBV_QP_STATE) == EPIPE, "a control call after the daemon died is not EPIPE");
  check(a.pd->dereg_mr(a.mr) == 0, "dereg_mr after the daemon died");
  a.qp.reset();
  a.cq.reset();
  a.pd.reset();
  std::printf("death: posts fail with EIO, destroys succeed\n");
  return 0;
}

// For the daemon's telemetry: a pair that stays connected until killed
// (the second client goes with the first).
// A shared receive queue through the daemon: the QP created on it takes
// its receives in posting order (the QP's own post_recv refused), the data
// lands, the limit fires once, the SRQ cannot go while a QP uses it, and a
// receive naming a key not the client's ends the SRQ (IBV_EVENT_SRQ_ERR).
int run_srq() {
  int sp[2];
  check(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0, "socketpair");
  constexpr int kPosted = 8, kSent = 6;
  const pid_t child = spawn([&] {
    close(sp[0]);
    Side b;
    b.open(4096, false);
    int err = 0;
    auto srq = b.pd->create_srq(16, 1, 0, err);
    check(srq != nullptr && err == 0, "create_srq " + std::to_string(err));
    check(srq->max_wr() >= 16 && srq->max_sge() == 1, "the SRQ's capabilities");
    b.qp.reset();
    client::QpInitAttr a;
    a.send_cq = a.recv_cq = b.cq.get();
    a.srq = srq.get();
    a.cap.max_send_wr = 16;
    a.cap.max_send_sge = 1;
    b.qp = b.pd->create_qp(a, err);
    check(b.qp != nullptr, "create_qp on the SRQ " + std::to_string(err));
    auto recv_wr = [&](int i, uint32_t lkey, ibv_sge& sge, RecvWr& wr) {
      sge = ibv_sge{reinterpret_cast<uintptr_t>(b.buf) + uint64_t(i) * 64, 64, lkey};
      wr = RecvWr{};
      wr.wr_id = 100 + uint64_t(i);
      wr.sg_list = &sge;
      wr.num_sge = 1;
    };
    ibv_sge sge{};
    RecvWr wr;
    const RecvWr* bad = nullptr;
    for (int i = 0; i < kPosted; ++i) {
      recv_wr(i, b.mr->lkey(), sge, wr);
      check(srq->post_recv(&wr, &bad) == 0, "post to the SRQ");
    }
    ibv_srq_attr attr{};
    attr.srq_limit = 4;
    check(srq->modify(attr, IBV_SRQ_LIMIT) == 0, "arm the SRQ limit");
    attr = {};
    check(srq->query(attr) == 0 && attr.srq_limit == 4 && attr.max_wr >= 16, "query_srq");
    send_info(sp[1], b.info());
    b.connect_to(recv_info(sp[1]));
    recv_wr(0, b.mr->lkey(), sge, wr);
    check(b.qp->post_recv(&wr, &bad) == EINVAL, "a receive posted to a QP on an SRQ was taken");
    sync_send(sp[1]);
    for (int i = 0; i < kSent; ++i) {
      const ibv_wc wc = b.expect(IBV_WC_SUCCESS, "a RECV from the SRQ");
      check(wc.opcode == IBV_WC_RECV && wc.wr_id == 100 + uint64_t(i) && wc.byte_len == 64, "the SRQ's order");
      check(same(b.buf + i * 64, 64, uint8_t(i + 1)), "the data of SEND " + std::to_string(i));
    }
    check(readable(b.conn->async_event_fd(), 2000), "no SRQ limit event");
    client::AsyncEvent ev;
    check(b.conn->get_async_event(ev) == 0 && ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.srq == srq.get(),
          "IBV_EVENT_SRQ_LIMIT_REACHED");
    attr = {};
    check(srq->query(attr) == 0 && attr.srq_limit == 0, "the limit disarms once it fired");
    auto destroy = uroce::daemon::make_message<uroce::daemon::HandleReq>(uroce::daemon::Op::destroy_srq);
    destroy.handle = srq->handle();
    uroce::daemon::HandleRep rep{};
    check(b.conn->call(&destroy, sizeof destroy, &rep, sizeof rep) == EBUSY, "an SRQ in use was destroyed");
    recv_wr(1, 0xdead0000u, sge, wr);
    check(srq->post_recv(&wr, &bad) == 0, "the ring takes the slot");
    check(readable(b.conn->async_event_fd(), 2000), "no event for a receive with a foreign key");
    check(b.conn->get_async_event(ev) == 0 && ev.event_type == IBV_EVENT_SRQ_ERR && ev.srq == srq.get(),
          "IBV_EVENT_SRQ_ERR");
    sync_send(sp[1]);
    b.qp.reset();
  });
  close(sp[1]);
  Side a;
  a.open(4096, false);
  const Info b = recv_info(sp[0]);
  send_info(sp[0], a.info());
  a.connect_to(b);
  sync_wait(sp[0]);
  for (int i = 0; i < kSent; ++i) {
    fill(a.buf + i * 64, 64, uint8_t(i + 1));
    a.post(IBV_WR_SEND, uint64_t(i) * 64, 64, b, 0, 0, uint64_t(i));
    a.expect(IBV_WC_SUCCESS, "SEND to the SRQ");
  }
  sync_wait(sp[0]);
  check(child_ok(child), "the SRQ client failed");
  std::printf("srq: receives taken in order, data checked, limit event, EBUSY, SRQ_ERR for a foreign key\n");
  return 0;
}

int run_hold() {
  int sb[2];
  check(socketpair(AF_UNIX, SOCK_STREAM, 0, sb) == 0, "socketpair");
  const pid_t b_pid = spawn([&] {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close(sb[0]);
    Side b;
    b.open(kBytes, false);
    send_info(sb[1], b.info());
    const Info a = recv_info(sb[1]);
    b.connect_to(a);
    sync_send(sb[1]);
    sync_wait(sb[1]);
    b.post(IBV_WR_RDMA_WRITE, 0, 4096, a, 0);
    b.expect(IBV_WC_SUCCESS, "WRITE from the second client");
    sync_send(sb[1]);
    pause();  // killed here
  });
  close(sb[1]);
  Side a;
  a.open(kBytes, false);
  const Info b = recv_info(sb[0]);
  send_info(sb[0], a.info());
  a.connect_to(b);
  sync_wait(sb[0]);
  a.post(IBV_WR_RDMA_WRITE, 0, 4096, b, 0);
  a.expect(IBV_WC_SUCCESS, "WRITE from the first client");
  sync_send(sb[0]);
  sync_wait(sb[0]);
  std::printf("hold: %d %d\n", int(getpid()), int(b_pid));
  std::fflush(stdout);
  for (;;) pause();  // killed here
}

}  // namespace

// The page size of the mapping at p, from /proc/self/smaps (KiB), or 0.
unsigned page_kib(const void* p) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  check(f != nullptr, "open /proc/self/smaps");
  char line[512];
  bool inside = false;
  unsigned kib = 0;
  const auto a = reinterpret_cast<uintptr_t>(p);
  while (kib == 0 && std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line, "%lx-%lx ", &lo, &hi) == 2) inside = a >= lo && a < hi;
    else if (inside) std::sscanf(line, "KernelPageSize: %u kB", &kib);
  }
  std::fclose(f);
  return kib;
}

// client_huge: what reg_mr of the client's own huge-page memfd must give
// ("accept", "refuse"), or "" not to try.
int run_huge(unsigned want_kib, const std::string& client_huge) {
  constexpr size_t kRegion = size_t(4) << 20, kMiB = size_t(1) << 20;
  Side a, b;
  a.open(kRegion, false);
  b.open(kRegion, false);
  check(page_kib(a.buf) == want_kib && page_kib(b.buf) == want_kib,
        "alloc_mr's 4 MiB regions are on pages of " + std::to_string(page_kib(a.buf)) + " KiB, not " +
            std::to_string(want_kib));
  const Info ia = a.info(), ib = b.info();
  a.connect_to(ib);
  b.connect_to(ia);
  fill(a.buf, kMiB, 0x5a);
  a.post(IBV_WR_RDMA_WRITE, 0, uint32_t(kMiB), ib, 3 * kMiB);
  a.expect(IBV_WC_SUCCESS, "a 1 MiB WRITE between huge-page regions");
  check(same(b.buf + 3 * kMiB, kMiB, 0x5a), "the WRITE's bytes");
  a.post(IBV_WR_RDMA_READ, 2 * kMiB, uint32_t(kMiB), ib, 3 * kMiB);
  a.expect(IBV_WC_SUCCESS, "a 1 MiB READ between huge-page regions");
  check(same(a.buf + 2 * kMiB, kMiB, 0x5a), "the READ's bytes");
  // Smaller than a huge page: 4 KiB pages whatever the daemon's setting.
  int err = 0;
  auto small = a.pd->alloc_mr(8192, IBV_ACCESS_LOCAL_WRITE, err);
  check(small != nullptr && page_kib(small->addr()) == 4, "an 8 KiB region is not on 4 KiB pages");
  // A client's own huge-page memfd: registered with huge-page regions on,
  // refused with them off (a hole punched in it could cost the daemon a SIGBUS).
  if (client_huge.empty()) {
    std::printf("huge: 4 MiB regions on %u KiB pages, 1 MiB WRITE and READ verified; an 8 KiB region on 4 KiB pages\n",
                want_kib);
    return 0;
  }
  const bool refuse = client_huge == "refuse";
  const int s = raw_socket();
  check(raw_hello(s, daemon::kVersion) == 0, "HELLO");
  daemon::AllocPdReq pd{{daemon::Op::alloc_pd, sizeof(daemon::AllocPdReq)}};
  daemon::HandleRep rep{};
  check(daemon::send_datagram(s, &pd, sizeof pd, nullptr, 0) == 0, "raw send");
  check(daemon::recv_datagram(s, &rep, sizeof rep).len == sizeof rep && rep.h.status == 0, "alloc_pd");
  const int fd = memfd_create("client-huge", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB | (21u << MAP_HUGE_SHIFT));
  check(fd >= 0 && ftruncate(fd, off_t(2 * kMiB)) == 0 &&
            fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0,
        "a sealed 2 MiB huge-page memfd");
  void* huge = mmap(nullptr, 2 * kMiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  check(huge != MAP_FAILED, "map the huge-page memfd");
  const auto at = reinterpret_cast<uintptr_t>(huge);
  daemon::RegMrReq rm{{daemon::Op::reg_mr, sizeof(daemon::RegMrReq)}, rep.handle, IBV_ACCESS_LOCAL_WRITE, at,
                      2 * kMiB, at, at, 2 * kMiB, 1, 0, {}};
  rm.seg[0] = {at, 2 * kMiB, 0};
  const int got = raw_call(s, &rm, sizeof rm, fd);
  check(got == (refuse ? EPERM : 0), "reg_mr of a client's huge-page memfd: status " + std::to_string(got));
  munmap(huge, 2 * kMiB);
  close(fd);
  close(s);
  std::printf("huge: 4 MiB regions on %u KiB pages, 1 MiB WRITE and READ verified; an 8 KiB region on 4 KiB pages; "
              "a client's huge-page memfd %s\n",
              want_kib, refuse ? "refused" : "registered");
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: daemon_peer SOCKET pair|kill|isolation|fork|death PID\n");
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  g_socket = argv[1];
  const std::string c = argv[2];
  if (c == "pair") return run_pair();
  if (c == "remote" && argc == 4) return run_pair(argv[3]);
  if (c == "many") return run_many();
  if (c == "kill") return run_kill();
  if (c == "isolation") return run_isolation();
  if (c == "fork") return run_fork();
  if (c == "quota") return run_quota();
  if (c == "qpn") return run_qpn();
  if (c == "events") return run_events();
  if (c == "hold") return run_hold();
  if (c == "srq") return run_srq();
  if (c == "huge" && (argc == 4 || argc == 5)) return run_huge(unsigned(std::atoi(argv[3])), argc == 5 ? argv[4] : "");
  if (c == "death" && argc == 4) return run_death(pid_t(std::atoi(argv[3])));
  std::fprintf(stderr, "unknown case %s\n", c.c_str());
  return 2;
}
