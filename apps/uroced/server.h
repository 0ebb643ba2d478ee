// SPDX-License-Identifier: BSD-3-Clause
// The service thread: the control socket, the clients, their rings, and
// sleeping when there is nothing to do (docs/daemon.md).
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
  Server(uroce::Device& device, const Settings& settings) : device_(device), settings_(settings), cm_(device) {
    memory_.hugepages = settings.hugepage_regions == "auto";
  }
  ~Server();
  // Creates the socket (its directory too), with the configured mode and group.
  bool listen(std::string& error);
  // Until `stop` becomes non-zero.
  void run(const volatile std::sig_atomic_t& stop);
  // The DPDK port whose device maps huge-page regions for DMA.
  void set_dma_port(uint16_t port) { memory_.dma_port = port; }
  // Called each time the service thread is about to sleep.
  void on_idle(std::function<void()> fn) { on_idle_ = std::move(fn); }
  // Answers telemetry's requests for snapshots (telemetry.h); `port` fills
  // in the port's part. Before listen().
  void serve_telemetry(Telemetry& telemetry, std::function<void(PortView&)> port) {
    telemetry_ = &telemetry;
    port_view_ = std::move(port);
  }

 private:
  void accept_clients();
  void drop(uint32_t id, const char* why);
  void on_event(uint64_t tag, uint32_t events);
  int service_all();
  bool idle_round();  // arms, looks once more; true if it may sleep
  void drain_channel();
  void wake_up();
  bool peer_allowed(const ucred& peer) const;
  void publish_telemetry(uint64_t request);

  uroce::Device& device_;
  const Settings& settings_;
  RegionMemory memory_;
  CmHub cm_;  // the port's connection manager, opened by the first client that asks
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  std::unique_ptr<uroce::CompletionChannel> channel_;
  std::unordered_map<uint32_t, std::unique_ptr<Session>> sessions_;
  std::vector<Leftover> leftovers_;
  uint32_t next_id_ = 1;
  bool armed_ = false;
  bool accept_paused_ = false;
  std::function<void()> on_idle_;
  Telemetry* telemetry_ = nullptr;
  std::function<void(PortView&)> port_view_;  // out of descriptors: the listening socket is out of the epoll set
};

}  // namespace uroced
