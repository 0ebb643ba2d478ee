// SPDX-License-Identifier: BSD-3-Clause
#include "telemetry.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_telemetry.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace uroced {
namespace {

constexpr auto kWait = std::chrono::seconds(1);

// A dict's array entry (22.11's telemetry nests arrays of numbers or
// strings only, so lists of records are one array per field).
struct Column {
  rte_tel_data* d;
  explicit Column(rte_tel_value_type type) : d(rte_tel_data_alloc()) {
    if (d) rte_tel_data_start_array(d, type);
  }
  void add(uint64_t v) {
    if (d) rte_tel_data_add_array_u64(d, v);
  }
  void add(const std::string& s) {
    if (d) rte_tel_data_add_array_string(d, s.c_str());
  }
  // Hands the array to `dict` (which frees it).
  void put(rte_tel_data* dict, const char* name) {
    if (d && rte_tel_data_add_dict_container(dict, name, d, 0) != 0) rte_tel_data_free(d);
    d = nullptr;
  }
  ~Column() {
    if (d) rte_tel_data_free(d);
  }
};

// The optional parameter: a client id; false if it is not a number.
bool client_param(const char* params, uint32_t& id, bool& given) {
  given = params != nullptr && *params != '\0';
  if (!given) return true;
  char* end = nullptr;
  const unsigned long v = std::strtoul(params, &end, 10);
  id = uint32_t(v);
  return *end == '\0' && v <= UINT32_MAX;
}

// The parameter of a command about one port: a device name or its index
// (as DPDK's /ethdev commands take a port id), or none for the first; -1 if
// no port has that name.
int port_param(const Snapshot& s, const char* params) {
  if (params == nullptr || *params == '\0') return s.ports.empty() ? -1 : 0;
  for (size_t i = 0; i < s.ports.size(); ++i)
    if (s.ports[i].name == params || std::to_string(i) == params) return int(i);
  return -1;
}

int ports(const char*, const char* params, rte_tel_data* d) {
  Snapshot s;
  if (!Telemetry::instance().fetch(s)) return -EAGAIN;
  const int i = port_param(s, params);
  if (i < 0) return -ENOENT;
  const PortView& p = s.ports[size_t(i)];
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "name", p.name.c_str());
  rte_tel_data_add_dict_string(d, "dev", p.dev.c_str());
  rte_tel_data_add_dict_u64(d, "port_id", p.port_id);
  rte_tel_data_add_dict_string(d, "mac", p.mac.c_str());
  rte_tel_data_add_dict_u64(d, "mtu", p.mtu);
  rte_tel_data_add_dict_int(d, "vlan", p.vlan);
  rte_tel_data_add_dict_u64(d, "pcp", uint64_t(p.pcp));
  rte_tel_data_add_dict_string(d, "link_state", p.link_up ? "up" : "down");
  rte_tel_data_add_dict_string(d, "rx_interrupt", p.rx_interrupt ? "yes" : "no");
  rte_tel_data_add_dict_u64(d, "rx_interrupt_wakeups", p.rx_interrupt_wakeups);
  Column gids(RTE_TEL_STRING_VAL);
  for (const std::string& g : p.gids) gids.add(g);
  gids.put(d, "gids");
  // Every port's device, so that the others can be asked for by name.
  Column devices(RTE_TEL_STRING_VAL);
  for (const PortView& v : s.ports) devices.add(v.name);
  devices.put(d, "devices");
  return 0;
}

void client_dict(const ClientView& c, rte_tel_data* d) {
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_u64(d, "id", c.id);
  rte_tel_data_add_dict_string(d, "device", c.device.c_str());
  rte_tel_data_add_dict_u64(d, "pid", uint64_t(c.pid));
  rte_tel_data_add_dict_u64(d, "uid", c.uid);
  rte_tel_data_add_dict_u64(d, "gid", c.gid);
  rte_tel_data_add_dict_u64(d, "pds", c.pds);
  rte_tel_data_add_dict_u64(d, "cqs", c.cqs);
  rte_tel_data_add_dict_u64(d, "qps", c.qps);
  rte_tel_data_add_dict_u64(d, "mrs", c.mrs);
  rte_tel_data_add_dict_u64(d, "mws", c.mws);
  rte_tel_data_add_dict_u64(d, "mr_bytes", c.mr_bytes);
  rte_tel_data_add_dict_u64(d, "channels", c.channels);
}

int clients(const char*, const char* params, rte_tel_data* d) {
  uint32_t id = 0;
  bool one = false;
  if (!client_param(params, id, one)) return -EINVAL;
  Snapshot s;
  if (!Telemetry::instance().fetch(s)) return -EAGAIN;
  if (one) {
    for (const ClientView& c : s.clients)
      if (c.id == id) return client_dict(c, d), 0;
    return -ENOENT;
  }
  rte_tel_data_start_dict(d);
  Column devices(RTE_TEL_STRING_VAL);
  Column ids(RTE_TEL_U64_VAL), pids(RTE_TEL_U64_VAL), uids(RTE_TEL_U64_VAL), gids(RTE_TEL_U64_VAL),
      pds(RTE_TEL_U64_VAL), cqs(RTE_TEL_U64_VAL), qps(RTE_TEL_U64_VAL), mrs(RTE_TEL_U64_VAL),
      mws(RTE_TEL_U64_VAL), bytes(RTE_TEL_U64_VAL), channels(RTE_TEL_U64_VAL);
  for (const ClientView& c : s.clients) {
    ids.add(c.id);
    devices.add(c.device);
    pids.add(uint64_t(c.pid));
    uids.add(c.uid);
    gids.add(c.gid);
    pds.add(c.pds);
    cqs.add(c.cqs);
    qps.add(c.qps);
    mrs.add(c.mrs);
    mws.add(c.mws);
    bytes.add(c.mr_bytes);
    channels.add(c.channels);
  }
  ids.put(d, "id");
  devices.put(d, "device");
  pids.put(d, "pid");
  uids.put(d, "uid");
  gids.put(d, "gid");
  pds.put(d, "pds");
  cqs.put(d, "cqs");
  qps.put(d, "qps");
  mrs.put(d, "mrs");
  mws.put(d, "mws");
  bytes.put(d, "mr_bytes");
  channels.put(d, "channels");
  return 0;
}

int qps(const char*, const char* params, rte_tel_data* d) {
  uint32_t id = 0;
  bool one = false;
  if (!client_param(params, id, one)) return -EINVAL;
  Snapshot s;
  if (!Telemetry::instance().fetch(s)) return -EAGAIN;
  rte_tel_data_start_dict(d);
  Column clients(RTE_TEL_U64_VAL), qpns(RTE_TEL_U64_VAL), types(RTE_TEL_STRING_VAL), states(RTE_TEL_STRING_VAL),
      devices(RTE_TEL_STRING_VAL);
  for (const QpView& q : s.qps) {
    if (one && q.client != id) continue;
    clients.add(q.client);
    devices.add(q.device);
    qpns.add(q.qpn);
    types.add(q.type);
    states.add(q.state);
  }
  clients.put(d, "client");
  devices.put(d, "device");
  qpns.put(d, "qpn");
  types.put(d, "type");
  states.put(d, "state");
  return 0;
}

int counters(const char*, const char* params, rte_tel_data* d) {
  Snapshot s;
  if (!Telemetry::instance().fetch(s)) return -EAGAIN;
  const int i = port_param(s, params);
  if (i < 0) return -ENOENT;
  const uroce::DeviceCounters& c = s.counters[size_t(i)];
  const uroce::TransportCounters& t = c.transport;
  rte_tel_data_start_dict(d);
  auto put = [d](const char* name, uint64_t v) { rte_tel_data_add_dict_u64(d, name, v); };
  // rxe's hw_counters names, where uroce counts the same thing.
  put("sent_pkts", t.sent_pkts);
  put("rcvd_pkts", t.rcvd_pkts);
  put("duplicate_request", t.duplicate_request);
  put("out_of_seq_request", t.out_of_seq_request);
  put("rcvd_rnr_err", t.rcvd_rnr_err);
  put("send_rnr_err", t.send_rnr_err);
  put("rcvd_seq_err", t.rcvd_seq_err);
  put("retry_exceeded_err", t.retry_exceeded_err);
  put("retry_rnr_exceeded_err", t.retry_rnr_exceeded_err);
  put("completer_retry_err", t.completer_retry_err);
  put("send_err", t.send_err);
  put("rdma_sends", t.rdma_sends);
  put("rdma_recvs", t.rdma_recvs);
  // uroce's own (ack_deferred is uroce's name for ACKs coalesced into a
  // later one; rxe counts its completer being rescheduled by that name).
  put("ack_deferred", t.ack_deferred);
  put("local_ack_timeout_err", t.local_ack_timeout_err);
  put("retransmitted_pkts", t.retransmitted_pkts);
  put("nak_sent", t.nak_sent);
  put("rcvd_nak", t.rcvd_nak);
  put("zero_copy_pkts", t.zero_copy_pkts);
  put("uc_msg_dropped", t.uc_msg_dropped);
  put("rx_frames", c.rx_frames);
  put("rx_other_host", c.rx_other_host);
  put("rx_not_roce", c.rx_not_roce);
  put("rx_neighbor", c.rx_neighbor);
  put("tx_neighbor", c.tx_neighbor);
  put("rx_invalid", c.rx_invalid);
  put("rx_icrc_err", c.rx_icrc_err);
  put("rx_udp_csum_err", c.rx_udp_csum_err);
  put("rx_other_ip", c.rx_other_ip);
  put("rx_gathered", c.rx_gathered);
  put("rx_unknown_qp", c.rx_unknown_qp);
  put("rx_not_from_peer", c.rx_not_from_peer);
  put("rx_bad_pkey", c.rx_bad_pkey);
  put("tx_frames", c.tx_frames);
  put("tx_no_mbuf", c.tx_no_mbuf);
  return 0;
}

int cc(const char*, const char* params, rte_tel_data* d) {
  uint32_t id = 0;
  bool one = false;
  if (!client_param(params, id, one)) return -EINVAL;
  Snapshot s;
  if (!Telemetry::instance().fetch(s)) return -EAGAIN;
  rte_tel_data_start_dict(d);
  // One port: its congestion control; several: "uroce0: ...; uroce1: ...".
  std::string algorithm = s.cc.size() == 1 ? s.cc[0] : "";
  for (size_t i = 0; s.cc.size() > 1 && i < s.cc.size(); ++i)
    algorithm += (i ? "; " : "") + s.ports[i].name + ": " + s.cc[i];
  rte_tel_data_add_dict_string(d, "algorithm", algorithm.c_str());
  Column clients(RTE_TEL_U64_VAL), qpns(RTE_TEL_U64_VAL), limited(RTE_TEL_U64_VAL), rate(RTE_TEL_U64_VAL),
      target(RTE_TEL_U64_VAL), devices(RTE_TEL_STRING_VAL), cnps_sent(RTE_TEL_U64_VAL), cnps_received(RTE_TEL_U64_VAL), marks(RTE_TEL_U64_VAL),
      decreases(RTE_TEL_U64_VAL), increases(RTE_TEL_U64_VAL);
  for (const QpView& q : s.qps) {
    if (one && q.client != id) continue;
    clients.add(q.client);
    devices.add(q.device);
    qpns.add(q.qpn);
    limited.add(q.cc.limited ? 1 : 0);
    rate.add(uint64_t(q.cc.rate_mbps));
    target.add(uint64_t(q.cc.target_mbps));
    cnps_sent.add(q.cc.cnps_sent);
    cnps_received.add(q.cc.cnps_received);
    marks.add(q.cc.ecn_marks);
    decreases.add(q.cc.rate_decreases);
    increases.add(q.cc.rate_increases);
  }
  clients.put(d, "client");
  devices.put(d, "device");
  qpns.put(d, "qpn");
  limited.put(d, "limited");
  rate.put(d, "rate_mbps");
  target.put(d, "target_mbps");
  cnps_sent.put(d, "cnps_sent");
  cnps_received.put(d, "cnps_received");
  marks.put(d, "ecn_marks");
  decreases.put(d, "rate_decreases");
  increases.put(d, "rate_increases");
  return 0;
}

}  // namespace

Telemetry& Telemetry::instance() {
  static Telemetry t;
  return t;
}

bool Telemetry::start(std::string& error) {
  fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd_ < 0) return error = std::string("telemetry eventfd: ") + std::strerror(errno), false;
  const struct {
    const char* cmd;
    telemetry_cb fn;
    const char* help;
  } cmds[] = {  // help: at most RTE_TEL_MAX_STRING_LEN (128) bytes
      {"/uroce/ports", ports, "uroced's port: name, MAC, MTU, GIDs, link state, every port's device. Parameter: a device or index (default 0)"},
      {"/uroce/clients", clients, "uroced's clients, an array per field. Parameter: a client id (a dict of that client)"},
      {"/uroce/qps", qps, "uroced's QPs: client, device, QPN, type, state. Parameter: a client id (its QPs)"},
      {"/uroce/counters", counters, "a port's device counters, rxe's names where they match. Parameter: a device or index (default 0)"},
      {"/uroce/cc", cc, "uroced's congestion control and each QP's rate and device. Parameter: a client id (its QPs)"},
  };
  for (const auto& c : cmds)
    if (const int rc = rte_telemetry_register_cmd(c.cmd, c.fn, c.help); rc != 0)
      return error = std::string("telemetry command ") + c.cmd + ": " + std::strerror(-rc), false;
  return true;
}

void Telemetry::publish(Snapshot snapshot, uint64_t request) {
  {
    std::lock_guard lock(mutex_);
    snapshot_ = std::move(snapshot);
    served_.store(request, std::memory_order_release);
  }
  published_.notify_all();
}

void Telemetry::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  published_.notify_all();
}

bool Telemetry::fetch(Snapshot& out) {
  std::unique_lock lock(mutex_);
  if (closed_ || fd_ < 0) return false;
  const uint64_t mine = requested_.fetch_add(1, std::memory_order_acq_rel) + 1;
  const uint64_t one = 1;
  (void)!write(fd_, &one, sizeof one);
  if (!published_.wait_for(lock, kWait, [&] { return closed_ || served_.load(std::memory_order_acquire) >= mine; }))
    return false;
  if (closed_) return false;
  out = snapshot_;
  return true;
}

}  // namespace uroced
