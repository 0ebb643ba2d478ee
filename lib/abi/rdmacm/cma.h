// SPDX-License-Identifier: BSD-3-Clause
// The objects the drop-in librdmacm hands out (docs/cm.md): each public
// struct (rdma_event_channel, rdma_cm_id, rdma_cm_event) is the first
// member of a record with the state behind it, as the drop-in libibverbs
// does for its own. Below this layer: the drop-in libibverbs' public verbs
// and records (../ibverbs/shim.h, the same build) and uroce's connection
// manager, one per device, on the device the records name.
#pragma once

#include <rdma/rdma_cma.h>

#include <sys/types.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "uroce/cm/connection_manager.h"
#include "uroce/wire/ip_addr.h"

namespace uroce::abi::rdmacm {

struct Id;

// An event handed out by rdma_get_cm_event, with room for the private data
// it points to (a REP's 196 bytes at most).
struct EventRec {
  rdma_cm_event ev{};
  std::array<uint8_t, 256> data{};
};

// The channel's fd is a semaphore eventfd: it counts the queued events, so
// it polls readable while one waits and a non-blocking read says EAGAIN.
struct Channel {
  rdma_event_channel ch{};
  std::mutex mu;
  std::deque<EventRec*> queue;
  // Threads inside rdma_get_cm_event, and the one that last took an event
  // and has not come back for the next (rdma_destroy_event_channel).
  std::atomic<int> readers{0};
  std::atomic<pid_t> away{0};
};

// One per verbs device, once an id needs it: the context every id on it
// shares (id->verbs), the device's connection manager and a default PD.
struct Dev {
  ibv_device* device = nullptr;
  ibv_context* verbs = nullptr;
  std::unique_ptr<cm::ConnectionManager> cm;
  ibv_pd* pd = nullptr;
  uint8_t max_responder_resources = 0;  // ibv_device_attr's max_qp_rd_atom
  uint8_t max_initiator_depth = 0;      // and max_qp_init_rd_atom
  std::vector<wire::IpAddr> addresses;  // GIDs 1, 2, ...: the configured ones
  std::map<uint16_t, Id*> listeners;    // by port
  std::map<uint16_t, Id*> ud_listeners;  // by port, in the UDP port space (SIDR)
  std::map<uint64_t, Id*> conns;        // by the manager's connection id
};

struct Id {
  rdma_cm_id id{};
  Dev* dev = nullptr;
  uint64_t conn = 0;  // the manager's id for this id's connection; 0: none
  bool bound = false;
  // The id holds its source port against other binds: not an id made by a
  // connection request, which shares its listener's (as Linux's do).
  bool owns_port = false;
  bool listening = false;
  std::vector<Dev*> listen_on;  // the devices a listener listens on
  // Created without a channel: calls wait for their own outcome on a
  // channel of the id's own (rdma_create_ep, rdma_get_request).
  bool sync = false;
  // Events handed out for this id by rdma_get_cm_event and not yet
  // acknowledged (under the registry's mutex): destroy waits for them, and
  // drops those still queued.
  int events_out = 0;
  std::condition_variable acked;
  // What the connection request asked of this side (the passive side's
  // defaults for rdma_accept).
  uint8_t req_responder_resources = 0;
  uint8_t req_initiator_depth = 0;
  ibv_sa_path_rec path{};
  bool own_cqs = false;  // rdma_create_qp made id->send_cq and recv_cq
  // A connection was ever asked for or requested on this id (Linux's
  // cm_id.ib, which lives until the id does): rdma_disconnect succeeds
  // from then on, even after the connection is gone.
  bool connected_once = false;
  // rdma_create_ep of a passive id: the QP that rdma_get_request makes on
  // each new id.
  std::unique_ptr<ibv_qp_init_attr> ep_qp_attr;
  ibv_pd* ep_pd = nullptr;
};

inline Channel* channel_of(rdma_event_channel* c) { return reinterpret_cast<Channel*>(c); }
inline Id* id_of(rdma_cm_id* i) { return reinterpret_cast<Id*>(i); }
inline EventRec* event_of(rdma_cm_event* e) { return reinterpret_cast<EventRec*>(e); }

// The registry of devices and the thread that turns the managers' events
// into rdma_cm events. Every id's fields change under mu.
// An rdma_resolve_addr waiting for the peer's MAC: ADDR_RESOLVED once the
// engine knows it, ADDR_ERROR (-ETIMEDOUT) at the deadline.
struct Resolving {
  Id* id;
  wire::IpAddr peer;
  uint64_t deadline_ms;
  uint64_t next_ask_ms;  // ARP/ND asked again each second
};

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<Dev>> devs;  // one per verbs device, in list order
  int epoll_fd = -1;                       // the managers' event fds
  int wake_fd = -1;                        // a new resolution wakes the dispatcher
  bool dispatching = false;
  std::vector<Resolving> resolving;
};
Registry& registry();

// The device list, read once (under mu).
bool load_devices(Registry& r);
// Opens `d` (its context and connection manager) if it is not yet open.
// An errno, with a line on stderr saying why.
int open_dev(Registry& r, Dev& d);
// The device with `addr` among its addresses (opened), or nullptr.
Dev* dev_for_address(Registry& r, const wire::IpAddr& addr);
// The first device with an address of `addr`'s family (opened), or nullptr.
Dev* dev_for_family(Registry& r, bool v4);

// Queues `e` on `channel`, by default the one `owner` reports to (under mu).
void deliver(Id& owner, EventRec* e, rdma_event_channel* channel = nullptr);
// Reports the address resolution of `id` towards `peer` (ids.cpp's
// rdma_resolve_addr) now if the peer's MAC is known, else when the
// dispatcher learns it or `timeout_ms` has passed (under mu).
void resolve_address(Registry& r, Id& id, const wire::IpAddr& peer, int timeout_ms);
// Forgets the pending resolution of `id` (under mu).
void forget_resolution(Registry& r, const Id& id);
// Withdraws the events about `id` still queued on `channel` (under mu).
void withdraw(Id& id, rdma_event_channel* channel);
// Withdraws the connection requests still queued for `listener` and hands
// back their ids, for the caller to release (under mu).
std::vector<Id*> withdraw_requests(Id& listener);
// A new event about `id`, with no parameters.
EventRec* new_event(Id& id, rdma_cm_event_type type, int status = 0);
// Waits for the next event of a synchronous id and keeps it in id->event;
// 0, or -1 with errno set from a failed outcome (librdmacm's rules:
// REJECTED is ECONNREFUSED, any other status its own errno).
int sync_wait(Id& id);

// Address helpers.
bool to_ip(const sockaddr* sa, wire::IpAddr& out, uint16_t* port = nullptr);
void set_sockaddr(sockaddr_storage& ss, const wire::IpAddr& ip, uint16_t port, bool v4);
uint16_t port_of(const sockaddr* sa);
// A port no id of this process uses, from Linux's ephemeral range.
uint16_t ephemeral_port(Registry& r);
bool port_in_use(Registry& r, uint16_t port, const Id* except);

// A new event channel, under mu (rdma_create_event_channel takes it).
rdma_event_channel* create_channel_locked();
// Live channels and ids (under mu): a port is held by one id at a time,
// and a call on an object already destroyed fails.
std::vector<Channel*>& channels();
std::vector<Id*>& ids();

// One line on stderr prefixed "uroce librdmacm: ", once per key.
void log_once(const std::string& key, const std::string& text);

// Sets errno and returns -1, librdmacm's failure convention.
inline int fail(int err) {
  errno = err;
  return -1;
}

}  // namespace uroce::abi::rdmacm
