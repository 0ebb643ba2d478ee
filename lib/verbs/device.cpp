// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/verbs/device.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "../engine/engine.h"
#include "../transport/qp.h"
#include "access.h"
#include "engine/engine_thread.h"
#include "remote.h"
#include "transport/cq_channel.h"
#include "uroce/verbs/completion_channel.h"
#include "uroce/verbs/completion_queue.h"
#include "uroce/verbs/protection_domain.h"

namespace uroce {

std::unique_ptr<Device> Device::open(const DeviceConfig& config, std::string& error) {
  if (!config.daemon_socket.empty()) {
    auto remote = detail::open_remote(config.daemon_socket, error);
    return remote ? std::unique_ptr<Device>(new Device(std::move(remote))) : nullptr;
  }
  if (config.port == nullptr || config.clock == nullptr) {
    error = "device " + config.name + ": a packet port and a clock are required";
    return nullptr;
  }
  if (config.gids.empty()) {
    error = "device " + config.name + ": the GID table is empty (give it an IPv4 or IPv6 address)";
    return nullptr;
  }
  if (config.vlan_id < -1 || config.vlan_id > 4094 || config.vlan_pcp > 7) {
    error = "device " + config.name + ": VLAN id " + std::to_string(config.vlan_id) + " or PCP " +
            std::to_string(config.vlan_pcp) + " out of range (id 0..4094 or -1 for none, PCP 0..7)";
    return nullptr;
  }
  auto engine = std::make_unique<engine::Engine>(config);
  if (!engine->init(error)) return nullptr;
  return std::unique_ptr<Device>(new Device(std::move(engine)));
}

Device::Device(std::unique_ptr<engine::Engine> engine)
    : engine_(std::move(engine)), thread_(std::make_unique<detail::EngineThread>(*engine_)) {}

Device::Device(std::unique_ptr<detail::RemoteDevice> remote) : remote_(std::move(remote)) {}

Device::~Device() {
  if (thread_) thread_->stop();
}

std::unique_ptr<ProtectionDomain> Device::alloc_pd() {
  if (remote_) {
    int err = 0;
    auto rpd = remote_->conn->alloc_pd(err);
    if (!rpd) return nullptr;
    std::unique_ptr<ProtectionDomain> pd(new ProtectionDomain(this, rpd->handle()));
    pd->remote_ = std::move(rpd);
    return pd;
  }
  detail::Pause pause(*thread_);
  return std::unique_ptr<ProtectionDomain>(new ProtectionDomain(this, next_pd_handle_++));
}

std::unique_ptr<CompletionQueue> Device::create_cq(int cqe, int& err) { return create_cq(cqe, nullptr, 0, err); }

std::unique_ptr<CompletionQueue> Device::create_cq(int cqe, CompletionChannel* channel, int comp_vector, int& err) {
  if (remote_) {
    if (comp_vector != 0 || (channel != nullptr && channel->device_ != this)) return err = EINVAL, nullptr;
    auto rcq = remote_->conn->create_cq(cqe, channel ? channel->remote_.get() : nullptr, err);
    if (!rcq) return nullptr;
    std::unique_ptr<CompletionQueue> cq(new CompletionQueue(std::move(rcq), channel, comp_vector));
    return cq;
  }
  if (cqe <= 0 || uint32_t(cqe) > engine_->device_config().limits.max_cqe || comp_vector < 0 ||
      comp_vector >= num_comp_vectors() || (channel != nullptr && channel->device_ != this)) {
    err = EINVAL;
    return nullptr;
  }
  detail::Pause pause(*thread_);
  std::unique_ptr<CompletionQueue> cq(new CompletionQueue(uint32_t(cqe), thread_.get(), channel, comp_vector));
  std::string why;
  if (!thread_->attach_cq(*cq->cq_, why)) {
    cq->cq_->set_channel(nullptr);
    err = ENOMEM;
    return nullptr;
  }
  if (channel != nullptr) detail::to_channel(*channel)->attach();
  err = 0;
  return cq;
}

std::unique_ptr<CompletionChannel> Device::create_comp_channel(int& err) {
  std::unique_ptr<CompletionChannel> ch(new CompletionChannel(this));
  if (remote_) {
    ch->remote_ = remote_->conn->create_comp_channel(err);
    return ch->remote_ ? std::move(ch) : nullptr;
  }
  if (!detail::to_channel(*ch)->open()) {
    err = errno;
    return nullptr;
  }
  err = 0;
  return ch;
}

int Device::poll() { return remote_ || thread_->threaded() ? 0 : engine_->poll(); }

bool Device::start_engine_thread(int cpu, std::string& error, Progress progress) {
  if (remote_) return true;  // the daemon's engine runs on its own thread
  if (!thread_->start(cpu, progress == Progress::kCallersDrive, error)) {
    error = "device " + name() + ": " + error;
    return false;
  }
  return true;
}

void Device::stop_engine_thread() {
  if (thread_) thread_->stop();
}
bool Device::engine_thread_running() const { return remote_ || thread_->threaded(); }

Device::Progress Device::progress() const {
  if (remote_) return Progress::kEngineThread;
  return thread_->threaded() && thread_->callers_drive() ? Progress::kCallersDrive : Progress::kEngineThread;
}

uint64_t Device::next_deadline_ns() const {
  if (remote_) return ~uint64_t(0);
  detail::Pause pause(*thread_);
  return engine_->next_deadline();
}

void Device::add_neighbor(const wire::IpAddr& ip, const wire::MacAddr& mac) {
  if (remote_) return;  // the daemon resolves
  detail::Pause pause(*thread_);
  engine_->add_neighbor(ip, mac);
}

NeighborState Device::resolve_neighbor(const wire::IpAddr& ip) {
  if (remote_) {
    uint32_t state = 0;
    uint8_t mac[6];
    if (remote_->conn->neighbor(ip.bytes.data(), true, state, mac) != 0) return NeighborState::failed;
    return NeighborState(state);
  }
  detail::Pause pause(*thread_);
  return engine_->resolve_neighbor(ip);
}

bool Device::neighbor_mac(const wire::IpAddr& ip, wire::MacAddr& mac) const {
  if (remote_) {
    uint32_t state = 0;
    if (remote_->conn->neighbor(ip.bytes.data(), false, state, mac.bytes.data()) != 0) return false;
    return NeighborState(state) == NeighborState::reachable;
  }
  detail::Pause pause(*thread_);
  return engine_->resolve(ip, mac);
}
const std::string& Device::name() const { return remote_ ? remote_->name : engine_->device_config().name; }
const std::vector<wire::IpAddr>& Device::gids() const {
  return remote_ ? remote_->gids : engine_->device_config().gids;
}
wire::MacAddr Device::mac() const { return remote_ ? remote_->mac : engine_->device_config().port->mac(); }
uint16_t Device::mtu() const { return remote_ ? remote_->mtu : engine_->device_config().port->mtu(); }
const DeviceLimits& Device::limits() const { return remote_ ? remote_->limits : engine_->device_config().limits; }

bool Device::get_async_event(AsyncEvent& ev) {
  if (remote_) return detail::remote_async_event(*remote_, ev, false) == 0;
  detail::Pause pause(*thread_);
  return engine_->take_async_event(ev);
}

int Device::async_event_fd() const { return remote_ ? remote_->conn->async_event_fd() : engine_->async_fd(); }

int Device::wait_async_event(AsyncEvent& ev) {
  if (remote_) return detail::remote_async_event(*remote_, ev, true);
  for (;;) {
    if (!thread_->threaded()) {
      const int flags = fcntl(engine_->async_fd(), F_GETFL);
      const bool nonblocking = flags >= 0 && (flags & O_NONBLOCK);
      while (!engine_->has_async_event()) {
        engine_->poll();
        if (nonblocking && !engine_->has_async_event()) return EAGAIN;
      }
    }
    uint64_t v;
    {
      detail::WaitScope scope(thread_.get());
      if (read(engine_->async_fd(), &v, sizeof v) != ssize_t(sizeof v)) return errno;
    }
    detail::Pause pause(*thread_);
    // Empty only if the event's object was destroyed meanwhile.
    if (engine_->take_async_event_counted(ev)) return 0;
  }
}

DeviceCounters Device::counters() const {
  if (remote_) return {};  // the daemon keeps them; clients read zero
  detail::Pause pause(*thread_);
  DeviceCounters c = engine_->counters();
  c.transport = engine_->retired();
  for (const transport::Qp* qp : engine_->qps()) c.transport += qp->counters;
  return c;
}

TransportCounters& TransportCounters::operator+=(const TransportCounters& o) {
  sent_pkts += o.sent_pkts;
  rcvd_pkts += o.rcvd_pkts;
  duplicate_request += o.duplicate_request;
  out_of_seq_request += o.out_of_seq_request;
  rcvd_rnr_err += o.rcvd_rnr_err;
  send_rnr_err += o.send_rnr_err;
  rcvd_seq_err += o.rcvd_seq_err;
  ack_deferred += o.ack_deferred;
  retry_exceeded_err += o.retry_exceeded_err;
  retry_rnr_exceeded_err += o.retry_rnr_exceeded_err;
  completer_retry_err += o.completer_retry_err;
  local_ack_timeout_err += o.local_ack_timeout_err;
  retransmitted_pkts += o.retransmitted_pkts;
  send_err += o.send_err;
  rdma_sends += o.rdma_sends;
  rdma_recvs += o.rdma_recvs;
  nak_sent += o.nak_sent;
  rcvd_nak += o.rcvd_nak;
  zero_copy_pkts += o.zero_copy_pkts;
  uc_msg_dropped += o.uc_msg_dropped;
  return *this;
}

}  // namespace uroce
