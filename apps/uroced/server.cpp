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

// epoll tags: the kind in the low 3 bits, a client id above.
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
  channel_.reset();
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(settings_.socket.c_str());
  }
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

bool Server::listen(std::string& error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (settings_.socket.empty() || settings_.socket.size() >= sizeof addr.sun_path)
    return error = "--socket: the path is empty or too long", false;
  std::memcpy(addr.sun_path, settings_.socket.c_str(), settings_.socket.size());
  const size_t slash = settings_.socket.rfind('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(settings_.socket.substr(0, slash)))
    return error = "cannot create the socket's directory: " + std::string(std::strerror(errno)), false;
  if (socket_in_use(addr)) return error = settings_.socket + ": another daemon listens there", false;
  unlink(settings_.socket.c_str());
  listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return error = settings_.socket + ": " + std::strerror(errno), false;
  mode_t mode = 0;
  parse_mode(settings_.socket_mode, mode);  // check_settings accepted it
  if (chmod(settings_.socket.c_str(), mode) != 0) return error = "chmod " + settings_.socket + ": " + std::strerror(errno), false;
  if (!settings_.socket_group.empty()) {
    const group* g = getgrnam(settings_.socket_group.c_str());
    char* end = nullptr;
    const unsigned long gid = g ? g->gr_gid : std::strtoul(settings_.socket_group.c_str(), &end, 10);
    if (g == nullptr && (end == nullptr || *end != '\0'))
      return error = "socket_group: no group '" + settings_.socket_group + "'", false;
    if (chown(settings_.socket.c_str(), uid_t(-1), gid_t(gid)) != 0)
      return error = "chown " + settings_.socket + ": " + std::strerror(errno), false;
  }
  if (::listen(listen_fd_, 64) != 0) return error = std::string("listen: ") + std::strerror(errno), false;
  int err = 0;
  channel_ = device_.create_comp_channel(err);
  if (!channel_) return error = std::string("completion channel: ") + std::strerror(err), false;
  fcntl(channel_->fd(), F_SETFL, fcntl(channel_->fd(), F_GETFL) | O_NONBLOCK);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0 || !add_fd(epoll_fd_, listen_fd_, kListen) || !add_fd(epoll_fd_, channel_->fd(), kChannel) ||
      !add_fd(epoll_fd_, device_.async_event_fd(), kAsync) ||
      (telemetry_ && !add_fd(epoll_fd_, telemetry_->fd(), kTelemetry)))
    return error = std::string("epoll: ") + std::strerror(errno), false;
  return true;
}

bool Server::peer_allowed(const ucred& peer) const {
  if (peer.uid == 0 || peer.uid == geteuid() || settings_.allow_uids.empty()) return true;
  return std::find(settings_.allow_uids.begin(), settings_.allow_uids.end(), peer.uid) != settings_.allow_uids.end();
}

void Server::accept_clients() {
  for (;;) {
    const int s = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (s < 0 && (errno == EMFILE || errno == ENFILE) && !accept_paused_) {
      // The connection waits in the backlog and the socket stays readable:
      // stop watching it until a client leaves, or the loop would spin.
      UROCED_LOG(WARNING, "out of descriptors: new clients wait until one leaves");
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
      accept_paused_ = true;
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
    auto session = std::make_unique<Session>(device_, *channel_, cm_, settings_.limits, memory_, s, peer, id);
    if (!add_fd(epoll_fd_, s, tag(id, kSock))) continue;  // the session closes s
    UROCED_LOG(INFO, "client %u connected (pid %d, uid %u)", id, int(peer.pid), unsigned(peer.uid));
    sessions_.emplace(id, std::move(session));
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
  if (accept_paused_ && add_fd(epoll_fd_, listen_fd_, kListen)) accept_paused_ = false;
}

void Server::on_event(uint64_t t, uint32_t events) {
  const uint32_t id = uint32_t(t >> 3);
  switch (Tag(t & 7)) {
    case kListen: accept_clients(); return;
    case kAsync: {
      // The device's events, each to the client whose object it concerns.
      uroce::AsyncEvent ev;
      while (device_.get_async_event(ev))
        for (auto& [sid, s] : sessions_)
          if (s->forward_event(ev)) break;
      return;
    }
    // Its events only wake the loop. One may come after wake_up drained
    // the channel (a CQ that completes while its arming is withdrawn):
    // left there, the fd would end every sleep at once.
    case kChannel: return drain_channel();
    case kCm:
      cm_.dispatch([this](uint32_t client) -> CmInbox* {
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
      const bool had_arena = s.has_arena();
      const bool had_cm = cm_.event_fd() >= 0;
      if (!(events & EPOLLIN) || !s.on_readable()) return drop(id, "disconnected");
      if (!had_arena && s.has_arena()) add_fd(epoll_fd_, s.doorbell(), tag(id, kDoorbell));
      // The first client that asked for the connection manager opened it.
      if (!had_cm && cm_.event_fd() >= 0) add_fd(epoll_fd_, cm_.event_fd(), kCm);
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
  drain_channel();
}

void Server::drain_channel() {
  uroce::CompletionQueue* cq = nullptr;
  while (channel_->get_event(cq) == 0) cq->ack_events(1);
}

void Server::publish_telemetry(uint64_t request) {
  Snapshot s;
  if (port_view_) port_view_(s.port);
  for (auto& [id, session] : sessions_) {
    ClientView c;
    session->describe(c, s.qps);
    s.clients.push_back(c);
  }
  std::sort(s.clients.begin(), s.clients.end(), [](const ClientView& a, const ClientView& b) { return a.id < b.id; });
  std::sort(s.qps.begin(), s.qps.end(), [](const QpView& a, const QpView& b) {
    return a.client != b.client ? a.client < b.client : a.qpn < b.qpn;
  });
  s.counters = device_.counters();
  s.cc = uroce::cc::describe(settings_.cc_resolved);
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
      if (on_idle_) on_idle_();
    }
    const int n = epoll_wait(epoll_fd_, evs, 32, timeout);
    wake_up();
    if (n > 0) last_work = now_ns();
    for (int i = 0; i < n; ++i) on_event(evs[i].data.u64, evs[i].events);
  }
}

}  // namespace uroced
