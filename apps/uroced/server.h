// SPDX-License-Identifier: BSD-3-Clause
// The service thread: the control sockets (one per port), the clients,
// their rings, and sleeping when there is nothing to do (docs/daemon.md).
#pragma once

#include <csignal>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "session.h"
#include "settings.h"

namespace uroced {

class Server {
 public:
  explicit Server(const Settings& settings) : settings_(settings) {}
  ~Server();
  // A port to serve (before listen): its device, the socket its clients
  // connect to, the DPDK port whose device maps huge-page regions for DMA,
  // what telemetry shows of it, and what to do each time the service thread
  // is about to sleep (write out its capture).
  void add_port(uroce::Device& device, const std::string& socket, uint16_t dma_port, const std::string& cc,
                std::function<void(PortView&)> view, std::function<void()> on_idle);
  // Creates each port's socket (its directory too), with the configured
  // mode and group.
  bool listen(std::string& error);
  // Until `stop` becomes non-zero.
  void run(const volatile std::sig_atomic_t& stop);
  // Answers telemetry's requests for snapshots (telemetry.h). Before listen().
  void serve_telemetry(Telemetry& telemetry) { telemetry_ = &telemetry; }

 private:
  // One port: its engine's device and what its clients reach it by.
  struct Port {
    uroce::Device* device = nullptr;
    std::string socket;
    std::string cc;  // its congestion control, as logged
    RegionMemory memory;
    std::unique_ptr<CmHub> cm;  // the port's connection manager, opened by the first client that asks
    int listen_fd = -1;
    bool accept_paused = false;  // out of descriptors: the listening socket is out of the epoll set
    std::unique_ptr<uroce::CompletionChannel> channel;
    std::function<void(PortView&)> view;
    std::function<void()> on_idle;
  };
  bool listen_port(uint32_t index, std::string& error);
  void accept_clients(uint32_t port);
  void drop(uint32_t id, const char* why);
  void on_event(uint64_t tag, uint32_t events);
  int service_all();
  bool idle_round();  // arms, looks once more; true if it may sleep
  void drain_channels();
  void wake_up();
  bool peer_allowed(const ucred& peer) const;
  void publish_telemetry(uint64_t request);

  const Settings& settings_;
  std::vector<Port> ports_;
  int epoll_fd_ = -1;
  std::unordered_map<uint32_t, std::unique_ptr<Session>> sessions_;
  std::unordered_map<uint32_t, uint32_t> port_of_;  // client id -> its port
  std::vector<Leftover> leftovers_;
  uint32_t next_id_ = 1;
  bool armed_ = false;
  Telemetry* telemetry_ = nullptr;
};

}  // namespace uroced
