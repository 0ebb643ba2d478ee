// SPDX-License-Identifier: BSD-3-Clause
// Event channels, the devices the ids live on, and the dispatcher: a
// thread that sleeps in epoll on the connection managers' event fds and
// turns each manager event into the rdma_cm event of the id it concerns.
#include <errno.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>

#include "../ibverbs/shim.h"
#include "cma.h"
#include "../../util/quiet_thread.h"

namespace uroce::abi::rdmacm {

Registry& registry() {
  // Never destroyed: the dispatcher thread may still run at exit.
  static Registry* r = new Registry;
  return *r;
}

// The channels handed out and not destroyed (under the registry's mutex):
// destroying one twice, as perftest's error path does, is then harmless.
std::vector<Channel*>& channels() {
  static auto* v = new std::vector<Channel*>;
  return *v;
}

std::vector<Id*>& ids() {
  static auto* v = new std::vector<Id*>;
  return *v;
}

void log_once(const std::string& key, const std::string& text) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (said.insert(key).second) std::fprintf(stderr, "uroce librdmacm: %s\n", text.c_str());
}

bool load_devices(Registry& r) {
  if (!r.devs.empty()) return true;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) return false;
  for (int i = 0; i < n; ++i) {
    auto d = std::make_unique<Dev>();
    d->device = list[i];
    // The configured addresses, known before the device opens.
    const std::string& text = rec_of(list[i])->settings.ip;
    size_t at = 0;
    while (at < text.size()) {
      size_t comma = text.find(',', at);
      if (comma == std::string::npos) comma = text.size();
      wire::IpAddr a;
      if (wire::IpAddr::parse(text.substr(at, comma - at), a)) d->addresses.push_back(a);
      at = comma + 1;
    }
    // A client of uroced has the daemon's addresses, known once it is open
    // (GID 0 is the link-local one).
    if (d->addresses.empty() && !rec_of(list[i])->settings.daemon.empty() &&
        (d->verbs = ibv_open_device(list[i])) != nullptr) {
      const auto& gids = ctx_of(d->verbs)->device().gids();
      for (size_t g = 1; g < gids.size(); ++g) d->addresses.push_back(gids[g]);
    }
    r.devs.push_back(std::move(d));
  }
  // The list stays allocated: the ibv_device pointers live as long.
  return !r.devs.empty();
}

namespace {

void dispatch(Registry& r);
void watch_signals(Registry& r);

// Each manager's connections are released, as the kernel's rdma_cm does
// when a process ends (established ones get their DREQ). Under mu.
constexpr int kFlushMs = 500;

void release_all(Registry& r) {
  bool released = false;
  for (auto& d : r.devs) {
    if (!d->cm) continue;
    for (auto& [conn, id] : d->conns) released |= d->cm->release(conn) == 0;
  }
  // The engine sends the DREQs and REJs the releases queued; the process
  // may end right after, so they must have left, not only been posted. On
  // a loaded machine the engine's thread may wait to be scheduled: the
  // bound stays under what a signal's handler waits for the release.
  if (!released) return;
  for (auto& d : r.devs)
    if (d->cm) d->cm->flush_sends(kFlushMs);
}

// At exit, before the drop-in libibverbs closes the devices (its atexit
// handler, registered at the first open, runs after this one): the
// connections are released and the managers stop while their devices
// still run.
void stop_at_exit() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  release_all(r);
  for (auto& d : r.devs) {
    if (!d->cm) continue;
    epoll_ctl(r.epoll_fd, EPOLL_CTL_DEL, d->cm->event_fd(), nullptr);
    DeviceRec& rec = *ctx_of(d->verbs)->rec;
    {
      std::lock_guard<std::mutex> control(rec.control);
      rec.before_qp_destroy = nullptr;
    }
    d->cm.reset();
  }
}

}  // namespace

int open_dev(Registry& r, Dev& d) {
  if (d.cm) return 0;
  const char* name = ibv_get_device_name(d.device);
  if (!d.verbs) {
    d.verbs = ibv_open_device(d.device);
    if (!d.verbs) return errno ? errno : ENODEV;
  }
  ibv_device_attr attr{};
  if (ibv_query_device(d.verbs, &attr) == 0) {
    d.max_responder_resources = uint8_t(std::min(attr.max_qp_rd_atom, 255));
    d.max_initiator_depth = uint8_t(std::min(attr.max_qp_init_rd_atom, 255));
  }
  std::string error;
  d.cm = cm::ConnectionManager::open(ctx_of(d.verbs)->device(), error);
  if (!d.cm) {
    log_once(std::string("cm:") + name, std::string("cannot run the connection manager on ") + name + ": " + error);
    return EBUSY;
  }
  if (r.epoll_fd < 0) r.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &d;
  if (r.epoll_fd < 0 || epoll_ctl(r.epoll_fd, EPOLL_CTL_ADD, d.cm->event_fd(), &ev) != 0) {
    const int err = errno;
    d.cm.reset();
    return err;
  }
  // Only a manager that stays is told of QPs about to be destroyed.
  DeviceRec& rec = *ctx_of(d.verbs)->rec;
  {
    std::lock_guard<std::mutex> lock(rec.control);
    rec.before_qp_destroy = [](void* cm, QueuePair& qp) { static_cast<cm::ConnectionManager*>(cm)->detach_qp(qp); };
    rec.before_qp_destroy_arg = d.cm.get();
  }
  if (!r.dispatching) {
    r.dispatching = true;
    r.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event wake{};
    wake.events = EPOLLIN;
    wake.data.ptr = &r;
    if (r.wake_fd >= 0) epoll_ctl(r.epoll_fd, EPOLL_CTL_ADD, r.wake_fd, &wake);
    watch_signals(r);
    uroce::util::quiet_thread("uroce-rdmacm", dispatch, std::ref(r)).detach();
    std::atexit(stop_at_exit);
  }
  return 0;
}

Dev* dev_for_address(Registry& r, const wire::IpAddr& addr) {
  if (!load_devices(r)) return nullptr;
  for (auto& d : r.devs)
    if (std::find(d->addresses.begin(), d->addresses.end(), addr) != d->addresses.end())
      return open_dev(r, *d) == 0 ? d.get() : nullptr;
  return nullptr;
}

Dev* dev_for_family(Registry& r, bool v4) {
  if (!load_devices(r)) return nullptr;
  for (auto& d : r.devs)
    for (const auto& a : d->addresses)
      if (a.is_v4_mapped() == v4) return open_dev(r, *d) == 0 ? d.get() : nullptr;
  return nullptr;
}

EventRec* new_event(Id& id, rdma_cm_event_type type, int status) {
  auto* e = new EventRec;
  e->ev.id = &id.id;
  e->ev.event = type;
  e->ev.status = status;
  return e;
}

void deliver(Id& owner, EventRec* e, rdma_event_channel* channel) {
  Channel* ch = channel_of(channel ? channel : owner.id.channel);
  {
    std::lock_guard<std::mutex> lock(ch->mu);
    ch->queue.push_back(e);
  }
  const uint64_t one = 1;
  if (write(ch->ch.fd, &one, sizeof one) < 0) {
  }
}

void withdraw(Id& id, rdma_event_channel* channel) {
  if (!channel) return;
  Channel* ch = channel_of(channel);
  std::lock_guard<std::mutex> lock(ch->mu);
  for (auto it = ch->queue.begin(); it != ch->queue.end();) {
    if ((*it)->ev.id == &id.id) {
      delete *it;
      it = ch->queue.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<Id*> withdraw_requests(Id& listener) {
  std::vector<Id*> out;
  Channel* ch = channel_of(listener.id.channel);
  std::lock_guard<std::mutex> lock(ch->mu);
  for (auto it = ch->queue.begin(); it != ch->queue.end();) {
    if ((*it)->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && (*it)->ev.listen_id == &listener.id) {
      out.push_back(id_of((*it)->ev.id));
      delete *it;
      it = ch->queue.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

namespace {

void set_private(EventRec& e, const std::vector<uint8_t>& data) {
  const size_t n = std::min(data.size(), e.data.size());
  std::memcpy(e.data.data(), data.data(), n);
  e.ev.param.conn.private_data = n ? e.data.data() : nullptr;
  e.ev.param.conn.private_data_len = uint8_t(n);
}

// A connection request for a port this process listens on: a new id,
// reported to the listener's channel (rdma_get_request's, for a
// synchronous listener).
void on_request(Dev& d, const cm::Event& ce) {
  auto& listeners = ce.ud ? d.ud_listeners : d.listeners;
  auto l = listeners.find(ce.port);
  if (l == listeners.end()) {
    d.cm->reject(ce.id, {});
    return;
  }
  Id& listener = *l->second;
  Id* child = new Id;
  rdma_cm_id& c = child->id;
  c.verbs = d.verbs;
  c.context = listener.id.context;
  c.ps = listener.id.ps;
  c.qp_type = listener.id.qp_type;
  c.port_num = 1;
  c.route.num_paths = 1;
  c.route.path_rec = &child->path;
  child->dev = &d;
  child->conn = ce.id;
  child->connected_once = true;
  child->bound = true;
  child->req_responder_resources = std::min(ce.responder_resources, d.max_responder_resources);
  child->req_initiator_depth = std::min(ce.initiator_depth, d.max_initiator_depth);
  const bool v4 = ce.peer.is_v4_mapped();
  set_sockaddr(c.route.addr.src_storage, ce.local, ce.port, v4);
  set_sockaddr(c.route.addr.dst_storage, ce.peer, ce.peer_port, v4);
  if (listener.sync) {
    child->sync = true;
    c.channel = create_channel_locked();
    if (!c.channel) {
      delete child;
      d.cm->reject(ce.id, {});
      return;
    }
  } else {
    c.channel = listener.id.channel;
  }
  d.conns[ce.id] = child;
  ids().push_back(child);
  EventRec* e = new_event(*child, RDMA_CM_EVENT_CONNECT_REQUEST);
  e->ev.listen_id = &listener.id;
  set_private(*e, ce.private_data);
  if (ce.ud) {
    // A SIDR REQ: its private data is all a UD request carries.
    deliver(*child, e, listener.id.channel);
    return;
  }
  auto& p = e->ev.param.conn;
  p.responder_resources = child->req_responder_resources;
  p.initiator_depth = child->req_initiator_depth;
  p.flow_control = ce.flow_control;
  p.retry_count = 7;
  p.rnr_retry_count = 7;
  p.qp_num = ce.peer_qpn;
  deliver(*child, e, listener.id.channel);
}

// The answer to a UD id's rdma_connect, as Linux's cma_sidr_rep_handler
// reports it: ESTABLISHED with what an address handle to the peer's QP
// needs, UNREACHABLE with the SIDR status for a refusal (or -ETIMEDOUT),
// ADDR_ERROR for a Q_Key other than the port space's.
void on_sidr_event(Dev& d, std::map<uint64_t, Id*>::iterator it, const cm::Event& ce) {
  Id& id = *it->second;
  d.conns.erase(it);
  id.conn = 0;
  EventRec* e = nullptr;
  if (ce.type == cm::EventType::established && ce.qkey != RDMA_UDP_QKEY) {
    e = new_event(id, RDMA_CM_EVENT_ADDR_ERROR, -EINVAL);
  } else if (ce.type == cm::EventType::established) {
    e = new_event(id, RDMA_CM_EVENT_ESTABLISHED);
    auto& ud = e->ev.param.ud;
    wire::IpAddr src, dst;
    to_ip(&id.id.route.addr.src_addr, src);
    to_ip(&id.id.route.addr.dst_addr, dst);
    ud.ah_attr.is_global = 1;
    std::memcpy(ud.ah_attr.grh.dgid.raw, dst.bytes.data(), 16);
    const auto at = std::find(d.addresses.begin(), d.addresses.end(), src);
    ud.ah_attr.grh.sgid_index = uint8_t(1 + (at - d.addresses.begin()));
    ud.ah_attr.grh.hop_limit = 64;
    ud.ah_attr.port_num = 1;
    ud.qp_num = ce.peer_qpn;
    ud.qkey = ce.qkey;
  } else {
    e = new_event(id, RDMA_CM_EVENT_UNREACHABLE, ce.status);
  }
  set_private(*e, ce.private_data);
  deliver(id, e);
}

void on_event(Dev& d, const cm::Event& ce) {
  if (ce.type == cm::EventType::connect_request) return on_request(d, ce);
  auto it = d.conns.find(ce.id);
  if (it == d.conns.end()) return;
  Id& id = *it->second;
  EventRec* e = nullptr;
  if (ce.ud) return on_sidr_event(d, it, ce);
  switch (ce.type) {
    case cm::EventType::established:
    case cm::EventType::connect_response:  // the REP, for a QP the program moves itself
      e = new_event(id, ce.type == cm::EventType::established ? RDMA_CM_EVENT_ESTABLISHED
                                                                : RDMA_CM_EVENT_CONNECT_RESPONSE);
      set_private(*e, ce.private_data);
      e->ev.param.conn.qp_num = ce.peer_qpn;
      e->ev.param.conn.flow_control = ce.flow_control;
      break;
    case cm::EventType::rejected:
      e = new_event(id, RDMA_CM_EVENT_REJECTED, ce.status);
      set_private(*e, ce.private_data);
      break;
    case cm::EventType::unreachable:
      e = new_event(id, RDMA_CM_EVENT_UNREACHABLE, ce.status);
      break;
    case cm::EventType::disconnected:
      e = new_event(id, RDMA_CM_EVENT_DISCONNECTED);
      break;
    case cm::EventType::connect_error:
      e = new_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -ce.status);
      break;
    case cm::EventType::connect_request:
      return;
  }
  // Only the disconnection of an established connection leaves the
  // manager something to finish (TimeWait); any other end forgets it.
  if (ce.type != cm::EventType::established && ce.type != cm::EventType::disconnected &&
      ce.type != cm::EventType::connect_response) {
    d.conns.erase(it);
    id.conn = 0;
  }
  deliver(id, e);
}

// A process ended by SIGINT, SIGTERM or SIGHUP runs no exit handler, yet
// its peers must hear that its connections end, as Linux's rdma_cm tells
// them when the process's descriptor closes. Where the signal would end the
// process (its default action, or uroce's own handler, which undoes the
// port's kernel state and then ends it), the handler wakes the dispatcher,
// waits until it has released the connections, and hands the signal to
// what was there before. A program's own handler is left alone: it may
// carry on, and if it exits, the exit handler releases.
int signal_fd = -1;
std::atomic<bool> released{false};
struct sigaction previous[NSIG];

bool ends_process(const struct sigaction& a) {
  if (a.sa_flags & SA_SIGINFO) return false;
  if (a.sa_handler == SIG_DFL) return true;
  if (a.sa_handler == SIG_IGN) return false;
  Dl_info info{};
  return dladdr(reinterpret_cast<void*>(a.sa_handler), &info) != 0 && info.dli_fname &&
         std::strstr(info.dli_fname, "/liburoce.so") != nullptr;
}

void on_signal(int sig) {
  const uint64_t one = 1;
  if (write(signal_fd, &one, sizeof one) < 0) {
  }
  // The release takes the registry's lock, which this thread may hold if
  // the signal came in the middle of a call: at most a second.
  for (int i = 0; i < 200 && !released.load(); ++i) {
    const timespec nap{0, 5000000};
    nanosleep(&nap, nullptr);
  }
  // This thread hands the signal on itself: blocked while the handler
  // runs, it is taken as the handler returns, before the program sees its
  // system call interrupted (sem_wait's EINTR), which it would take for a
  // failure of its own. Sent to the process instead, another thread might
  // take it while this one returns into the program.
  sigaction(sig, &previous[sig], nullptr);
  pthread_kill(pthread_self(), sig);
}

void watch_signals(Registry& r) {
  signal_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;
  if (signal_fd < 0 || epoll_ctl(r.epoll_fd, EPOLL_CTL_ADD, signal_fd, &ev) != 0) return;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || !ends_process(old)) continue;
    previous[sig] = old;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
}

void end_by_signal() {
  Registry& r = registry();
  {
    // The managers stay: the program's threads run on until the signal
    // ends the process, and may still call in.
    std::lock_guard<std::mutex> lock(r.mu);
    release_all(r);
  }
  released.store(true);
}

uint64_t now_ms() {
  return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

// The pending address resolutions whose MAC came or whose time is up.
void check_resolving(Registry& r) {
  const uint64_t now = now_ms();
  for (auto it = r.resolving.begin(); it != r.resolving.end();) {
    Id& id = *it->id;
    Device& dev = abi::ctx_of(id.dev->verbs)->device();
    wire::MacAddr mac;
    if (dev.neighbor_mac(it->peer, mac)) {
      deliver(id, new_event(id, RDMA_CM_EVENT_ADDR_RESOLVED));
    } else if (now >= it->deadline_ms) {
      // Linux's rdma_cm: the neighbour never answered.
      deliver(id, new_event(id, RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT));
    } else {
      if (now >= it->next_ask_ms) {
        dev.resolve_neighbor(it->peer);
        it->next_ask_ms = now + 1000;
      }
      ++it;
      continue;
    }
    it = r.resolving.erase(it);
  }
}

void dispatch(Registry& r) {
  epoll_event evs[8];
  for (;;) {
    int timeout = -1;
    {
      std::lock_guard<std::mutex> lock(r.mu);
      if (!r.resolving.empty()) timeout = 2;
    }
    const int n = epoll_wait(r.epoll_fd, evs, 8, timeout);
    {
      std::lock_guard<std::mutex> lock(r.mu);
      if (!r.resolving.empty()) check_resolving(r);
    }
    for (int i = 0; i < n; ++i) {
      if (!evs[i].data.ptr) {
        end_by_signal();
        continue;
      }
      if (evs[i].data.ptr == &r) {
        uint64_t v;
        if (read(r.wake_fd, &v, sizeof v) < 0) {
        }
        continue;
      }
      Dev& d = *static_cast<Dev*>(evs[i].data.ptr);
      cm::Event ce;
      std::lock_guard<std::mutex> lock(r.mu);
      while (d.cm && d.cm->get_event(ce)) on_event(d, ce);
    }
  }
}

}  // namespace

void resolve_address(Registry& r, Id& id, const wire::IpAddr& peer, int timeout_ms) {
  forget_resolution(r, id);
  Device& dev = abi::ctx_of(id.dev->verbs)->device();
  wire::MacAddr mac;
  if (dev.neighbor_mac(peer, mac)) {
    deliver(id, new_event(id, RDMA_CM_EVENT_ADDR_RESOLVED));
    return;
  }
  dev.resolve_neighbor(peer);
  const uint64_t now = now_ms();
  r.resolving.push_back({&id, peer, now + uint64_t(timeout_ms > 0 ? timeout_ms : 2000), now + 1000});
  const uint64_t one = 1;
  if (write(r.wake_fd, &one, sizeof one) < 0) {
  }
}

void forget_resolution(Registry& r, const Id& id) {
  std::erase_if(r.resolving, [&](const Resolving& x) { return x.id == &id; });
}

int sync_wait(Id& id) {
  if (id.id.event) {
    rdma_ack_cm_event(id.id.event);
    id.id.event = nullptr;
  }
  rdma_cm_event* e = nullptr;
  if (rdma_get_cm_event(id.id.channel, &e) != 0) return -1;
  id.id.event = e;
  if (e->status == 0) return 0;
  if (e->event == RDMA_CM_EVENT_REJECTED) return fail(ECONNREFUSED);
  return fail(e->status < 0 ? -e->status : e->status);
}

}  // namespace uroce::abi::rdmacm

using namespace uroce::abi::rdmacm;

#define UROCE_EXPORT extern "C" __attribute__((visibility("default")))

namespace uroce::abi::rdmacm {

rdma_event_channel* create_channel_locked() {
  auto* c = new Channel;
  c->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
  if (c->ch.fd < 0) {
    const int err = errno;
    delete c;
    errno = err;
    return nullptr;
  }
  channels().push_back(c);
  return &c->ch;
}

}  // namespace uroce::abi::rdmacm

UROCE_EXPORT rdma_event_channel* rdma_create_event_channel(void) {
  std::lock_guard<std::mutex> lock(registry().mu);
  return create_channel_locked();
}

namespace {

// The id whose count of events handed out and not acknowledged an event
// is on: a connection request is its listener's, as librdmacm charges it,
// so destroying the new id before acknowledging its request (UCX rejects
// so) does not wait on itself, and destroying the listener waits for it.
Id* charged_id(const rdma_cm_event& ev) {
  return ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && ev.listen_id ? id_of(ev.listen_id) : id_of(ev.id);
}

// Whether a thread other than the caller may still be waiting on C, or be
// on its way back to wait (it took the last event and is handling it).
// Such a thread, on Linux, sleeps in read() on a descriptor that close()
// does not wake, until the process ends; programs rely on it: Debian 12's
// rping destroys the channel while its event thread loops back for more.
bool may_be_waited_on(const Channel& c) {
  // Away first: a thread stops being away only once counted in as a reader,
  // and is away again before it is counted out.
  const pid_t t = c.away.load();
  if (t != 0 && t != gettid() && syscall(SYS_tgkill, getpid(), t, 0) == 0) return true;
  return c.readers.load() > 0;
}

}  // namespace

UROCE_EXPORT void rdma_destroy_event_channel(rdma_event_channel* channel) {
  if (!channel) return;
  Channel* c = channel_of(channel);
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    auto& all = channels();
    auto it = std::find(all.begin(), all.end(), c);
    if (it == all.end()) return;
    all.erase(it);
  }
  {
    std::lock_guard<std::mutex> qlock(c->mu);
    for (EventRec* e : c->queue) delete e;
    c->queue.clear();
  }
  // Kept, descriptor open and silent, for the thread that waits on it as it
  // would wait on Linux: freed, it would read a closed descriptor (EBADF)
  // or freed memory.
  if (may_be_waited_on(*c)) return;
  close(c->ch.fd);
  delete c;
}

UROCE_EXPORT int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
  if (!channel || !event) return fail(EINVAL);
  Channel* c = channel_of(channel);
  Registry& r = registry();
  // Counted in before the thread stops being away: rdma_destroy_event_channel
  // sees one or the other.
  ++c->readers;
  struct Out {
    Channel* c;
    ~Out() { --c->readers; }
  } out{c};
  pid_t self = gettid();
  c->away.compare_exchange_strong(self, 0);
  for (;;) {
    uint64_t v;
    // Blocks, or says EAGAIN, as the fd's O_NONBLOCK has it.
    if (read(c->ch.fd, &v, sizeof v) < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    std::lock_guard<std::mutex> lock(r.mu);
    std::lock_guard<std::mutex> qlock(c->mu);
    // Empty when rdma_destroy_id withdrew the event this count was for.
    if (c->queue.empty()) continue;
    EventRec* e = c->queue.front();
    c->queue.pop_front();
    ++charged_id(e->ev)->events_out;
    c->away.store(gettid());
    *event = &e->ev;
    return 0;
  }
}

UROCE_EXPORT int rdma_ack_cm_event(rdma_cm_event* event) {
  if (!event) return fail(EINVAL);
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    Id* id = charged_id(*event);
    --id->events_out;
    id->acked.notify_all();
  }
  delete event_of(event);
  return 0;
}

UROCE_EXPORT const char* rdma_event_str(rdma_cm_event_type event) {
  switch (event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: return "RDMA_CM_EVENT_ADDR_RESOLVED";
    case RDMA_CM_EVENT_ADDR_ERROR: return "RDMA_CM_EVENT_ADDR_ERROR";
    case RDMA_CM_EVENT_ROUTE_RESOLVED: return "RDMA_CM_EVENT_ROUTE_RESOLVED";
    case RDMA_CM_EVENT_ROUTE_ERROR: return "RDMA_CM_EVENT_ROUTE_ERROR";
    case RDMA_CM_EVENT_CONNECT_REQUEST: return "RDMA_CM_EVENT_CONNECT_REQUEST";
    case RDMA_CM_EVENT_CONNECT_RESPONSE: return "RDMA_CM_EVENT_CONNECT_RESPONSE";
    case RDMA_CM_EVENT_CONNECT_ERROR: return "RDMA_CM_EVENT_CONNECT_ERROR";
    case RDMA_CM_EVENT_UNREACHABLE: return "RDMA_CM_EVENT_UNREACHABLE";
    case RDMA_CM_EVENT_REJECTED: return "RDMA_CM_EVENT_REJECTED";
    case RDMA_CM_EVENT_ESTABLISHED: return "RDMA_CM_EVENT_ESTABLISHED";
    case RDMA_CM_EVENT_DISCONNECTED: return "RDMA_CM_EVENT_DISCONNECTED";
    case RDMA_CM_EVENT_DEVICE_REMOVAL: return "RDMA_CM_EVENT_DEVICE_REMOVAL";
    case RDMA_CM_EVENT_MULTICAST_JOIN: return "RDMA_CM_EVENT_MULTICAST_JOIN";
    case RDMA_CM_EVENT_MULTICAST_ERROR: return "RDMA_CM_EVENT_MULTICAST_ERROR";
    case RDMA_CM_EVENT_ADDR_CHANGE: return "RDMA_CM_EVENT_ADDR_CHANGE";
    case RDMA_CM_EVENT_TIMEWAIT_EXIT: return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
  }
  return "UNKNOWN EVENT";
}

UROCE_EXPORT int rdma_migrate_id(rdma_cm_id* id, rdma_event_channel* channel) {
  if (!id) return fail(EINVAL);
  Id* i = id_of(id);
  // No channel: the id becomes synchronous, on a channel of its own.
  rdma_event_channel* mine = channel ? nullptr : rdma_create_event_channel();
  if (!channel && !mine) return -1;
  // A synchronous id's last event is its own to acknowledge (libfabric
  // moves an id it resolved synchronously onto its event queue's channel).
  if (i->sync && id->event) {
    rdma_ack_cm_event(id->event);
    id->event = nullptr;
  }
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mu);
  // Events already handed out are acknowledged first, as librdmacm waits.
  i->acked.wait(lock, [&] { return i->events_out == 0; });
  rdma_event_channel* own = i->sync && id->channel != channel ? id->channel : nullptr;
  rdma_event_channel* from = id->channel;
  id->channel = channel ? channel : mine;
  i->sync = !channel;
  // Its events not yet handed out move with it (a listener's connection
  // requests are its own), as Linux's ucma_move_events moves them.
  if (from && from != id->channel) {
    std::vector<EventRec*> moving;
    {
      Channel* old = channel_of(from);
      std::lock_guard<std::mutex> qlock(old->mu);
      for (auto it = old->queue.begin(); it != old->queue.end();) {
        const rdma_cm_event& ev = (*it)->ev;
        if (ev.id == id || (ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && ev.listen_id == id)) {
          moving.push_back(*it);
          it = old->queue.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (EventRec* e : moving) deliver(*i, e, id->channel);
  }
  lock.unlock();
  rdma_destroy_event_channel(own);
  return 0;
}
