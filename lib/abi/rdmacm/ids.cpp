// SPDX-License-Identifier: BSD-3-Clause
// rdma_cm ids: binding and resolving addresses, listening, connecting,
// accepting, rejecting and disconnecting through the device's connection
// manager, and the QPs made on an id.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "../ibverbs/shim.h"
#include "cma.h"

namespace uroce::abi::rdmacm {

bool to_ip(const sockaddr* sa, wire::IpAddr& out, uint16_t* port) {
  if (!sa) return false;
  if (sa->sa_family == AF_INET) {
    const auto* s = reinterpret_cast<const sockaddr_in*>(sa);
    out = wire::IpAddr::from_v4(reinterpret_cast<const uint8_t*>(&s->sin_addr));
    if (port) *port = ntohs(s->sin_port);
    return true;
  }
  if (sa->sa_family == AF_INET6) {
    const auto* s = reinterpret_cast<const sockaddr_in6*>(sa);
    out = wire::IpAddr::from_v6(s->sin6_addr.s6_addr);
    if (port) *port = ntohs(s->sin6_port);
    return true;
  }
  return false;
}

void set_sockaddr(sockaddr_storage& ss, const wire::IpAddr& ip, uint16_t port, bool v4) {
  std::memset(&ss, 0, sizeof ss);
  if (v4) {
    auto* s = reinterpret_cast<sockaddr_in*>(&ss);
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    std::memcpy(&s->sin_addr, ip.v4_bytes(), 4);
  } else {
    auto* s = reinterpret_cast<sockaddr_in6*>(&ss);
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    std::memcpy(s->sin6_addr.s6_addr, ip.bytes.data(), 16);
  }
}

uint16_t port_of(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(sa)->sin_port);
  if (sa->sa_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port);
  return 0;
}

// The UDP port space is apart from the others, as Linux's are.
bool port_in_use(Registry&, uint16_t port, bool udp, const Id* except) {
  for (const Id* i : ids())
    if (i != except && i->owns_port && (i->id.ps == RDMA_PS_UDP) == udp &&
        port_of(&i->id.route.addr.src_addr) == port)
      return true;
  return false;
}

uint16_t ephemeral_port(Registry& r, bool udp) {
  static std::mt19937 rng{std::random_device{}()};
  for (;;) {
    const uint16_t p = uint16_t(32768 + rng() % 28232);  // Linux's ip_local_port_range
    if (!port_in_use(r, p, udp, nullptr)) return p;
  }
}

}  // namespace uroce::abi::rdmacm

using namespace uroce::abi::rdmacm;
using namespace uroce;

#define UROCE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

bool wildcard(const wire::IpAddr& a) {
  static const wire::IpAddr any4 = wire::IpAddr::from_v4(std::array<uint8_t, 4>{}.data());
  return a == wire::IpAddr{} || a == any4;
}

bool loopback(const wire::IpAddr& a) {
  static const wire::IpAddr v6 = [] {
    wire::IpAddr x;
    x.bytes[15] = 1;
    return x;
  }();
  return (a.is_v4_mapped() && a.v4_bytes()[0] == 127) || a == v6;
}

// The id's device and what goes with it: its context, port 1.
void attach(Id& id, Dev& d) {
  id.dev = &d;
  id.id.verbs = d.verbs;
  id.id.port_num = 1;
  // librdmacm's default PD, one per device, shared by the ids on it.
  if (!d.pd) d.pd = ibv_alloc_pd(d.verbs);
  if (!id.id.pd) id.id.pd = d.pd;
}

int bind_locked(Registry& r, Id& id, const sockaddr* addr) {
  wire::IpAddr ip;
  uint16_t port = 0;
  if (!to_ip(addr, ip, &port)) return fail(EAFNOSUPPORT);
  if (id.bound) return fail(EINVAL);
  const bool udp = id.id.ps == RDMA_PS_UDP;
  if (port && port_in_use(r, port, udp, &id)) return fail(EADDRINUSE);
  // As Linux's rdma_cm (cma_any_addr): a loopback address binds like the
  // wildcard, to no device, and a listen on it takes requests on every
  // device. libfabric's verbs provider, finding no device on such an id,
  // puts the device's own address in its place.
  if (!wildcard(ip) && !loopback(ip)) {
    Dev* d = dev_for_address(r, ip);
    if (!d) return fail(EADDRNOTAVAIL);
    attach(id, *d);
  }
  if (!port) port = ephemeral_port(r, udp);
  set_sockaddr(id.id.route.addr.src_storage, ip, port, addr->sa_family == AF_INET);
  id.bound = id.owns_port = true;
  return 0;
}

ibv_qp_type qp_type_of(rdma_port_space ps) { return ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC; }

cm::ConnParam conn_param(const rdma_conn_param* p, uint8_t default_rr, uint8_t default_id) {
  cm::ConnParam c;
  if (!p) {
    c.responder_resources = default_rr;
    c.initiator_depth = default_id;
    return c;
  }
  c.private_data.assign(static_cast<const uint8_t*>(p->private_data),
                        static_cast<const uint8_t*>(p->private_data) + (p->private_data ? p->private_data_len : 0));
  // RDMA_MAX_RESP_RES and RDMA_MAX_INIT_DEPTH ask for the default: the
  // device's maximum, or on the passive side what the request asked.
  c.responder_resources = p->responder_resources == RDMA_MAX_RESP_RES ? default_rr : p->responder_resources;
  c.initiator_depth = p->initiator_depth == RDMA_MAX_INIT_DEPTH ? default_id : p->initiator_depth;
  c.retry_count = std::min<uint8_t>(p->retry_count, 7);
  c.rnr_retry_count = std::min<uint8_t>(p->rnr_retry_count, 7);
  c.flow_control = p->flow_control != 0;
  return c;
}

bool param_fits(const Dev& d, const cm::ConnParam& c) {
  return c.responder_resources <= d.max_responder_resources && c.initiator_depth <= d.max_initiator_depth;
}

QueuePair& qp_impl(ibv_qp* qp) { return *abi::qp_of(qp)->impl; }

// Whether `id` is one this library handed out and has not destroyed: a
// call on anything else fails with EINVAL instead of reading through it
// (perftest's error path resolves an id it destroyed).
bool live(rdma_cm_id* id) {
  if (!id) return false;
  std::lock_guard<std::mutex> lock(registry().mu);
  const auto& all = ids();
  return std::find(all.begin(), all.end(), id_of(id)) != all.end();
}

}  // namespace

UROCE_EXPORT int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context, rdma_port_space ps) {
  if (!id) return fail(EINVAL);
  if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB && ps != RDMA_PS_IPOIB) return fail(EINVAL);
  auto* i = new Id;
  i->sync = !channel;
  i->id.channel = channel ? channel : rdma_create_event_channel();
  if (!i->id.channel) {
    delete i;
    return -1;
  }
  i->id.context = context;
  i->id.ps = ps;
  i->id.qp_type = qp_type_of(ps);
  i->id.route.path_rec = &i->path;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  ids().push_back(i);
  *id = &i->id;
  return 0;
}

UROCE_EXPORT int rdma_destroy_id(rdma_cm_id* id) {
  if (!live(id)) return fail(EINVAL);
  Registry& r = registry();
  Id* i = id_of(id);
  if (i->sync && id->event) {
    rdma_ack_cm_event(id->event);
    id->event = nullptr;
  }
  std::unique_lock<std::mutex> lock(r.mu);
  // As librdmacm: the events handed out for the id are acknowledged first;
  // those not yet handed out are dropped.
  i->acked.wait(lock, [&] { return i->events_out == 0; });
  forget_resolution(r, *i);
  withdraw(*i, id->channel);
  // Requests the program never took die with their listener, as Linux's
  // rdma_cm destroys their ids: the peers get REJ 28.
  std::vector<Id*> orphans = i->listening ? withdraw_requests(*i) : std::vector<Id*>{};
  for (Id* c : orphans) {
    if (c->conn && c->dev && c->dev->cm) {
      c->dev->cm->release(c->conn);
      c->dev->conns.erase(c->conn);
    }
    auto& all = ids();
    all.erase(std::remove(all.begin(), all.end(), c), all.end());
  }
  // After the exit handler (stop_at_exit) the managers are gone and their
  // connections already released.
  if (i->conn && i->dev && i->dev->cm) {
    i->dev->cm->release(i->conn);
    i->dev->conns.erase(i->conn);
  }
  for (Dev* d : i->listen_on) {
    const uint16_t port = port_of(&id->route.addr.src_addr);
    if (id->ps == RDMA_PS_UDP) {
      if (d->cm) d->cm->stop_listening_ud(port);
      d->ud_listeners.erase(port);
    } else {
      if (d->cm) d->cm->stop_listening(port);
      d->listeners.erase(port);
    }
  }
  auto& all = ids();
  all.erase(std::remove(all.begin(), all.end(), i), all.end());
  lock.unlock();
  for (Id* c : orphans) {
    if (c->sync) rdma_destroy_event_channel(c->id.channel);
    delete c;
  }
  if (i->sync) rdma_destroy_event_channel(id->channel);
  delete i;
  return 0;
}

UROCE_EXPORT int rdma_bind_addr(rdma_cm_id* id, sockaddr* addr) {
  if (!live(id) || !addr) return fail(EINVAL);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return bind_locked(r, *id_of(id), addr);
}

UROCE_EXPORT int rdma_resolve_addr(rdma_cm_id* id, sockaddr* src_addr, sockaddr* dst_addr, int timeout_ms) {
  if (!live(id) || !dst_addr) return fail(EINVAL);
  Registry& r = registry();
  Id& i = *id_of(id);
  {
    std::lock_guard<std::mutex> lock(r.mu);
    wire::IpAddr dst;
    uint16_t dport = 0;
    if (!to_ip(dst_addr, dst, &dport)) return fail(EAFNOSUPPORT);
    if (src_addr && !i.bound && bind_locked(r, i, src_addr) != 0) return -1;
    if (!i.dev) {
      Dev* d = dev_for_family(r, dst.is_v4_mapped());
      if (!d) return fail(EADDRNOTAVAIL);
      attach(i, *d);
      const uint16_t port = i.bound ? port_of(&id->route.addr.src_addr) : ephemeral_port(r, id->ps == RDMA_PS_UDP);
      const wire::IpAddr& local = *std::find_if(d->addresses.begin(), d->addresses.end(),
                                                [&](const wire::IpAddr& a) { return a.is_v4_mapped() == dst.is_v4_mapped(); });
      set_sockaddr(id->route.addr.src_storage, local, port, dst_addr->sa_family == AF_INET);
      i.bound = i.owns_port = true;
    }
    set_sockaddr(id->route.addr.dst_storage, dst, dport, dst_addr->sa_family == AF_INET);
    // As Linux: resolved once the peer's MAC is known (ARP/ND), else
    // ADDR_ERROR after timeout_ms.
    resolve_address(r, i, dst, timeout_ms);
  }
  return i.sync ? sync_wait(i) : 0;
}

UROCE_EXPORT int rdma_resolve_route(rdma_cm_id* id, int /*timeout_ms*/) {
  if (!live(id)) return fail(EINVAL);
  Registry& r = registry();
  Id& i = *id_of(id);
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (!i.dev || !id->route.addr.dst_addr.sa_family) return fail(EINVAL);
    // RoCE's one path: GIDs from the addresses, the device's MTU.
    wire::IpAddr src, dst;
    to_ip(&id->route.addr.src_addr, src);
    to_ip(&id->route.addr.dst_addr, dst);
    std::memcpy(i.path.sgid.raw, src.bytes.data(), 16);
    std::memcpy(i.path.dgid.raw, dst.bytes.data(), 16);
    i.path.pkey = htons(0xffff);
    i.path.hop_limit = 64;
    i.path.reversible = 1;
    i.path.numb_path = 1;
    ibv_port_attr pa{};
    if (ibv_query_port(i.dev->verbs, 1, &pa) == 0) i.path.mtu = pa.active_mtu;
    id->route.num_paths = 1;
    deliver(i, new_event(i, RDMA_CM_EVENT_ROUTE_RESOLVED));
  }
  return i.sync ? sync_wait(i) : 0;
}

UROCE_EXPORT int rdma_listen(rdma_cm_id* id, int /*backlog*/) {
  if (!live(id)) return fail(EINVAL);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  Id& i = *id_of(id);
  if (i.listening) return 0;
  if (id->ps == RDMA_PS_IPOIB) {
    log_once("ipoib", "rdma_listen: the IPoIB port space is not supported");
    return fail(ENOSYS);
  }
  const bool udp = id->ps == RDMA_PS_UDP;
  if (!i.bound) {
    sockaddr_in any{};
    any.sin_family = AF_INET;
    if (bind_locked(r, i, reinterpret_cast<sockaddr*>(&any)) != 0) return -1;
  }
  const uint16_t port = port_of(&id->route.addr.src_addr);
  std::vector<Dev*> devs;
  if (i.dev) {
    devs.push_back(i.dev);
  } else {
    if (!load_devices(r)) return fail(ENODEV);
    for (auto& d : r.devs)
      if (open_dev(r, *d) == 0) devs.push_back(d.get());
    if (devs.empty()) return fail(ENODEV);
  }
  for (Dev* d : devs) {
    if ((udp ? d->cm->listen_ud(port) : d->cm->listen(port)) != 0) {
      for (Dev* done : i.listen_on) {
        if (udp) {
          done->cm->stop_listening_ud(port);
          done->ud_listeners.erase(port);
        } else {
          done->cm->stop_listening(port);
          done->listeners.erase(port);
        }
      }
      i.listen_on.clear();
      return fail(EADDRINUSE);
    }
    (udp ? d->ud_listeners : d->listeners)[port] = &i;
    i.listen_on.push_back(d);
  }
  i.listening = true;
  return 0;
}

UROCE_EXPORT int rdma_connect(rdma_cm_id* id, rdma_conn_param* param) {
  if (!live(id)) return fail(EINVAL);
  Registry& r = registry();
  Id& i = *id_of(id);
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (!i.dev || !id->route.addr.dst_addr.sa_family || i.conn) return fail(EINVAL);
    if (id->ps == RDMA_PS_IPOIB) {
      log_once("ipoib", "rdma_connect: the IPoIB port space is not supported");
      return fail(ENOSYS);
    }
    // Without a QP on the id, the application's (param->qp_num) moves
    // itself: rdma_init_qp_attr, CONNECT_RESPONSE, rdma_establish.
    if (!id->qp && !param && id->ps != RDMA_PS_UDP) return fail(EINVAL);
    Dev& d = *i.dev;
    cm::ConnParam c = conn_param(param, d.max_responder_resources, d.max_initiator_depth);
    if (!param_fits(d, c) || c.private_data.size() > (id->ps == RDMA_PS_UDP ? 180u : 56u)) return fail(EINVAL);
    c.local_port = port_of(&id->route.addr.src_addr);
    wire::IpAddr dst;
    uint16_t dport = 0;
    to_ip(&id->route.addr.dst_addr, dst, &dport);
    uint64_t conn = 0;
    if (!d.cm) return fail(ENODEV);  // the process is exiting
    // A UD id asks which QP serves the port (SIDR): ESTABLISHED names it.
    const int rc = id->ps == RDMA_PS_UDP ? d.cm->resolve_service(dst, dport, c, conn)
                   : id->qp             ? d.cm->connect(qp_impl(id->qp), dst, dport, c, conn)
                                        : d.cm->connect(param->qp_num, id->qp_type, dst, dport, c, conn);
    if (rc != 0) return fail(rc);
    i.conn = conn;
    i.connected_once = true;
    d.conns[conn] = &i;
  }
  if (!i.sync) return 0;
  return sync_wait(i);
}

UROCE_EXPORT int rdma_accept(rdma_cm_id* id, rdma_conn_param* param) {
  if (!live(id)) return fail(EINVAL);
  Registry& r = registry();
  Id& i = *id_of(id);
  if (i.sync && id->event) {
    rdma_ack_cm_event(id->event);
    id->event = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (!i.dev || !i.conn) return fail(EINVAL);
    if (!id->qp && !param) return fail(EINVAL);
    Dev& d = *i.dev;
    if (id->ps == RDMA_PS_UDP) {
      // The SIDR REP names the QP and the port space's Q_Key; nothing
      // follows on this side.
      const uint32_t qpn = id->qp ? id->qp->qp_num : param->qp_num;
      const uint32_t qkey = RDMA_UDP_QKEY;
      std::span<const uint8_t> data;
      if (param && param->private_data)
        data = {static_cast<const uint8_t*>(param->private_data), param->private_data_len};
      if (!d.cm) return fail(ENODEV);
      if (const int rc = d.cm->accept_ud(i.conn, qpn, qkey, data)) return fail(rc);
      d.conns.erase(i.conn);
      i.conn = 0;
      return 0;
    }
    cm::ConnParam c = conn_param(param, i.req_responder_resources, i.req_initiator_depth);
    if (!param_fits(d, c) || c.private_data.size() > 196) return fail(EINVAL);
    if (!d.cm) return fail(ENODEV);
    const int rc = id->qp ? d.cm->accept(i.conn, qp_impl(id->qp), c) : d.cm->accept(i.conn, param->qp_num, c);
    if (rc != 0) return fail(rc);
  }
  if (!i.sync) return 0;
  return sync_wait(i);
}

UROCE_EXPORT int rdma_reject(rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
  if (!live(id)) return fail(EINVAL);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  Id& i = *id_of(id);
  if (!i.dev || !i.conn) return fail(EINVAL);
  const auto* p = static_cast<const uint8_t*>(private_data);
  if (!i.dev->cm) return fail(ENODEV);
  if (const int rc = i.dev->cm->reject(i.conn, {p, p ? private_data_len : size_t(0)})) return fail(rc);
  i.dev->conns.erase(i.conn);
  i.conn = 0;
  return 0;
}

UROCE_EXPORT int rdma_disconnect(rdma_cm_id* id) {
  if (!live(id)) return fail(EINVAL);
  Registry& r = registry();
  Id& i = *id_of(id);
  int rc = 0;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (!i.dev || !i.connected_once) return fail(EINVAL);
    if (!i.dev->cm) return fail(ENODEV);
    rc = i.conn ? i.dev->cm->disconnect(i.conn) : EINVAL;
    if (rc != 0 && rc != EINVAL) return fail(rc);
  }
  // As Linux's rdma_disconnect: the QP goes to the error state, and a DREQ
  // (or DREP) goes out if the connection is in a state to send one; a
  // connection already over, or not yet up, is no error. Nothing more
  // comes for the id then, so a synchronous one does not wait.
  if (rc == EINVAL) {
    if (id->qp) {
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_ERR;
      ibv_modify_qp(id->qp, &a, IBV_QP_STATE);
    }
    return 0;
  }
  // A synchronous id waits for DISCONNECTED (rdma_client, rdma_server);
  // one the peer caused is already queued on the id's own channel.
  return i.sync ? sync_wait(i) : 0;
}

UROCE_EXPORT int rdma_get_request(rdma_cm_id* listen, rdma_cm_id** id) {
  if (!listen || !id) return fail(EINVAL);
  Id& l = *id_of(listen);
  if (!l.sync) return fail(EINVAL);
  rdma_cm_event* e = nullptr;
  if (rdma_get_cm_event(listen->channel, &e) != 0) return -1;
  if (e->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
    rdma_ack_cm_event(e);
    return fail(EINVAL);
  }
  // The request stays in the new id's event (its private data, the depths
  // asked), until rdma_accept or rdma_destroy_id.
  *id = e->id;
  (*id)->event = e;
  if (l.ep_qp_attr) {
    ibv_qp_init_attr attr = *l.ep_qp_attr;
    if (rdma_create_qp(*id, l.ep_pd, &attr) != 0) {
      const int err = errno;
      rdma_reject(*id, nullptr, 0);
      rdma_destroy_id(*id);
      return fail(err);
    }
  }
  return 0;
}

UROCE_EXPORT uint16_t rdma_get_src_port(rdma_cm_id* id) {
  return htons(port_of(&id->route.addr.src_addr));
}

UROCE_EXPORT uint16_t rdma_get_dst_port(rdma_cm_id* id) {
  return htons(port_of(&id->route.addr.dst_addr));
}

UROCE_EXPORT int rdma_set_option(rdma_cm_id* id, int level, int optname, void* optval, size_t optlen) {
  if (!id || !optval) return fail(EINVAL);
  if (level == RDMA_OPTION_ID) {
    switch (optname) {
      case RDMA_OPTION_ID_TOS:
      case RDMA_OPTION_ID_ACK_TIMEOUT:
        if (optlen != sizeof(uint8_t)) return fail(EINVAL);
        log_once("opt-tos", "rdma_set_option: type of service and ACK timeout are accepted and not applied");
        return 0;
      case RDMA_OPTION_ID_REUSEADDR:
      case RDMA_OPTION_ID_AFONLY:
        if (optlen != sizeof(int)) return fail(EINVAL);
        return 0;
    }
  }
  log_once("opt", "rdma_set_option: level " + std::to_string(level) + " option " + std::to_string(optname) +
                      " is not supported");
  return fail(ENOSYS);
}

UROCE_EXPORT int rdma_notify(rdma_cm_id* id, ibv_event_type /*event*/) {
  // The manager takes the first packet on a connection as its RTU already.
  return id ? 0 : fail(EINVAL);
}

namespace {

// The CQs and channels rdma_create_qp_ex made for the id (any of them, as
// far as it got), destroyed; errno as it was.
void destroy_own_cqs(rdma_cm_id* id) {
  const int saved = errno;
  if (id->send_cq) ibv_destroy_cq(id->send_cq);
  if (id->recv_cq) ibv_destroy_cq(id->recv_cq);
  if (id->send_cq_channel) ibv_destroy_comp_channel(id->send_cq_channel);
  if (id->recv_cq_channel) ibv_destroy_comp_channel(id->recv_cq_channel);
  id->send_cq = id->recv_cq = nullptr;
  id->send_cq_channel = id->recv_cq_channel = nullptr;
  id_of(id)->own_cqs = false;
  errno = saved;
}

}  // namespace

UROCE_EXPORT int rdma_create_qp_ex(rdma_cm_id* id, ibv_qp_init_attr_ex* attr) {
  if (!id || !attr || !id->verbs || id->qp) return fail(EINVAL);
  Id& i = *id_of(id);
  ibv_pd* pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : id->pd;
  if (!pd) {
    std::lock_guard<std::mutex> lock(registry().mu);
    if (!i.dev->pd) i.dev->pd = ibv_alloc_pd(id->verbs);
    pd = i.dev->pd;
    if (!pd) return -1;
  }
  // librdmacm makes the CQs (each with a channel) when none is given; a
  // failure below destroys what was made, and gives the caller's
  // attributes back as they came.
  ibv_cq* const given_send = attr->send_cq;
  ibv_cq* const given_recv = attr->recv_cq;
  auto undo = [&] {
    if (!i.own_cqs) return;
    attr->send_cq = given_send;
    attr->recv_cq = given_recv;
    destroy_own_cqs(id);
  };
  if (!attr->send_cq || !attr->recv_cq) {
    i.own_cqs = true;
    id->send_cq_channel = ibv_create_comp_channel(id->verbs);
    id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
    if (!id->send_cq_channel || !id->recv_cq_channel) return undo(), -1;
    id->send_cq = ibv_create_cq(id->verbs, int(std::max(attr->cap.max_send_wr, 1u)), id, id->send_cq_channel, 0);
    id->recv_cq = ibv_create_cq(id->verbs, int(std::max(attr->cap.max_recv_wr, 1u)), id, id->recv_cq_channel, 0);
    if (!id->send_cq || !id->recv_cq) return undo(), -1;
    if (!attr->send_cq) attr->send_cq = id->send_cq;
    if (!attr->recv_cq) attr->recv_cq = id->recv_cq;
  }
  attr->pd = pd;
  attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
  ibv_qp* qp = ibv_create_qp_ex(id->verbs, attr);
  if (!qp) return undo(), -1;
  // INIT at once, as librdmacm leaves it, so receives can be posted before
  // the connection (rping, fio); a UD QP goes on to RTS.
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (qp->qp_type == IBV_QPT_UD) {
    a.qkey = RDMA_UDP_QKEY;
    mask |= IBV_QP_QKEY;
  } else {
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    mask |= IBV_QP_ACCESS_FLAGS;
  }
  int rc = ibv_modify_qp(qp, &a, mask);
  if (rc == 0 && qp->qp_type == IBV_QPT_UD) {
    a = {};
    a.qp_state = IBV_QPS_RTR;
    rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
    if (rc == 0) {
      a.qp_state = IBV_QPS_RTS;
      a.sq_psn = 0;
      rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
    }
  }
  if (rc != 0) {
    ibv_destroy_qp(qp);
    undo();
    return fail(rc);
  }
  id->qp = qp;
  id->pd = pd;
  return 0;
}

UROCE_EXPORT int rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  if (!id || !qp_init_attr) return fail(EINVAL);
  ibv_qp_init_attr_ex ex{};
  std::memcpy(&ex, qp_init_attr, sizeof *qp_init_attr);
  if (pd) {
    ex.pd = pd;
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
  }
  if (rdma_create_qp_ex(id, &ex) != 0) return -1;
  // The capacities granted, as ibv_create_qp reports them.
  qp_init_attr->cap = ex.cap;
  qp_init_attr->send_cq = ex.send_cq;
  qp_init_attr->recv_cq = ex.recv_cq;
  return 0;
}

UROCE_EXPORT void rdma_destroy_qp(rdma_cm_id* id) {
  if (!id || !id->qp) return;
  Id& i = *id_of(id);
  // The manager lets go of the QP in ibv_destroy_qp (its hook).
  ibv_destroy_qp(id->qp);
  id->qp = nullptr;
  if (i.own_cqs) destroy_own_cqs(id);
}

UROCE_EXPORT int rdma_create_srq_ex(rdma_cm_id* id, ibv_srq_init_attr_ex* attr) {
  if (!id || !attr || !id->verbs) return fail(EINVAL);
  ibv_pd* pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ? attr->pd : id->pd;
  if (!pd) return fail(EINVAL);
  ibv_srq_init_attr plain{};
  plain.srq_context = attr->srq_context;
  plain.attr = attr->attr;
  ibv_srq* srq = ibv_create_srq(pd, &plain);
  if (!srq) return -1;
  attr->attr = plain.attr;
  id->srq = srq;
  id->pd = pd;
  return 0;
}

UROCE_EXPORT int rdma_create_srq(rdma_cm_id* id, ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (!id || !attr) return fail(EINVAL);
  ibv_srq_init_attr_ex ex{};
  ex.srq_context = attr->srq_context;
  ex.attr = attr->attr;
  ex.comp_mask = pd ? IBV_SRQ_INIT_ATTR_PD : 0;
  ex.pd = pd;
  if (rdma_create_srq_ex(id, &ex) != 0) return -1;
  attr->attr = ex.attr;
  return 0;
}

UROCE_EXPORT void rdma_destroy_srq(rdma_cm_id* id) {
  if (!id || !id->srq) return;
  ibv_destroy_srq(id->srq);
  id->srq = nullptr;
}

UROCE_EXPORT int rdma_create_ep(rdma_cm_id** id, rdma_addrinfo* res, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  if (!id || !res) return fail(EINVAL);
  rdma_cm_id* cm_id = nullptr;
  const auto ps = rdma_port_space(res->ai_port_space ? res->ai_port_space : RDMA_PS_TCP);
  if (rdma_create_id(nullptr, &cm_id, nullptr, ps) != 0) return -1;
  int rc = 0;
  if (res->ai_flags & RAI_PASSIVE) {
    rc = res->ai_src_addr ? rdma_bind_addr(cm_id, res->ai_src_addr) : fail(EINVAL);
  } else {
    rc = rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000);
    if (rc == 0) rc = rdma_resolve_route(cm_id, 2000);
  }
  if (rc == 0 && pd) cm_id->pd = pd;
  // The QP's type is the address's (librdmacm overwrites the caller's).
  if (qp_init_attr) qp_init_attr->qp_type = res->ai_qp_type ? ibv_qp_type(res->ai_qp_type) : cm_id->qp_type;
  if (rc == 0 && qp_init_attr && !(res->ai_flags & RAI_PASSIVE)) rc = rdma_create_qp(cm_id, pd, qp_init_attr);
  if (rc != 0) {
    const int err = errno;
    rdma_destroy_id(cm_id);
    return fail(err);
  }
  // A passive endpoint's QP attributes apply to the ids its requests make
  // (rdma_get_request creates the QP on each).
  if ((res->ai_flags & RAI_PASSIVE) && qp_init_attr) {
    id_of(cm_id)->ep_qp_attr = std::make_unique<ibv_qp_init_attr>(*qp_init_attr);
    id_of(cm_id)->ep_pd = pd;
  }
  *id = cm_id;
  return 0;
}

UROCE_EXPORT void rdma_destroy_ep(rdma_cm_id* id) {
  if (!id) return;
  rdma_destroy_qp(id);
  rdma_destroy_srq(id);
  rdma_destroy_id(id);
}

// As Linux's rdma_init_qp_attr: before a connection, INIT with no remote
// access (a UD id: its Q_Key); once the exchange settled them, what the
// manager would set itself.
UROCE_EXPORT int rdma_init_qp_attr(rdma_cm_id* id, ibv_qp_attr* qp_attr, int* qp_attr_mask) {
  if (!live(id) || !qp_attr || !qp_attr_mask) return fail(EINVAL);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  Id& i = *id_of(id);
  if (!i.dev) return fail(EINVAL);
  if (i.conn && id->qp_type != IBV_QPT_UD) {
    if (!i.dev->cm) return fail(ENODEV);
    if (const int rc = i.dev->cm->qp_attr(i.conn, *qp_attr, *qp_attr_mask)) return fail(rc);
    return 0;
  }
  const ibv_qp_state want = qp_attr->qp_state;
  if (id->qp_type != IBV_QPT_UD && want != IBV_QPS_INIT) return fail(EINVAL);
  *qp_attr = {};
  qp_attr->qp_state = want;
  qp_attr->port_num = 1;
  qp_attr->pkey_index = 0;
  *qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (id->qp_type == IBV_QPT_UD) {
    qp_attr->qkey = RDMA_UDP_QKEY;
    *qp_attr_mask |= IBV_QP_QKEY;
  } else {
    *qp_attr_mask |= IBV_QP_ACCESS_FLAGS;
  }
  return 0;
}

UROCE_EXPORT int rdma_establish(rdma_cm_id* id) {
  if (!live(id)) return fail(EINVAL);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  Id& i = *id_of(id);
  // Only for a QP the application moves itself, after CONNECT_RESPONSE.
  if (id->qp || !i.dev || !i.conn) return fail(EINVAL);
  if (!i.dev->cm) return fail(ENODEV);
  if (const int rc = i.dev->cm->establish(i.conn)) return fail(rc);
  return 0;
}
