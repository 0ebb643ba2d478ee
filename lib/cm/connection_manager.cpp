// SPDX-License-Identifier: BSD-3-Clause
// The CM's connection state machines (IBA vol. 1 ch. 12) as Linux's ib_cm
// and rdma_cm run them over RoCE, on QP1 of one device.
//
// One thread per manager sleeps in epoll on the QP1 CQ's completion
// channel and an eventfd of its own, with the earliest retransmission or
// TimeWait deadline as the timeout. Every access to the connection table,
// QP1 and the event queue is under one mutex: the application's calls and
// the thread take turns, so QP1's posts come from one thread at a time.
#include "uroce/cm/connection_manager.h"

#include "remote_manager.h"
#include "verbs/remote.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "cm/cm_messages.h"
#include "cm/cma_header.h"
#include "util/quiet_thread.h"
#include "uroce/verbs/address_handle.h"
#include "uroce/verbs/completion_channel.h"
#include "uroce/verbs/completion_queue.h"
#include "uroce/verbs/device.h"
#include "uroce/verbs/memory_region.h"
#include "uroce/verbs/protection_domain.h"
#include "uroce/verbs/queue_pair.h"
#include "verbs/access.h"

namespace uroce::cm {
namespace {

constexpr int kRecvSlots = 64;
constexpr int kSendSlots = 64;
constexpr size_t kGrh = 40;
constexpr size_t kRecvSlot = kGrh + kMadSize;
// rdma_cm's values on RoCE (Linux cma.c): CM response timeout 20, 15 CM
// retries, packet lifetime 18; the local ACK delay this device reports (rxe's).
constexpr uint8_t kCmResponseTimeout = 20;
constexpr uint8_t kMaxCmRetries = 15;
constexpr uint8_t kPacketLifetime = 18;
constexpr uint8_t kAckDelay = 15;
// The service timeout of the MRA rdma_cm sends for a request its
// application has not answered yet (CMA_CM_MRA_SETTING).
constexpr uint8_t kMraServiceTimeout = 24;
// How long a MAD waits for its peer's MAC before it is dropped (the CM's
// own retries then send it again).
constexpr uint64_t kResolveMs = 3000;
// flush_sends: how long an unanswered DREQ waits before it goes again.
constexpr uint64_t kExitResendMs = 50;
// A REQ for a port nobody listens on waits this long for a listener before
// its REJ (reason 8). Linux rejects at once; here the CM's thread may take
// a REQ while the process it serves is between its bind and its listen on
// another core (perftest -R starts listening for its test connections
// only after its sync with the client, which then connects at once).
constexpr uint64_t kListenGraceMs = 100;
constexpr uint64_t kResolveRetryMs = 5;
// Bounds on what peers can make this side hold, as Linux bounds a
// listener's backlog: requests the application has not answered yet, REQs
// waiting for a listener, and MADs waiting for their peer's MAC. Past them
// a REQ is rejected (no resources) or a SIDR REQ refused at once, and a
// MAD is dropped (the CM's retries, ours or the peer's, send it again).
constexpr size_t kMaxPendingRequests = 4096;
constexpr size_t kMaxHeld = 1024;
constexpr size_t kMaxUnsent = 1024;

uint64_t now_ms() {
  return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

// 4.096 us * 2^t, in milliseconds as Linux's cm_convert_to_ms rounds it.
uint64_t cm_ms(uint8_t t) { return uint64_t(1) << (t > 8 ? t - 8 : 0); }

// The QP ACK timeout from the peer's ACK delay and the packet lifetime
// (Linux's cm_ack_timeout).
uint8_t ack_timeout(uint8_t ca_ack_delay, uint8_t lifetime) {
  int t = lifetime + 1;
  if (t >= ca_ack_delay)
    t += ca_ack_delay >= t - 1;
  else
    t = ca_ack_delay + (t >= ca_ack_delay - 1);
  return uint8_t(std::min(t, 31));
}

// The IB MTU (IBV_MTU_*) an Ethernet MTU carries, after the largest
// RoCE headers (Linux's iboe_get_mtu).
uint8_t ib_mtu(uint16_t eth_mtu) {
  const int room = int(eth_mtu) - 96;
  if (room >= 4096) return IBV_MTU_4096;
  if (room >= 2048) return IBV_MTU_2048;
  if (room >= 1024) return IBV_MTU_1024;
  if (room >= 512) return IBV_MTU_512;
  return IBV_MTU_256;
}

uint64_t node_guid(const wire::MacAddr& mac) {
  const auto& m = mac.bytes;
  return uint64_t(m[0] ^ 2) << 56 | uint64_t(m[1]) << 48 | uint64_t(m[2]) << 40 | uint64_t(0xff) << 32 |
         uint64_t(0xfe) << 24 | uint64_t(m[3]) << 16 | uint64_t(m[4]) << 8 | m[5];
}

Gid to_gid(const wire::IpAddr& a) {
  Gid g;
  g.raw = a.bytes;
  return g;
}

// rep_rcvd: an active side whose application moves its QP itself took the
// REP and has not yet called establish().
enum class State { req_sent, req_rcvd, rep_sent, rep_rcvd, established, dreq_sent, timewait };

// What the exchange settled for the QP's RTR and RTS: known to the passive
// side from the REQ (the depths as accept() then takes them), to the active
// side from the REP.
struct Settled {
  uint32_t sq_psn = 0;  // the peer's StartingPSN: what it expects to receive
  uint8_t max_dest_rd_atomic = 0;
  uint8_t max_rd_atomic = 0;
  uint8_t timeout = 0;
  uint8_t retry_count = 7;
  uint8_t rnr_retry = 7;
  Path path{};
};

struct Conn {
  uint64_t id = 0;
  bool active = false;
  State state = State::req_sent;
  CommId local_id = 0;
  CommId remote_id = 0;
  uint64_t tid = 0;  // the REQ's: every reply of this connection echoes it
  wire::IpAddr peer{};
  uint8_t sgid_index = 0;
  uint16_t port = 0;       // the service (listening) port
  uint16_t peer_port = 0;  // the active side's port
  QueuePair* qp = nullptr;
  // The application moves its QP itself (rdma_init_qp_attr): the manager
  // only knows its number and never touches it.
  bool manual = false;
  // A service ID resolution (SIDR) for a UD port: no connection follows.
  bool sidr = false;
  bool uc = false;
  uint32_t local_qpn = 0;
  bool remote_read = false;  // the QP serves READ and atomics (INIT's access)
  bool released = false;  // the application forgot it: no more events
  uint32_t remote_qpn = 0;
  uint32_t rq_psn = 0;  // this side's receive PSN: the StartingPSN it sends
  Settled settled{};
  Req req{};            // as sent (active) or received (passive)
  // The message retransmitted until answered, and when.
  Mad pending{};
  bool has_pending = false;
  int retries_left = 0;
  uint64_t retry_ms = 0;
  uint64_t deadline = 0;
  // An MRA delays our REQ or our REP once each, as Linux honours one MRA
  // per state: repeated MRAs cannot hold a connection pending forever.
  bool mra_req_taken = false;
  bool mra_rep_taken = false;
};

// Comm IDs and starting PSNs from the kernel's CSPRNG: a peer that sees
// many of them must not be able to predict another connection's (a forged
// REJ or DREQ needs both comm IDs, data injected into a QP its PSN).
struct SystemRandom {
  uint32_t operator()() const {
    uint32_t v = 0;
    while (getrandom(&v, sizeof v, 0) != ssize_t(sizeof v)) {
    }
    return v;
  }
};

// A REQ held for kListenGraceMs, waiting for a listener on its port.
struct HeldReq {
  MadHeader h;
  Req r;
  wire::IpAddr from;
  uint8_t sgid;
  uint64_t until;
};

// A MAD waiting for its peer's MAC.
struct Unsent {
  wire::IpAddr peer;
  uint8_t sgid_index;
  Mad mad;
  uint64_t give_up;
};

}  // namespace

// Hidden: the exported class would otherwise export its implementation too.
struct __attribute__((visibility("hidden"))) ConnectionManager::Impl {
  Device& dev;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionChannel> channel;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<QueuePair> qp1;
  std::vector<uint8_t> recv_buf = std::vector<uint8_t>(kRecvSlots * kRecvSlot);
  std::vector<uint8_t> send_buf = std::vector<uint8_t>(kSendSlots * kMadSize);
  std::unique_ptr<MemoryRegion> recv_mr, send_mr;
  std::map<wire::IpAddr, std::unique_ptr<AddressHandle>, bool (*)(const wire::IpAddr&, const wire::IpAddr&)> ahs{
      [](const wire::IpAddr& a, const wire::IpAddr& b) { return a.bytes < b.bytes; }};
  int send_next = 0;
  int sends_out = 0;
  uint64_t guid = 0;
  uint8_t path_mtu = IBV_MTU_1024;

  std::mutex mu;
  std::map<uint64_t, Conn> conns;  // by id
  std::set<uint16_t> listening;
  std::set<uint16_t> listening_ud;
  std::deque<Unsent> unsent;
  std::deque<HeldReq> held;
  std::deque<Event> events;
  uint64_t next_id = 1;
  SystemRandom rng;

  int wake_fd = -1;   // the application's calls wake the thread
  int event_fd = -1;  // readable while events has entries
  int epoll_fd = -1;
  std::atomic<bool> stop{false};
  std::thread thread;

  explicit Impl(Device& d) : dev(d) {}
  ~Impl();
  bool start(std::string& error);
  void run();
  void poll_cq();
  void on_mad(const uint8_t* grh, const uint8_t* mad, uint32_t len);
  void on_req(const MadHeader& h, const Req& r, const wire::IpAddr& from, uint8_t sgid_index,
              bool held_again = false);
  void on_rep(const Rep& r);
  void on_rtu(const Rtu& r);
  void on_rej(const Rej& r);
  void on_mra(const Mra& r);
  void on_dreq(const MadHeader& h, const Dreq& r, const wire::IpAddr& from, uint8_t sgid_index);
  void on_drep(const Drep& r);
  void on_sidr_req(const MadHeader& h, const SidrReq& r, const wire::IpAddr& from, uint8_t sgid_index);
  void on_sidr_rep(const SidrRep& r);
  void send_sidr_rep(const Conn& c, SidrStatus status, uint32_t qpn, uint32_t qkey, std::span<const uint8_t> data);
  void enter_timewait(Conn& c);
  void timers();
  int send(const wire::IpAddr& peer, uint8_t sgid_index, const Mad& mad);
  void send_and_retry(Conn& c, const Mad& mad, uint64_t retry_ms, int retries);
  void push_event(Event e);
  void fail_qp(Conn& c);
  void send_dreq(Conn& c);
  int bring_up(const Conn& c, QueuePair& qp);
  void qp_attr(const Conn& c, ibv_qp_attr& a, int& mask) const;
  int start_connect(Conn& c, const ConnParam& p, uint64_t& id);
  void send_rep(Conn& c, const ConnParam& p);
  CommId new_comm_id();
  size_t pending_requests() const;  // passive, not answered yet (REQ or SIDR REQ)
  Conn* withdrawn_request(const Rej& r);
  Conn* by_local(CommId id);
  bool sgid_for(const wire::IpAddr& peer, uint8_t& index) const;
  void wake();
};

ConnectionManager::Impl::~Impl() {
  stop.store(true);
  if (thread.joinable()) {
    wake();
    thread.join();
  }
  qp1.reset();
  ahs.clear();
  cq.reset();
  channel.reset();
  if (recv_mr) pd->dereg_mr(recv_mr);
  if (send_mr) pd->dereg_mr(send_mr);
  pd.reset();
  for (int fd : {wake_fd, event_fd, epoll_fd})
    if (fd >= 0) close(fd);
}

void ConnectionManager::Impl::wake() {
  const uint64_t one = 1;
  if (write(wake_fd, &one, sizeof one) < 0) {
  }
}

bool ConnectionManager::Impl::sgid_for(const wire::IpAddr& peer, uint8_t& index) const {
  const auto& gids = dev.gids();
  // GID 0 is the link-local address: the configured ones come first.
  for (size_t i = 1; i < gids.size(); ++i)
    if (gids[i].is_v4_mapped() == peer.is_v4_mapped()) return index = uint8_t(i), true;
  return false;
}

bool ConnectionManager::Impl::start(std::string& error) {
  int err = 0;
  pd = dev.alloc_pd();
  channel = dev.create_comp_channel(err);
  if (!pd || !channel) return error = "cannot make QP1's protection domain or channel", false;
  cq = dev.create_cq(kRecvSlots + kSendSlots, channel.get(), 0, err);
  if (!cq) return error = std::string("cannot create QP1's CQ: ") + std::strerror(err), false;
  QpInitAttr init;
  init.send_cq = init.recv_cq = cq.get();
  init.qp_type = IBV_QPT_UD;
  init.cap.max_send_wr = kSendSlots;
  init.cap.max_recv_wr = kRecvSlots;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  qp1 = detail::Access::create_qp_numbered(*pd, init, kGsiQpn, err);
  if (!qp1) return error = err == EEXIST ? "the device's QP1 is taken (another connection manager)" : std::string("cannot create QP1: ") + std::strerror(err), false;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qkey = kGsiQkey;
  if (qp1->modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) != 0)
    return error = "cannot move QP1 to INIT", false;
  a = {};
  a.qp_state = IBV_QPS_RTR;
  if (qp1->modify(a, IBV_QP_STATE) != 0) return error = "cannot move QP1 to RTR", false;
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  if (qp1->modify(a, IBV_QP_STATE | IBV_QP_SQ_PSN) != 0) return error = "cannot move QP1 to RTS", false;
  recv_mr = pd->reg_mr(recv_buf.data(), recv_buf.size(), IBV_ACCESS_LOCAL_WRITE, err);
  send_mr = pd->reg_mr(send_buf.data(), send_buf.size(), 0, err);
  if (!recv_mr || !send_mr) return error = "cannot register QP1's buffers", false;
  for (int i = 0; i < kRecvSlots; ++i) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(recv_buf.data() + i * kRecvSlot), uint32_t(kRecvSlot), recv_mr->lkey()};
    RecvWr wr;
    wr.wr_id = uint64_t(i);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    const RecvWr* bad = nullptr;
    if (qp1->post_recv(&wr, &bad) != 0) return error = "cannot post QP1's receives", false;
  }
  if (cq->req_notify(false) != 0) return error = "cannot arm QP1's CQ", false;
  guid = node_guid(dev.mac());
  path_mtu = ib_mtu(dev.mtu());
  wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (wake_fd < 0 || event_fd < 0 || epoll_fd < 0) return error = std::string("eventfd/epoll: ") + std::strerror(errno), false;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &ev);
  ev.data.fd = channel->fd();
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, channel->fd(), &ev);
  thread = util::quiet_thread("uroce-cm", [this] { run(); });
  return true;
}

void ConnectionManager::Impl::run() {
  while (!stop.load()) {
    int timeout = -1;
    {
      std::lock_guard<std::mutex> lock(mu);
      uint64_t next = UINT64_MAX;
      for (const auto& [id, c] : conns)
        if (c.deadline) next = std::min(next, c.deadline);
      if (!unsent.empty()) next = std::min(next, now_ms() + kResolveRetryMs);
      for (const auto& q : held) next = std::min(next, q.until);
      if (next != UINT64_MAX) {
        const uint64_t now = now_ms();
        timeout = next > now ? int(std::min<uint64_t>(next - now, 1000)) : 0;
      }
    }
    epoll_event evs[2];
    const int n = epoll_wait(epoll_fd, evs, 2, timeout);
    for (int i = 0; i < n; ++i) {
      if (evs[i].data.fd == wake_fd) {
        uint64_t v;
        if (read(wake_fd, &v, sizeof v) < 0) {
        }
      } else {
        CompletionQueue* which = nullptr;
        if (channel->get_event(which) == 0) cq->ack_events(1);
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    // Armed again before the poll: a completion after it signals anew.
    cq->req_notify(false);
    poll_cq();
    timers();
  }
}

void ConnectionManager::Impl::poll_cq() {
  ibv_wc wc[16];
  int n;
  while ((n = cq->poll(16, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      if (wc[i].opcode == IBV_WC_SEND || wc[i].wr_id >= uint64_t(kRecvSlots)) {
        --sends_out;
        continue;
      }
      const int slot = int(wc[i].wr_id);
      const uint8_t* base = recv_buf.data() + slot * kRecvSlot;
      if (wc[i].status == IBV_WC_SUCCESS && wc[i].src_qp == kGsiQpn && wc[i].byte_len >= kGrh)
        on_mad(base, base + kGrh, wc[i].byte_len - uint32_t(kGrh));
      ibv_sge sge{reinterpret_cast<uintptr_t>(base), uint32_t(kRecvSlot), recv_mr->lkey()};
      RecvWr wr;
      wr.wr_id = uint64_t(slot);
      wr.sg_list = &sge;
      wr.num_sge = 1;
      const RecvWr* bad = nullptr;
      qp1->post_recv(&wr, &bad);
    }
  }
}

void ConnectionManager::Impl::on_mad(const uint8_t* grh, const uint8_t* mad, uint32_t len) {
  MadHeader h;
  Attr attr{};
  if (check_cm_header({mad, len}, h, attr) != MadCheck::ok) return;
  // The GRH slot: an IPv6 header, or 20 zero bytes and the IPv4 header.
  static constexpr uint8_t kZero[20] = {};
  const bool v4 = std::memcmp(grh, kZero, 20) == 0 && (grh[20] >> 4) == 4;
  const wire::IpAddr from = v4 ? wire::IpAddr::from_v4(grh + 20 + 12) : wire::IpAddr::from_v6(grh + 8);
  uint8_t sgid = 0;
  if (!sgid_for(from, sgid)) return;
  const uint8_t* d = mad + kMadHeaderSize;
  switch (attr) {
    case Attr::req: on_req(h, decode_req(d), from, sgid); break;
    case Attr::rep: on_rep(decode_rep(d)); break;
    case Attr::rtu: on_rtu(decode_rtu(d)); break;
    case Attr::rej: on_rej(decode_rej(d)); break;
    case Attr::mra: on_mra(decode_mra(d)); break;
    case Attr::dreq: on_dreq(h, decode_dreq(d), from, sgid); break;
    case Attr::drep: on_drep(decode_drep(d)); break;
    case Attr::sidr_req: on_sidr_req(h, decode_sidr_req(d), from, sgid); break;
    case Attr::sidr_rep: on_sidr_rep(decode_sidr_rep(d)); break;
  }
}

size_t ConnectionManager::Impl::pending_requests() const {
  size_t n = 0;
  for (const auto& [k, c] : conns) n += !c.active && c.state == State::req_rcvd;
  return n;
}

CommId ConnectionManager::Impl::new_comm_id() {
  for (;;) {
    const CommId id = CommId(rng());
    if (id != 0 && by_local(id) == nullptr) return id;
  }
}

Conn* ConnectionManager::Impl::by_local(CommId id) {
  for (auto& [k, c] : conns)
    if (c.local_id == id) return &c;
  return nullptr;
}

void ConnectionManager::Impl::push_event(Event e) {
  if (auto it = conns.find(e.id); it != conns.end() && it->second.released) return;
  events.push_back(std::move(e));
  const uint64_t one = 1;
  if (write(event_fd, &one, sizeof one) < 0) {
  }
}

int ConnectionManager::Impl::send(const wire::IpAddr& peer, uint8_t sgid_index, const Mad& mad) {
  auto it = ahs.find(peer);
  if (it == ahs.end()) {
    ibv_ah_attr a{};
    a.is_global = 1;
    std::memcpy(a.grh.dgid.raw, peer.bytes.data(), 16);
    a.grh.sgid_index = sgid_index;
    a.grh.hop_limit = 64;
    a.port_num = 1;
    int err = 0;
    auto ah = pd->create_ah(a, err);
    if (!ah) {
      // The peer's MAC is being resolved: the MAD goes out once it is known.
      if (err != EHOSTUNREACH) return err;
      if (unsent.size() >= kMaxUnsent) return ENOMEM;
      unsent.push_back({peer, sgid_index, mad, now_ms() + kResolveMs});
      return err;
    }
    it = ahs.emplace(peer, std::move(ah)).first;
  }
  if (sends_out >= kSendSlots) return ENOMEM;  // a CM retry sends it again
  uint8_t* slot = send_buf.data() + send_next * kMadSize;
  std::memcpy(slot, mad.data(), kMadSize);
  ibv_sge sge{reinterpret_cast<uintptr_t>(slot), uint32_t(kMadSize), send_mr->lkey()};
  SendWr wr;
  wr.wr_id = uint64_t(kRecvSlots + send_next);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = it->second.get();
  wr.wr.ud.remote_qpn = kGsiQpn;
  wr.wr.ud.remote_qkey = kGsiQkey;
  const SendWr* bad = nullptr;
  const int rc = qp1->post_send(&wr, &bad);
  if (rc == 0) {
    ++sends_out;
    send_next = (send_next + 1) % kSendSlots;
  }
  return rc;
}

void ConnectionManager::Impl::send_and_retry(Conn& c, const Mad& mad, uint64_t retry_ms, int retries) {
  c.pending = mad;
  c.has_pending = true;
  c.retries_left = retries;
  c.retry_ms = retry_ms;
  c.deadline = now_ms() + retry_ms;
  send(c.peer, c.sgid_index, mad);
}

// INIT's attributes: the access the connection's depths call for.
static void init_attr(bool remote_read, ibv_qp_attr& a, int& mask) {
  a.port_num = 1;
  a.pkey_index = 0;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | (remote_read ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC : 0);
  mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
}

// RESET to INIT, or INIT to INIT (a QP that librdmacm's rdma_create_qp
// left in INIT).
static int to_init(QueuePair& qp, bool remote_read) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  int mask = 0;
  init_attr(remote_read, a, mask);
  return qp.modify(a, mask);
}

void ConnectionManager::Impl::send_dreq(Conn& c) {
  Dreq dreq;
  dreq.local_comm_id = c.local_id;
  dreq.remote_comm_id = c.remote_id;
  dreq.remote_qpn = c.remote_qpn;
  c.state = State::dreq_sent;
  // The active side's DREQ reuses its REQ's TID; the passive side's is new.
  const uint64_t tid = c.active ? c.tid : (uint64_t(2) << 32 | c.local_id);
  const uint64_t retry = c.active ? 2 * cm_ms(kPacketLifetime) + cm_ms(kCmResponseTimeout) : cm_ms(kCmResponseTimeout);
  send_and_retry(c, encode(dreq, tid), retry, kMaxCmRetries);
}

void ConnectionManager::Impl::fail_qp(Conn& c) {
  if (!c.qp) return;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  c.qp->modify(a, IBV_QP_STATE);
}

// The attributes for a.qp_state, as Linux's ib_cm_init_qp_attr gives them.
void ConnectionManager::Impl::qp_attr(const Conn& c, ibv_qp_attr& a, int& mask) const {
  const ibv_qp_state want = a.qp_state;
  const Settled& s = c.settled;
  a = {};
  a.qp_state = want;
  switch (want) {
    case IBV_QPS_INIT:
      init_attr(c.remote_read, a, mask);
      return;
    case IBV_QPS_RTR:
      a.path_mtu = ibv_mtu(std::min(c.req.path_mtu, path_mtu));
      a.dest_qp_num = c.remote_qpn;
      a.rq_psn = c.rq_psn;
      a.max_dest_rd_atomic = s.max_dest_rd_atomic;
      a.min_rnr_timer = 0;  // Linux's ib_cm default: 655.36 ms
      a.ah_attr.is_global = 1;
      std::memcpy(a.ah_attr.grh.dgid.raw, c.peer.bytes.data(), 16);
      a.ah_attr.grh.sgid_index = c.sgid_index;
      a.ah_attr.grh.flow_label = s.path.flow_label;
      a.ah_attr.grh.hop_limit = s.path.hop_limit ? s.path.hop_limit : 64;
      a.ah_attr.grh.traffic_class = s.path.traffic_class;
      a.ah_attr.port_num = 1;
      mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
      if (!c.uc) mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
      return;
    default:  // RTS
      a.sq_psn = s.sq_psn;
      a.timeout = s.timeout;
      a.retry_cnt = s.retry_count;
      a.rnr_retry = s.rnr_retry;
      a.max_rd_atomic = s.max_rd_atomic;
      mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
      if (!c.uc) mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
      return;
  }
}

int ConnectionManager::Impl::bring_up(const Conn& c, QueuePair& qp) {
  if (const int rc = to_init(qp, c.remote_read)) return rc;
  for (ibv_qp_state st : {IBV_QPS_RTR, IBV_QPS_RTS}) {
    ibv_qp_attr a{};
    a.qp_state = st;
    int mask = 0;
    qp_attr(c, a, mask);
    // The peer's MAC may still be resolving (EHOSTUNREACH): it answered on
    // QP1 from that address, so the answer comes within the CM's retries.
    if (const int rc = qp.modify(a, mask)) return rc;
  }
  return 0;
}

// A connect_request for `c`: where it came from (rdma_cm's header) and the
// application's private data after that header.
static Event request_event(const Conn& c, const CmaHeader& cma, std::span<const uint8_t> private_data) {
  Event e;
  e.type = EventType::connect_request;
  e.id = c.id;
  e.private_data.assign(private_data.begin() + kCmaHeaderSize, private_data.end());
  e.port = c.port;
  e.local = cma.dst;
  e.peer = cma.src;
  e.peer_port = cma.src_port;
  return e;
}

void ConnectionManager::Impl::on_req(const MadHeader& h, const Req& r, const wire::IpAddr& from, uint8_t sgid,
                                     bool held_again) {
  // A REQ seen before (the peer's retry), answered as Linux's
  // cm_dup_req_handler does: while the application has not answered, an
  // MRA asks the peer to wait (the service timeout rdma_cm gives, 24:
  // 68.7 s); in TimeWait a REJ says the connection is stale; otherwise the
  // REP's own timer answers it.
  for (auto& [k, c] : conns) {
    if (c.active || c.remote_id != r.local_comm_id || c.req.local_ca_guid != r.local_ca_guid) continue;
    if (c.state == State::req_rcvd) {
      Mra mra;
      mra.local_comm_id = c.local_id;
      mra.remote_comm_id = c.remote_id;
      mra.message_mraed = Msg::req;
      mra.service_timeout = kMraServiceTimeout;
      send(from, sgid, encode(mra, h.tid));
    } else if (c.state == State::timewait) {
      Rej rej;
      rej.local_comm_id = c.local_id;
      rej.remote_comm_id = c.remote_id;
      rej.message_rejected = Msg::req;
      rej.reason = uint16_t(RejReason::stale_conn);
      send(from, sgid, encode(rej, h.tid));
    }
    return;
  }
  auto reject = [&](RejReason why) {
    Rej rej;
    rej.remote_comm_id = r.local_comm_id;
    rej.message_rejected = Msg::req;
    rej.reason = uint16_t(why);
    send(from, sgid, encode(rej, h.tid));
  };
  // A REQ from a QP that a live connection of ours already names as its
  // peer: the peer lost that connection (a process that ended without a
  // DREQ, its QPN used again). As Linux's cm_req_handler: REJ 10 (stale
  // connection), and the old connection is disconnected.
  for (auto& [k, c] : conns) {
    if (c.sidr || c.state == State::timewait || c.peer != from || c.remote_qpn != r.local_qpn) continue;
    reject(RejReason::stale_conn);
    if (c.state == State::established) {
      fail_qp(c);
      send_dreq(c);
    }
    return;
  }
  PortSpace ps{};
  if (!service_port_space(r.service_id, ps) || ps != PortSpace::tcp) return reject(RejReason::invalid_service_id);
  if (!listening.count(service_port(r.service_id))) {
    if (held_again) return reject(RejReason::invalid_service_id);
    // The peer's retry of a REQ already held adds nothing.
    for (const auto& q : held)
      if (q.r.local_comm_id == r.local_comm_id && q.r.local_ca_guid == r.local_ca_guid) return;
    if (held.size() >= kMaxHeld) return reject(RejReason::invalid_service_id);
    held.push_back({h, r, from, sgid, now_ms() + kListenGraceMs});
    return;
  }
  if (pending_requests() >= kMaxPendingRequests) return reject(RejReason::no_resources);
  CmaHeader cma;
  bool own = false;
  if (decode_cma_header(r.private_data, cma))
    for (const auto& g : dev.gids()) own |= g == cma.dst;
  if (!own || r.transport_type != 0) return reject(RejReason::consumer_defined);
  Conn c;
  c.id = next_id++;
  c.state = State::req_rcvd;
  c.local_id = new_comm_id();
  c.remote_id = r.local_comm_id;
  c.tid = h.tid;
  c.peer = from;
  c.sgid_index = sgid;
  c.port = service_port(r.service_id);
  c.peer_port = cma.src_port;
  c.remote_qpn = r.local_qpn;
  c.req = r;
  c.rq_psn = rng() & 0xffffff;
  // The REQ's depths are the requester's: they swap here, until accept()
  // says what this side takes.
  c.settled.sq_psn = r.starting_psn;
  c.settled.max_dest_rd_atomic = r.initiator_depth;
  c.settled.max_rd_atomic = r.responder_resources;
  c.settled.timeout = r.primary.local_ack_timeout;
  c.settled.retry_count = r.retry_count;
  c.settled.rnr_retry = r.rnr_retry_count;
  c.settled.path = r.primary;
  c.remote_read = r.initiator_depth > 0;
  dev.resolve_neighbor(from);  // accept() needs the MAC for the QP's RTR
  Event e = request_event(c, cma, r.private_data);
  e.peer_qpn = r.local_qpn;
  e.responder_resources = r.initiator_depth;
  e.initiator_depth = r.responder_resources;
  e.flow_control = r.flow_control;
  conns.emplace(c.id, c);
  push_event(std::move(e));
}

// A SIDR REQ: the application's listener on the UD port answers it with
// accept_ud() or reject(); without one, status 1 (unsupported), as Linux's
// cm_sidr_req_handler answers at once.
void ConnectionManager::Impl::on_sidr_req(const MadHeader& h, const SidrReq& r, const wire::IpAddr& from,
                                          uint8_t sgid) {
  // The requester's retry of a request still being answered.
  for (auto& [k, c] : conns)
    if (c.sidr && !c.active && c.remote_id == r.request_id && c.peer == from) return;
  Conn c;
  c.sidr = true;
  c.state = State::req_rcvd;
  c.remote_id = r.request_id;
  c.tid = h.tid;
  c.peer = from;
  c.sgid_index = sgid;
  c.port = service_port(r.service_id);
  c.req.service_id = r.service_id;
  PortSpace ps{};
  CmaHeader cma;
  bool own = false;
  const bool has_cma = decode_cma_header({r.private_data.data(), r.private_data.size()}, cma);
  if (has_cma)
    for (const auto& g : dev.gids()) own |= g == cma.dst;
  if (!service_port_space(r.service_id, ps) || ps != PortSpace::udp || !listening_ud.count(c.port))
    return send_sidr_rep(c, SidrStatus::unsupported, 0, 0, {});
  if (!own || pending_requests() >= kMaxPendingRequests) return send_sidr_rep(c, SidrStatus::reject, 0, 0, {});
  c.id = next_id++;
  c.peer_port = cma.src_port;
  dev.resolve_neighbor(from);  // for the SIDR REP
  Event e = request_event(c, cma, r.private_data);
  e.ud = true;
  conns.emplace(c.id, c);
  push_event(std::move(e));
}

void ConnectionManager::Impl::send_sidr_rep(const Conn& c, SidrStatus status, uint32_t qpn, uint32_t qkey,
                                            std::span<const uint8_t> data) {
  SidrRep rep;
  rep.request_id = c.remote_id;
  rep.status = uint8_t(status);
  rep.qpn = qpn;
  rep.qkey = qkey;
  rep.service_id = c.req.service_id;
  std::copy(data.begin(), data.end(), rep.private_data.begin());
  send(c.peer, c.sgid_index, encode(rep, c.tid));
}

void ConnectionManager::Impl::on_sidr_rep(const SidrRep& r) {
  Conn* c = by_local(r.request_id);
  if (!c || !c->sidr || !c->active || c->state != State::req_sent) return;
  Event e;
  e.id = c->id;
  e.ud = true;
  e.private_data.assign(r.private_data.begin(), r.private_data.end());
  if (r.status == uint8_t(SidrStatus::success)) {
    e.type = EventType::established;
    e.peer_qpn = r.qpn;
    e.qkey = r.qkey;
  } else {
    e.type = EventType::rejected;
    e.status = r.status;
  }
  const uint64_t id = c->id;
  push_event(std::move(e));
  conns.erase(id);
}

void ConnectionManager::Impl::on_rep(const Rep& r) {
  Conn* c = by_local(r.remote_comm_id);
  if (!c || !c->active) return;
  if (c->state == State::established && c->remote_id == r.local_comm_id) {
    // Our RTU was lost: the peer's REP timer sent its REP again.
    Rtu rtu;
    rtu.local_comm_id = c->local_id;
    rtu.remote_comm_id = c->remote_id;
    send(c->peer, c->sgid_index, encode(rtu, c->tid));
    return;
  }
  if (c->state != State::req_sent) return;
  c->has_pending = false;
  c->deadline = 0;
  c->remote_id = r.local_comm_id;
  c->remote_qpn = r.local_qpn;
  // The peer's StartingPSN is what it expects to receive; its depths are
  // its own, so they swap here.
  c->settled.sq_psn = r.starting_psn;
  c->settled.max_dest_rd_atomic = r.initiator_depth;
  c->settled.max_rd_atomic = r.responder_resources;
  c->settled.timeout = ack_timeout(r.target_ack_delay, kPacketLifetime);
  c->settled.retry_count = c->req.retry_count;
  c->settled.rnr_retry = r.rnr_retry_count;
  c->settled.path = c->req.primary;
  Event e;
  e.id = c->id;
  e.private_data.assign(r.private_data.begin(), r.private_data.end());
  e.peer_qpn = r.local_qpn;
  e.flow_control = r.flow_control;
  if (c->manual) {
    // The application moves its QP, then establish() sends the RTU.
    c->state = State::rep_rcvd;
    e.type = EventType::connect_response;
    push_event(std::move(e));
    return;
  }
  const int rc = c->qp ? bring_up(*c, *c->qp) : 0;
  if (rc != 0) {
    Rej rej;
    rej.local_comm_id = c->local_id;
    rej.remote_comm_id = c->remote_id;
    rej.message_rejected = Msg::rep;
    rej.reason = uint16_t(RejReason::consumer_defined);
    send(c->peer, c->sgid_index, encode(rej, c->tid));
    fail_qp(*c);
    Event err;
    err.type = EventType::connect_error;
    err.id = c->id;
    err.status = rc;
    const uint64_t id = c->id;
    push_event(std::move(err));
    conns.erase(id);
    return;
  }
  Rtu rtu;
  rtu.local_comm_id = c->local_id;
  rtu.remote_comm_id = c->remote_id;
  send(c->peer, c->sgid_index, encode(rtu, c->tid));
  c->state = State::established;
  e.type = EventType::established;
  push_event(std::move(e));
}

void ConnectionManager::Impl::on_rtu(const Rtu& r) {
  Conn* c = by_local(r.remote_comm_id);
  if (!c || c->active || c->state != State::rep_sent || c->remote_id != r.local_comm_id) return;
  c->state = State::established;
  c->has_pending = false;
  c->deadline = 0;
  Event e;
  e.type = EventType::established;
  e.id = c->id;
  e.peer_qpn = c->remote_qpn;
  push_event(std::move(e));
}

// A requester that gives up before its REQ is answered sends REJ 4
// (timeout) without our comm ID, which it never learned, and its CA GUID in
// the ARI: Linux's cm_acquire_rejected_id finds the request by that GUID and
// the requester's comm ID. The request it names, or nullptr.
Conn* ConnectionManager::Impl::withdrawn_request(const Rej& r) {
  if (r.reason != uint16_t(RejReason::timeout) || r.message_rejected != Msg::req || r.ari_length < 8) return nullptr;
  uint64_t guid = 0;
  for (int i = 0; i < 8; ++i) guid = guid << 8 | r.ari[i];
  for (auto& [k, c] : conns)
    if (!c.active && !c.sidr && c.state == State::req_rcvd && c.remote_id == r.local_comm_id &&
        c.req.local_ca_guid == guid)
      return &c;
  return nullptr;
}

void ConnectionManager::Impl::on_rej(const Rej& r) {
  Conn* c = r.remote_comm_id ? by_local(r.remote_comm_id) : withdrawn_request(r);
  if (!c) return;
  // A REJ of our REQ may carry no local ID (nobody listens); any other
  // must name the connection both ways.
  if (!(r.message_rejected == Msg::req && c->state == State::req_sent) && c->remote_id != r.local_comm_id) return;
  // A request not answered yet is withdrawn too: the application hears
  // REJECTED for it, as from Linux, and can no longer accept it.
  if (c->state != State::req_sent && c->state != State::req_rcvd && c->state != State::rep_sent &&
      c->state != State::rep_rcvd && c->state != State::established)
    return;
  fail_qp(*c);
  Event e;
  e.type = c->state == State::established ? EventType::disconnected : EventType::rejected;
  e.id = c->id;
  e.status = r.reason;
  e.private_data.assign(r.private_data.begin(), r.private_data.end());
  const uint64_t id = c->id;
  push_event(std::move(e));
  conns.erase(id);
}

void ConnectionManager::Impl::on_mra(const Mra& r) {
  Conn* c = by_local(r.remote_comm_id);
  if (!c || !c->has_pending) return;
  // As Linux's cm_mra_handler: an MRA of our REQ while it waits for a REP,
  // or of our REP (naming the connection both ways) while it waits for the
  // RTU; once each. Any other is ignored, a DREQ's included.
  if (c->state == State::req_sent && r.message_mraed == Msg::req && !c->mra_req_taken) {
    c->mra_req_taken = true;
  } else if (c->state == State::rep_sent && r.message_mraed == Msg::rep && c->remote_id == r.local_comm_id &&
             !c->mra_rep_taken) {
    c->mra_rep_taken = true;
  } else {
    return;
  }
  // The peer needs longer: wait its service timeout plus a round trip.
  c->retry_ms = cm_ms(r.service_timeout) + cm_ms(ack_timeout(kAckDelay, kPacketLifetime));
  c->deadline = now_ms() + c->retry_ms;
}

void ConnectionManager::Impl::on_dreq(const MadHeader& h, const Dreq& r, const wire::IpAddr& from, uint8_t sgid) {
  Conn* c = by_local(r.remote_comm_id);
  Drep drep;
  drep.local_comm_id = r.remote_comm_id;
  drep.remote_comm_id = r.local_comm_id;
  if (!c || c->remote_id != r.local_comm_id) {
    send(from, sgid, encode(drep, h.tid));  // unknown: answer so the peer stops asking
    return;
  }
  // Linux ignores a DREQ that names another QP.
  if (r.remote_qpn != c->local_qpn) return;
  const bool report = c->state == State::established || c->state == State::dreq_sent || c->state == State::rep_sent;
  send(from, sgid, encode(drep, h.tid));
  if (!report) return;  // TimeWait: the DREP went out again
  fail_qp(*c);
  enter_timewait(*c);
}

void ConnectionManager::Impl::on_drep(const Drep& r) {
  Conn* c = by_local(r.remote_comm_id);
  if (!c || c->state != State::dreq_sent || c->remote_id != r.local_comm_id) return;
  enter_timewait(*c);
}

// Disconnected: TimeWait keeps the connection's IDs (to answer a late
// DREQ) for the time a packet may still be in flight, then frees them.
void ConnectionManager::Impl::enter_timewait(Conn& c) {
  c.state = State::timewait;
  c.has_pending = false;
  c.deadline = now_ms() + cm_ms(ack_timeout(kAckDelay, kPacketLifetime));
  Event e;
  e.type = EventType::disconnected;
  e.id = c.id;
  push_event(std::move(e));
}

void ConnectionManager::Impl::timers() {
  const uint64_t now = now_ms();
  // Held REQs: taken by a listener that came, or rejected when their time is up.
  for (auto it = held.begin(); it != held.end();) {
    if (!listening.count(service_port(it->r.service_id)) && now < it->until) {
      ++it;
      continue;
    }
    const HeldReq q = *it;
    it = held.erase(it);
    on_req(q.h, q.r, q.from, q.sgid, true);
  }
  // Taken out whole first: send() may queue a MAD again (its MAC gone
  // between the lookup and the address handle), which must not move the
  // entries this loop walks.
  std::deque<Unsent> due;
  due.swap(unsent);
  for (Unsent& u : due) {
    if (now > u.give_up) continue;
    wire::MacAddr mac;
    if (!dev.neighbor_mac(u.peer, mac)) {
      dev.resolve_neighbor(u.peer);
      unsent.push_back(std::move(u));
      continue;
    }
    send(u.peer, u.sgid_index, u.mad);
  }
  for (auto it = conns.begin(); it != conns.end();) {
    Conn& c = it->second;
    if (!c.deadline || now < c.deadline) {
      ++it;
      continue;
    }
    if (c.state == State::timewait) {
      it = conns.erase(it);
      continue;
    }
    if (c.has_pending && c.retries_left > 0) {
      --c.retries_left;
      c.deadline = now + c.retry_ms;
      send(c.peer, c.sgid_index, c.pending);
      ++it;
      continue;
    }
    // Retries exhausted.
    fail_qp(c);
    Event e;
    e.id = c.id;
    e.ud = c.sidr;
    if (c.state == State::dreq_sent) {
      e.type = EventType::disconnected;
      e.status = -ETIMEDOUT;
    } else {
      e.type = EventType::unreachable;
      e.status = -ETIMEDOUT;
    }
    push_event(std::move(e));
    it = conns.erase(it);
  }
}

std::string describe(const Event& e) {
  switch (e.type) {
    case EventType::rejected:
      return e.status == 8 ? "the server refused the connection: nobody listens on that port (REJ reason 8)"
                           : "the server refused the connection (REJ reason " + std::to_string(e.status) + ")";
    case EventType::unreachable:
      return "no answer from the server's connection manager (its CM retries ran out)";
    case EventType::connect_error:
      return "the QP could not be connected: " + std::string(std::strerror(e.status < 0 ? -e.status : e.status));
    case EventType::disconnected:
      return "the peer disconnected";
    default:
      return "unexpected connection event " + std::to_string(int(e.type));
  }
}

ConnectionManager::ConnectionManager(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ConnectionManager::~ConnectionManager() = default;

std::unique_ptr<ConnectionManager> ConnectionManager::open(Device& device, std::string& error) {
  if (!device.engine_thread_running()) {
    error = "the connection manager needs the device's engine on its own thread (Device::start_engine_thread)";
    return nullptr;
  }
  if (detail::RemoteDevice* r = detail::Access::remote(device)) {
    auto remote = RemoteManager::open(*r->conn, error);
    if (!remote) return nullptr;
    auto m = std::unique_ptr<ConnectionManager>(new ConnectionManager(nullptr));
    m->remote_ = std::move(remote);
    return m;
  }
  auto impl = std::make_unique<Impl>(device);
  if (!impl->start(error)) return nullptr;
  return std::unique_ptr<ConnectionManager>(new ConnectionManager(std::move(impl)));
}

int ConnectionManager::listen(uint16_t port) {
  if (remote_) return remote_->listen(port, false, true);
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->listening.insert(port).second) return EADDRINUSE;
  if (!impl_->held.empty()) impl_->wake();  // a REQ may be waiting for this port
  return 0;
}

int ConnectionManager::stop_listening(uint16_t port) {
  if (remote_) return remote_->listen(port, false, false);
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->listening.erase(port) ? 0 : EINVAL;
}

int ConnectionManager::Impl::start_connect(Conn& c, const ConnParam& p, uint64_t& id) {
  if (p.private_data.size() > kReqPrivate - kCmaHeaderSize || p.retry_count > 7 || p.rnr_retry_count > 7)
    return EINVAL;
  if (!sgid_for(c.peer, c.sgid_index)) return EINVAL;
  c.id = next_id++;
  c.active = true;
  c.state = State::req_sent;
  c.local_id = new_comm_id();
  c.peer_port = p.local_port ? p.local_port : uint16_t(32768 + rng() % 28232);  // Linux's ephemeral range
  c.rq_psn = rng() & 0xffffff;
  c.remote_read = p.responder_resources > 0;
  // TID: the CM agent's number in the high word, the comm ID below (Linux's form).
  c.tid = uint64_t(2) << 32 | c.local_id;
  Req& r = c.req;
  r.local_comm_id = c.local_id;
  r.service_id = service_id(PortSpace::tcp, c.port);
  r.local_ca_guid = guid;
  r.local_qpn = c.local_qpn;
  r.responder_resources = p.responder_resources;
  r.initiator_depth = p.initiator_depth;
  r.remote_cm_response_timeout = kCmResponseTimeout;
  r.transport_type = c.uc ? 1 : 0;
  r.starting_psn = c.rq_psn;
  r.local_cm_response_timeout = kCmResponseTimeout;
  r.retry_count = p.retry_count;
  r.path_mtu = path_mtu;
  r.rnr_retry_count = p.rnr_retry_count;
  r.flow_control = p.flow_control;
  r.max_cm_retries = kMaxCmRetries;
  r.primary.local_gid = to_gid(dev.gids()[c.sgid_index]);
  r.primary.remote_gid = to_gid(c.peer);
  r.primary.flow_label = cma_flow_label(c.peer_port, c.port);
  r.primary.hop_limit = 64;
  r.primary.local_ack_timeout = ack_timeout(kAckDelay, kPacketLifetime);
  CmaHeader cma;
  cma.src = dev.gids()[c.sgid_index];
  cma.dst = c.peer;
  cma.src_port = c.peer_port;
  encode_cma_header(cma, r.private_data.data());
  std::copy(p.private_data.begin(), p.private_data.end(), r.private_data.begin() + kCmaHeaderSize);
  // The QP reaches INIT now, as librdmacm's rdma_connect leaves it.
  if (c.qp)
    if (const int rc = to_init(*c.qp, c.remote_read)) return rc;
  dev.resolve_neighbor(c.peer);
  id = c.id;
  Conn& stored = conns.emplace(c.id, c).first->second;
  send_and_retry(stored, encode(r, c.tid), 2 * cm_ms(kPacketLifetime) + cm_ms(kCmResponseTimeout), kMaxCmRetries);
  wake();
  return 0;
}

int ConnectionManager::connect(QueuePair& qp, const wire::IpAddr& peer, uint16_t port, const ConnParam& p,
                               uint64_t& id) {
  if (remote_) return remote_->connect(&qp, 0, IBV_QPT_RC, peer, port, p, false, id);
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if ((qp.qp_type() != IBV_QPT_RC && qp.qp_type() != IBV_QPT_UC) ||
      (qp.state() != IBV_QPS_RESET && qp.state() != IBV_QPS_INIT))
    return EINVAL;
  Conn c;
  c.peer = peer;
  c.port = port;
  c.qp = &qp;
  c.local_qpn = qp.qp_num();
  c.uc = qp.qp_type() == IBV_QPT_UC;
  return m.start_connect(c, p, id);
}

int ConnectionManager::connect(uint32_t qpn, ibv_qp_type type, const wire::IpAddr& peer, uint16_t port,
                               const ConnParam& p, uint64_t& id) {
  if (remote_) return remote_->connect(nullptr, qpn, type, peer, port, p, false, id);
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if ((type != IBV_QPT_RC && type != IBV_QPT_UC) || qpn == 0 || qpn > 0xffffff) return EINVAL;
  Conn c;
  c.peer = peer;
  c.port = port;
  c.manual = true;
  c.local_qpn = qpn;
  c.uc = type == IBV_QPT_UC;
  return m.start_connect(c, p, id);
}

void ConnectionManager::Impl::send_rep(Conn& c, const ConnParam& p) {
  Rep rep;
  rep.local_comm_id = c.local_id;
  rep.remote_comm_id = c.remote_id;
  rep.local_qpn = c.local_qpn;
  rep.starting_psn = c.rq_psn;
  rep.responder_resources = p.responder_resources;
  rep.initiator_depth = p.initiator_depth;
  rep.target_ack_delay = kAckDelay;
  rep.rnr_retry_count = p.rnr_retry_count;
  rep.flow_control = p.flow_control;
  rep.local_ca_guid = guid;
  std::copy(p.private_data.begin(), p.private_data.end(), rep.private_data.begin());
  c.state = State::rep_sent;
  send_and_retry(c, encode(rep, c.tid), cm_ms(c.req.local_cm_response_timeout), c.req.max_cm_retries);
  wake();
}

int ConnectionManager::accept(uint64_t id, QueuePair& qp, const ConnParam& p) {
  if (remote_) return remote_->accept(id, &qp, 0, 0, false, p);
  Impl& m = *impl_;
  // RTR needs the peer's MAC, which the engine resolves from the REQ's
  // source address: wait for it (with the table unlocked) within a bound.
  wire::IpAddr peer;
  {
    // Nothing to wait for unless this is a request to answer.
    std::lock_guard<std::mutex> lock(m.mu);
    auto it = m.conns.find(id);
    if (it == m.conns.end() || it->second.state != State::req_rcvd || it->second.sidr) return EINVAL;
    peer = it->second.peer;
  }
  wire::MacAddr mac;
  for (const uint64_t until = now_ms() + kResolveMs; !m.dev.neighbor_mac(peer, mac) && now_ms() < until;) {
    m.dev.resolve_neighbor(peer);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.conns.find(id);
  if (it == m.conns.end() || it->second.state != State::req_rcvd || p.private_data.size() > kRepPrivate ||
      qp.qp_type() != IBV_QPT_RC || (qp.state() != IBV_QPS_RESET && qp.state() != IBV_QPS_INIT) ||
      p.rnr_retry_count > 7)
    return EINVAL;
  Conn& c = it->second;
  c.qp = &qp;
  c.local_qpn = qp.qp_num();
  c.settled.max_dest_rd_atomic = p.responder_resources;
  c.settled.max_rd_atomic = p.initiator_depth;
  c.remote_read = p.responder_resources > 0;
  if (const int rc = m.bring_up(c, qp)) return rc;
  m.send_rep(c, p);
  return 0;
}

int ConnectionManager::accept(uint64_t id, uint32_t qpn, const ConnParam& p) {
  if (remote_) return remote_->accept(id, nullptr, qpn, 0, false, p);
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.conns.find(id);
  if (it == m.conns.end() || it->second.state != State::req_rcvd || p.private_data.size() > kRepPrivate ||
      qpn == 0 || qpn > 0xffffff || p.rnr_retry_count > 7)
    return EINVAL;
  Conn& c = it->second;
  c.manual = true;
  c.local_qpn = qpn;
  c.settled.max_dest_rd_atomic = p.responder_resources;
  c.settled.max_rd_atomic = p.initiator_depth;
  c.remote_read = p.responder_resources > 0;
  m.send_rep(c, p);
  return 0;
}

int ConnectionManager::establish(uint64_t id) {
  if (remote_) return remote_->establish(id);
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.conns.find(id);
  if (it == m.conns.end() || it->second.state != State::rep_rcvd) return EINVAL;
  Conn& c = it->second;
  Rtu rtu;
  rtu.local_comm_id = c.local_id;
  rtu.remote_comm_id = c.remote_id;
  m.send(c.peer, c.sgid_index, encode(rtu, c.tid));
  c.state = State::established;
  return 0;
}

int ConnectionManager::qp_attr(uint64_t id, ibv_qp_attr& attr, int& mask) {
  if (remote_) return remote_->qp_attr(id, attr, mask);
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.conns.find(id);
  if (it == m.conns.end()) return EINVAL;
  const Conn& c = it->second;
  const bool settled = !c.active || c.state != State::req_sent;
  switch (attr.qp_state) {
    case IBV_QPS_INIT:
      break;
    case IBV_QPS_RTR:
    case IBV_QPS_RTS:
      if (!settled || c.state == State::timewait || c.state == State::dreq_sent) return EINVAL;
      break;
    default:
      return EINVAL;
  }
  m.qp_attr(c, attr, mask);
  return 0;
}

int ConnectionManager::listen_ud(uint16_t port) {
  if (remote_) return remote_->listen(port, true, true);
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->listening_ud.insert(port).second ? 0 : EADDRINUSE;
}

int ConnectionManager::stop_listening_ud(uint16_t port) {
  if (remote_) return remote_->listen(port, true, false);
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->listening_ud.erase(port) ? 0 : EINVAL;
}

int ConnectionManager::resolve_service(const wire::IpAddr& peer, uint16_t port, const ConnParam& p, uint64_t& id) {
  if (remote_) return remote_->connect(nullptr, 0, IBV_QPT_UD, peer, port, p, true, id);
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if (p.private_data.size() > kSidrReqPrivate - kCmaHeaderSize) return EINVAL;
  Conn c;
  if (!m.sgid_for(peer, c.sgid_index)) return EINVAL;
  c.id = m.next_id++;
  c.sidr = true;
  c.active = true;
  c.state = State::req_sent;
  c.local_id = m.new_comm_id();
  c.peer = peer;
  c.port = port;
  c.peer_port = p.local_port ? p.local_port : uint16_t(32768 + m.rng() % 28232);
  c.tid = uint64_t(2) << 32 | c.local_id;
  SidrReq r;
  r.request_id = c.local_id;
  r.service_id = service_id(PortSpace::udp, port);
  CmaHeader cma;
  cma.src = m.dev.gids()[c.sgid_index];
  cma.dst = peer;
  cma.src_port = c.peer_port;
  encode_cma_header(cma, r.private_data.data());
  std::copy(p.private_data.begin(), p.private_data.end(), r.private_data.begin() + kCmaHeaderSize);
  m.dev.resolve_neighbor(peer);
  id = c.id;
  Conn& stored = m.conns.emplace(c.id, c).first->second;
  // Linux's rdma_cm: the CM response timeout (4096 ms) between tries, 15 tries.
  m.send_and_retry(stored, encode(r, c.tid), cm_ms(kCmResponseTimeout), kMaxCmRetries);
  m.wake();
  return 0;
}

int ConnectionManager::accept_ud(uint64_t id, uint32_t qpn, uint32_t qkey, std::span<const uint8_t> private_data) {
  if (remote_) {
    ConnParam p;
    p.private_data.assign(private_data.begin(), private_data.end());
    return remote_->accept(id, nullptr, qpn, qkey, true, p);
  }
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.conns.find(id);
  if (it == m.conns.end() || !it->second.sidr || it->second.state != State::req_rcvd ||
      private_data.size() > kSidrRepPrivate || qpn == 0 || qpn > 0xffffff)
    return EINVAL;
  m.send_sidr_rep(it->second, SidrStatus::success, qpn, qkey, private_data);
  m.conns.erase(it);
  m.wake();  // a reply waiting for the peer's MAC goes out from the manager's thread
  return 0;
}

int ConnectionManager::reject(uint64_t id, std::span<const uint8_t> private_data) {
  if (remote_) return remote_->reject(id, private_data);
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.conns.find(id);
  if (it == m.conns.end() || it->second.state != State::req_rcvd || private_data.size() > kRejPrivate)
    return EINVAL;
  Conn& c = it->second;
  if (c.sidr) {
    if (private_data.size() > kSidrRepPrivate) return EINVAL;
    m.send_sidr_rep(c, SidrStatus::reject, 0, 0, private_data);
    m.conns.erase(it);
    m.wake();
    return 0;
  }
  Rej rej;
  rej.local_comm_id = c.local_id;
  rej.remote_comm_id = c.remote_id;
  rej.message_rejected = Msg::req;
  rej.reason = uint16_t(RejReason::consumer_defined);
  std::copy(private_data.begin(), private_data.end(), rej.private_data.begin());
  m.send(c.peer, c.sgid_index, encode(rej, c.tid));
  m.conns.erase(it);
  m.wake();
  return 0;
}

int ConnectionManager::disconnect(uint64_t id) {
  if (remote_) return remote_->disconnect(id);
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.conns.find(id);
  if (it == m.conns.end()) return EINVAL;
  // Already disconnecting (a DREQ either way): nothing more to send.
  if (it->second.state == State::dreq_sent || it->second.state == State::timewait) return 0;
  if (it->second.state != State::established) return EINVAL;
  Conn& c = it->second;
  m.fail_qp(c);
  m.send_dreq(c);
  m.wake();
  return 0;
}

void ConnectionManager::detach_qp(const QueuePair& qp) {
  if (remote_) return;  // the daemon detaches a QP its client destroys
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (auto& [id, c] : impl_->conns)
    if (c.qp == &qp) c.qp = nullptr;
}

// What Linux's ib_cm does when a CM ID is destroyed in each state
// (cm_destroy_id): a REQ of ours is withdrawn with REJ "timeout", a REQ or
// REP in progress is refused with REJ "consumer defined", an established
// connection is disconnected; TimeWait and a DREQ run out on their timers.
int ConnectionManager::flush_sends(int timeout_ms) {
  if (remote_) return 0;
  Impl& m = *impl_;
  const uint64_t start = now_ms();
  const uint64_t until = start + uint64_t(std::max(timeout_ms, 0));
  uint64_t resend_at = start + kExitResendMs;
  for (;;) {
    {
      // The manager's thread polls too; whoever polls first counts the
      // completion.
      std::lock_guard<std::mutex> lock(m.mu);
      m.poll_cq();
      // A DREQ that left may still be lost on the way (a peer's full
      // queue): Linux's CM, in the kernel, goes on resending it after the
      // process has gone; this process cannot. So it waits for the DREP,
      // and resends unanswered DREQs sooner than the CM's own timer would.
      bool unanswered = false;
      for (auto& [id, c] : m.conns)
        if (c.state == State::dreq_sent && c.has_pending) unanswered = true;
      if (m.sends_out == 0 && !unanswered) return 0;
      if (unanswered && now_ms() >= resend_at) {
        for (auto& [id, c] : m.conns)
          if (c.state == State::dreq_sent && c.has_pending) m.send(c.peer, c.sgid_index, c.pending);
        resend_at = now_ms() + kExitResendMs;
      }
    }
    if (now_ms() >= until) return ETIMEDOUT;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

int ConnectionManager::release(uint64_t id) {
  if (remote_) return remote_->release(id);
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.conns.find(id);
  if (it == m.conns.end()) return EINVAL;
  Conn& c = it->second;
  c.qp = nullptr;
  c.released = true;
  if (c.sidr) {
    // As Linux's ib_cm: a request being answered is refused; ours is dropped.
    if (!c.active) m.send_sidr_rep(c, SidrStatus::reject, 0, 0, {});
    m.conns.erase(it);
    m.wake();
    return 0;
  }
  auto send_rej = [&](RejReason why, Msg rejected) {
    Rej rej;
    rej.local_comm_id = c.local_id;
    rej.remote_comm_id = c.remote_id;
    rej.message_rejected = rejected;
    rej.reason = uint16_t(why);
    if (why == RejReason::timeout) {
      rej.ari_length = 8;
      for (int i = 0; i < 8; ++i) rej.ari[i] = uint8_t(m.guid >> (56 - 8 * i));
    }
    m.send(c.peer, c.sgid_index, encode(rej, c.tid));
  };
  switch (c.state) {
    case State::req_sent:
      send_rej(RejReason::timeout, Msg::req);
      break;
    case State::req_rcvd:
      send_rej(RejReason::consumer_defined, Msg::req);
      break;
    case State::rep_sent:
      send_rej(RejReason::consumer_defined, Msg::rep);
      break;
    case State::rep_rcvd:
      send_rej(RejReason::consumer_defined, Msg::rep);
      break;
    case State::established:
      m.send_dreq(c);
      m.wake();
      return 0;
    case State::dreq_sent:
    case State::timewait:
      return 0;
  }
  m.conns.erase(it);
  m.wake();
  return 0;
}

int ConnectionManager::event_fd() const { return remote_ ? remote_->event_fd() : impl_->event_fd; }

bool ConnectionManager::get_event(Event& out) {
  if (remote_) return remote_->get_event(out);
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if (m.events.empty()) return false;
  out = std::move(m.events.front());
  m.events.pop_front();
  if (m.events.empty()) {
    uint64_t v;
    if (read(m.event_fd, &v, sizeof v) < 0) {
    }
  }
  return true;
}

}  // namespace uroce::cm
