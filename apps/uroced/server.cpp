// SPDX-License-Identifier: BSD-3-Clause
#include "server.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <atomic>

#include "log.h"

namespace uroced {
namespace {

// epoll tags: the kind in the low 3 bits, above it a client id (kSock,
// kDoorbell) or a port's index (kListen, kChannel, kAsync, kCm).
enum Tag : uint64_t { kListen = 0, kChannel = 1, kSock = 2, kDoorbell = 3, kAsync = 4, kTelemetry = 5, kCm = 6 };
uint64_t tag(uint32_t id, Tag kind) { return (uint64_t(id) << 3) | kind; }

constexpr uint64_t kIdleBeforeSleepNs = 200'000;
constexpr unsigned kSocketCheckEvery = 64;  // busy rounds between looks at the sockets

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

bool make_dirs(const std::string& dir) {
  for (size_t at = 1; at != std::string::npos && at < dir.size(); ) {
    at = dir.find('/', at + 1);
    const std::string part = dir.substr(0, at);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

bool add_fd(int epfd, int fd, uint64_t t) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = t;
  return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

// A socket file that nobody answers on is left from a daemon that died.
bool socket_in_use(const sockaddr_un& addr) {
  const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  const bool used = connect(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  close(s);
  return used;
}

}  // namespace

Server::~Server() {
  if (telemetry_) telemetry_->close();
  for (auto& [id, s] : sessions_) {
    Leftover left;
    s->teardown(left);
    left.release();
  }
  sessions_.clear();
  for (auto& l : leftovers_) l.release();
  leftovers_.clear();
  for (Port& p : ports_) {
    p.channel.reset();
    p.cm.reset();
    if (p.listen_fd >= 0) {
      close(p.listen_fd);
      unlink(p.socket.c_str());
    }
  }
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

void Server::add_port(uroce::Device& device, const std::string& socket, uint16_t dma_port, const std::string& cc,
                      std::function<void(PortView&)> view, std::function<void()> on_idle) {
  Port p;
  p.device = &device;
  p.socket = socket;
  p.cc = cc;
  p.memory.hugepages = settings_.hugepage_regions == "auto";
  p.memory.dma_port = dma_port;
  p.cm = std::make_unique<CmHub>(device);
  p.view = std::move(view);
  p.on_idle = std::move(on_idle);
  ports_.push_back(std::move(p));
}

bool Server::listen(std::string& error) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0 || (telemetry_ && !add_fd(epoll_fd_, telemetry_->fd(), kTelemetry)))
    return error = std::string("epoll: ") + std::strerror(errno), false;
  for (uint32_t i = 0; i < ports_.size(); ++i)
    if (!listen_port(i, error)) return false;
  return true;
}

bool Server::listen_port(uint32_t index, std::string& error) {
  Port& p = ports_[index];
  const std::string& path = p.socket;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return error = "socket " + path + ": the path is empty or too long", false;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(path.substr(0, slash)))
    return error = "cannot create the socket's directory: " + std::string(std::strerror(errno)), false;
  if (socket_in_use(addr)) return error = path + ": another daemon listens there", false;
  unlink(path.c_str());
  p.listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (p.listen_fd < 0 || bind(p.listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return error = path + ": " + std::strerror(errno), false;
  mode_t mode = 0;
  parse_mode(settings_.socket_mode, mode);  // check_settings accepted it
  if (chmod(path.c_str(), mode) != 0) return error = "chmod " + path + ": " + std::strerror(errno), false;
  if (!settings_.socket_group.empty()) {
    const group* g = getgrnam(settings_.socket_group.c_str());
    char* end = nullptr;
    const unsigned long gid = g ? g->gr_gid : std::strtoul(settings_.socket_group.c_str(), &end, 10);
    if (g == nullptr && (end == nullptr || *end != '\0'))
      return error = "socket_group: no group '" + settings_.socket_group + "'", false;
    if (chown(path.c_str(), uid_t(-1), gid_t(gid)) != 0)
      return error = "chown " + path + ": " + std::strerror(errno), false;
  }
  if (::listen(p.listen_fd, 64) != 0) return error = std::string("listen: ") + std::strerror(errno), false;
  int err = 0;
  p.channel = p.device->create_comp_channel(err);
  if (!p.channel) return error = std::string("completion channel: ") + std::strerror(err), false;
  fcntl(p.channel->fd(), F_SETFL, fcntl(p.channel->fd(), F_GETFL) | O_NONBLOCK);
  if (!add_fd(epoll_fd_, p.listen_fd, tag(index, kListen)) || !add_fd(epoll_fd_, p.channel->fd(), tag(index, kChannel)) ||
      !add_fd(epoll_fd_, p.device->async_event_fd(), tag(index, kAsync)))
    return error = std::string("epoll: ") + std::strerror(errno), false;
  return true;
}

bool Server::peer_allowed(const ucred& peer) const {
  if (peer.uid == 0 || peer.uid == geteuid() || settings_.allow_uids.empty()) return true;
  return std::find(settings_.allow_uids.begin(), settings_.allow_uids.end(), peer.uid) != settings_.allow_uids.end();
}

void Server::accept_clients(uint32_t port) {
  Port& p = ports_[port];
  for (;;) {
    const int s = accept4(p.listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (s < 0 && (errno == EMFILE || errno == ENFILE) && !p.accept_paused) {
      // The connection waits in the backlog and the socket stays readable:
      // stop watching it until a client leaves, or the loop would spin.
      UROCED_LOG(WARNING, "out of descriptors: new clients wait until one leaves");
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, p.listen_fd, nullptr);
      p.accept_paused = true;
    }
    if (s < 0) return;
    ucred peer{};
    socklen_t len = sizeof peer;
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || !peer_allowed(peer)) {
      UROCED_LOG(WARNING, "refused a client (uid %u, pid %d)", unsigned(peer.uid), int(peer.pid));
      close(s);
      continue;
    }
    const uint32_t id = next_id_++;
    auto session = std::make_unique<Session>(*p.device, *p.channel, *p.cm, settings_.limits, p.memory, s, peer, id);
    if (!add_fd(epoll_fd_, s, tag(id, kSock))) continue;  // the session closes s
    if (ports_.size() == 1)
      UROCED_LOG(INFO, "client %u connected (pid %d, uid %u)", id, int(peer.pid), unsigned(peer.uid));
    else
      UROCED_LOG(INFO, "client %u connected to %s (pid %d, uid %u)", id, p.device->name().c_str(), int(peer.pid),
                 unsigned(peer.uid));
    sessions_.emplace(id, std::move(session));
    port_of_[id] = port;
  }
}

void Server::drop(uint32_t id, const char* why) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  Session& s = *it->second;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, s.sock(), nullptr);
  if (s.doorbell() >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, s.doorbell(), nullptr);
  Leftover left;
  s.teardown(left);
  if (!left.release()) leftovers_.push_back(std::move(left));
  UROCED_LOG(INFO, "client %u (pid %d) %s: its objects are gone", id, int(s.peer().pid), why);
  sessions_.erase(it);
  port_of_.erase(id);
  for (uint32_t i = 0; i < ports_.size(); ++i)
    if (ports_[i].accept_paused && add_fd(epoll_fd_, ports_[i].listen_fd, tag(i, kListen)))
      ports_[i].accept_paused = false;
}

void Server::on_event(uint64_t t, uint32_t events) {
  const uint32_t id = uint32_t(t >> 3);
  switch (Tag(t & 7)) {
    case kListen: accept_clients(id); return;
    case kAsync: {
      // The device's events, each to the client whose object it concerns.
      uroce::AsyncEvent ev;
      while (ports_[id].device->get_async_event(ev))
        for (auto& [sid, s] : sessions_)
          if (port_of_.at(sid) == id && s->forward_event(ev)) break;
      return;
    }
    // Its events only wake the loop. One may come after wake_up drained
    // the channel (a CQ that completes while its arming is withdrawn):
    // left there, the fd would end every sleep at once.
    case kChannel: return drain_channels();
    case kCm:
      ports_[id].cm->dispatch([this](uint32_t client) -> CmInbox* {
        auto it = sessions_.find(client);
        return it == sessions_.end() ? nullptr : &it->second->cm_inbox();
      });
      return;
    case kTelemetry: {  // the request is served at the top of the loop
      uint64_t v;
      (void)!read(telemetry_->fd(), &v, sizeof v);
      return;
    }
    case kDoorbell: {
      auto it = sessions_.find(id);
      uint64_t v;
      if (it != sessions_.end()) (void)!read(it->second->doorbell(), &v, sizeof v);
      return;
    }
    case kSock: {
      auto it = sessions_.find(id);
      if (it == sessions_.end()) return;
      Session& s = *it->second;
      const uint32_t port = port_of_.at(id);
      CmHub& cm = *ports_[port].cm;
      const bool had_arena = s.has_arena();
      const bool had_cm = cm.event_fd() >= 0;
      if (!(events & EPOLLIN) || !s.on_readable()) return drop(id, "disconnected");
      if (!had_arena && s.has_arena()) add_fd(epoll_fd_, s.doorbell(), tag(id, kDoorbell));
      // The first client that asked for the port's connection manager opened it.
      if (!had_cm && cm.event_fd() >= 0) add_fd(epoll_fd_, cm.event_fd(), tag(port, kCm));
      return;
    }
  }
}

int Server::service_all() {
  int work = 0;
  std::vector<uint32_t> broken;
  for (auto& [id, s] : sessions_) {
    work += s->service();
    if (s->broken()) broken.push_back(id);
  }
  for (uint32_t id : broken) drop(id, "corrupted its rings");
  return work;
}

bool Server::idle_round() {
  for (auto& [id, s] : sessions_) s->arm();
  armed_ = true;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Work published before the flags were seen goes now, not after a sleep.
  return service_all() == 0;
}

void Server::wake_up() {
  if (!armed_) return;
  armed_ = false;
  for (auto& [id, s] : sessions_) s->disarm();
  drain_channels();
}

void Server::drain_channels() {
  for (Port& p : ports_) {
    uroce::CompletionQueue* cq = nullptr;
    while (p.channel->get_event(cq) == 0) cq->ack_events(1);
  }
}

void Server::publish_telemetry(uint64_t request) {
  Snapshot s;
  for (Port& p : ports_) {
    PortView v;
    if (p.view) p.view(v);
    s.ports.push_back(std::move(v));
    s.counters.push_back(p.device->counters());
    s.cc.push_back(p.cc);
  }
  for (auto& [id, session] : sessions_) {
    ClientView c;
    session->describe(c, s.qps);
    s.clients.push_back(c);
  }
  std::sort(s.clients.begin(), s.clients.end(), [](const ClientView& a, const ClientView& b) { return a.id < b.id; });
  std::sort(s.qps.begin(), s.qps.end(), [](const QpView& a, const QpView& b) {
    return a.client != b.client ? a.client < b.client : a.qpn < b.qpn;
  });
  telemetry_->publish(std::move(s), request);
}

void Server::run(const volatile std::sig_atomic_t& stop) {
  uint64_t last_work = now_ns();
  unsigned busy_rounds = 0;
  epoll_event evs[32];
  while (!stop) {
    if (telemetry_)
      if (const uint64_t request = telemetry_->wanted()) publish_telemetry(request);
    const int work = service_all();
    if (!leftovers_.empty())
      leftovers_.erase(std::remove_if(leftovers_.begin(), leftovers_.end(), [](Leftover& l) { return l.release(); }),
                       leftovers_.end());
    int timeout = 0;
    if (work > 0) {
      last_work = now_ns();
      if (++busy_rounds % kSocketCheckEvery != 0) continue;
    } else if (now_ns() - last_work > kIdleBeforeSleepNs) {
      if (!idle_round()) {
        wake_up();
        last_work = now_ns();
        continue;
      }
      // Leftover regions wait for frames the engine frees: look again soon.
      timeout = leftovers_.empty() ? 500 : 1;
      for (Port& p : ports_)
        if (p.on_idle) p.on_idle();
    }
    const int n = epoll_wait(epoll_fd_, evs, 32, timeout);
    wake_up();
    if (n > 0) last_work = now_ns();
    for (int i = 0; i < n; ++i) on_event(evs[i].data.u64, evs[i].events);
  }
}

}  // namespace uroced
