// SPDX-License-Identifier: BSD-3-Clause
// Devices, contexts and queries: the device list from the settings, the
// first open of a device starts the EAL, opens its port through
// uroce::Endpoint and starts its engine thread, which runs the engine
// whenever the application's threads do not (Progress::kCallersDrive).
// A device with a daemon socket is opened on uroced instead: no EAL, the
// daemon's engine runs its QPs.
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "exports.h"
#include "shim.h"

namespace uroce::abi {
namespace {

const char kForeignOps = 0;  // its address marks our devices as no provider's

std::mutex log_mutex;

void build_devices(std::vector<DeviceRec*>& out) {
  Settings settings;
  std::string error;
  if (!load_settings(settings, error)) {
    log_line("no devices: " + error);
    return;
  }
  for (const DeviceSettings& s : settings.devices) {
    auto* rec = new DeviceRec;
    rec->settings = s;
    rec->index = static_cast<int>(out.size());
    rec->foreign_ops = &kForeignOps;
    rec->dev.node_type = IBV_NODE_CA;
    rec->dev.transport_type = IBV_TRANSPORT_IB;
    std::snprintf(rec->dev.name, sizeof rec->dev.name, "%s", s.name.c_str());
    std::snprintf(rec->dev.dev_name, sizeof rec->dev.dev_name, "%s", s.name.c_str());
    std::snprintf(rec->dev.dev_path, sizeof rec->dev.dev_path, "/sys/class/infiniband_verbs/%s", s.name.c_str());
    std::snprintf(rec->dev.ibdev_path, sizeof rec->dev.ibdev_path, "/sys/class/infiniband/%s", s.name.c_str());
    out.push_back(rec);
  }
}

// The MAC before the port is open: the override, else the kernel
// interface an af_packet or af_xdp vdev names ("iface=NAME"), asked of
// the kernel in this process's network namespace (sysfs may show
// another's).
bool settings_mac(const DeviceSettings& s, wire::MacAddr& mac) {
  if (!s.mac.empty()) return wire::MacAddr::parse(s.mac, mac);
  const size_t at = s.dev.find("iface=");
  if (at == std::string::npos) return false;
  const std::string iface = s.dev.substr(at + 6, s.dev.find(',', at) - (at + 6));
  ifreq req{};
  if (iface.empty() || iface.size() >= sizeof req.ifr_name) return false;
  std::memcpy(req.ifr_name, iface.data(), iface.size());
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = ioctl(fd, SIOCGIFHWADDR, &req) == 0;
  close(fd);
  if (ok) std::memcpy(mac.bytes.data(), req.ifr_hwaddr.sa_data, 6);
  return ok;
}

// Stops the router and the engine (none for a daemon's device), closes
// the port or the connection. Under open_mutex.
void close_device(DeviceRec& rec) {
  stop_event_router(rec);
  if (rec.endpoint) rec.endpoint->device().stop_engine_thread();
  rec.endpoint.reset();
  rec.remote.reset();
}

// Engines still running when the program exits without closing its
// devices stop before the EAL's own exit handlers close the ports.
std::atomic<bool> exit_ran{false};

void stop_all_at_exit() {
  exit_ran.store(true);
  for (DeviceRec* rec : devices()) {
    std::lock_guard<std::mutex> lock(rec->open_mutex);
    if (rec->is_open()) close_device(*rec);
  }
}

// Through uroced: no EAL and no engine here, the daemon's runs on its
// thread; only the event router.
bool open_remote(DeviceRec& rec) {
  DeviceConfig dc;
  dc.daemon_socket = rec.settings.daemon;
  dc.name = rec.settings.name;
  std::string error;
  rec.remote = Device::open(dc, error);
  if (!rec.remote) return log_line("cannot open " + rec.settings.name + ": " + error), false;
  if (!start_event_router(rec)) {
    log_line("cannot start the event router of " + rec.settings.name);
    rec.remote.reset();
    return false;
  }
  return true;
}

bool open_endpoint(DeviceRec& rec) {
  static std::once_flag exit_hook;
  if (!rec.settings.daemon.empty()) return open_remote(rec);
  Settings settings;
  std::string error;
  if (!load_settings(settings, error)) return log_line(error), false;
  EndpointConfig cfg;
  cfg.dev = rec.settings.dev;
  cfg.ip = rec.settings.ip;
  cfg.mac = rec.settings.mac;
  cfg.mtu = rec.settings.mtu;
  cfg.eal_args = settings.eal_args;
  cfg.device.name = rec.settings.name;
  set_vlan(cfg.device, rec.settings.vlan, rec.settings.pcp);
  rec.endpoint = Endpoint::open(cfg, error);
  if (!rec.endpoint) return log_line("cannot open " + rec.settings.name + ": " + error), false;
  // The thread that posts or polls runs the engine while it does (no thread
  // crossing per message); the engine thread covers the rest.
  if (!rec.endpoint->device().start_engine_thread(-1, error, Device::Progress::kCallersDrive)) {
    log_line("cannot start the engine of " + rec.settings.name + ": " + error);
    rec.endpoint.reset();
    return false;
  }
  if (!start_event_router(rec)) {
    log_line("cannot start the event router of " + rec.settings.name);
    rec.endpoint->device().stop_engine_thread();
    rec.endpoint.reset();
    return false;
  }
  std::call_once(exit_hook, [] { std::atexit(stop_all_at_exit); });
  return true;
}

int query_port_op(ibv_context* c, uint8_t port, ibv_port_attr* attr, size_t len) {
  ibv_port_attr full;
  const int rc = fill_port_attr(*ctx_of(c), port, full);
  if (rc) return rc;
  std::memset(attr, 0, len);
  std::memcpy(attr, &full, std::min(len, sizeof full));
  return 0;
}

void fill_device_attr(Context& ctx, ibv_device_attr& a) {
  std::memset(&a, 0, sizeof a);
  const DeviceLimits& l = ctx.device().limits();
  std::snprintf(a.fw_ver, sizeof a.fw_ver, "uroce");
  a.node_guid = node_guid_be(*ctx.rec);
  a.sys_image_guid = a.node_guid;
  a.max_mr_size = l.max_mr_size;
  a.page_size_cap = 0xfffff000;
  a.max_qp = static_cast<int>(l.max_qp);
  a.max_qp_wr = static_cast<int>(l.max_qp_wr);
  a.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN;
  // Memory windows, type 1 and type 2B (bound to a QP), where the device
  // has any (not through a daemon).
  if (l.max_mw > 0) a.device_cap_flags |= IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
  a.max_sge = static_cast<int>(l.max_sge);
  a.max_sge_rd = static_cast<int>(l.max_sge);
  a.max_cq = static_cast<int>(l.max_qp);
  a.max_cqe = static_cast<int>(l.max_cqe);
  a.max_mr = static_cast<int>(l.max_mr);
  a.max_mw = static_cast<int>(l.max_mw);
  a.max_pd = 65535;
  a.max_qp_rd_atom = static_cast<int>(l.max_qp_rd_atom);
  a.max_res_rd_atom = static_cast<int>(l.max_qp_rd_atom);
  a.max_qp_init_rd_atom = static_cast<int>(l.max_qp_rd_atom);
  a.atomic_cap = IBV_ATOMIC_HCA;  // atomic against this device's own atomics
  a.max_srq = static_cast<int>(l.max_qp);
  a.max_srq_wr = static_cast<int>(l.max_qp_wr);
  a.max_srq_sge = static_cast<int>(l.max_sge);
  a.max_pkeys = 1;
  a.local_ca_ack_delay = 15;
  a.phys_port_cnt = 1;
}

int query_device_ex_op(ibv_context* c, const ibv_query_device_ex_input*, ibv_device_attr_ex* attr, size_t size) {
  if (size < sizeof(ibv_device_attr)) return EINVAL;
  ibv_device_attr_ex full{};
  fill_device_attr(*ctx_of(c), full.orig_attr);
  full.max_dm_size = 0;
  std::memset(attr, 0, size);
  std::memcpy(attr, &full, std::min(size, sizeof full));
  return 0;
}

// The largest verbs MTU whose packets fit the Ethernet MTU after the
// IPv4/IPv6, UDP, BTH, RETH and ICRC headers.
ibv_mtu active_mtu(uint16_t eth_mtu, bool v6) {
  const int room = eth_mtu - (v6 ? 40 : 20) - 8 - 12 - 16 - 4;
  ibv_mtu m = IBV_MTU_256;
  for (int v = IBV_MTU_512; v <= IBV_MTU_4096; ++v)
    if (room >= (128 << v)) m = static_cast<ibv_mtu>(v);
  return m;
}

}  // namespace

bool exited() { return exit_ran.load(); }

// One open fewer; the last stops the router and the engine, closes the port.
void release_device(DeviceRec& rec) {
  std::lock_guard<std::mutex> lock(rec.open_mutex);
  if (--rec.open_count == 0 && rec.is_open()) close_device(rec);
}

void log_line(const std::string& text) {
  std::lock_guard<std::mutex> lock(log_mutex);
  std::fprintf(stderr, "uroce libibverbs: %s\n", text.c_str());
}

void log_once(const char* key, const std::string& text) {
  static std::set<std::string> seen;
  {
    std::lock_guard<std::mutex> lock(log_mutex);
    if (!seen.insert(key).second) return;
  }
  log_line(text);
}

std::vector<DeviceRec*>& devices() {
  static std::vector<DeviceRec*>* list = [] {
    auto* v = new std::vector<DeviceRec*>;
    build_devices(*v);
    return v;
  }();
  return *list;
}

DeviceRec* device_by_ibdev_path(const std::string& path) {
  for (DeviceRec* rec : devices())
    if (path == rec->dev.ibdev_path) return rec;
  return nullptr;
}

uint64_t node_guid_be(const DeviceRec& rec) {
  wire::MacAddr mac{};
  if (rec.endpoint) mac = rec.endpoint->dpdk_port().mac();
  else if (rec.remote) mac = rec.remote->mac();
  else if (!settings_mac(rec.settings, mac)) return 0;
  const uint8_t* m = mac.bytes.data();
  const uint8_t eui[8] = {uint8_t(m[0] ^ 0x02), m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]};
  uint64_t be;
  std::memcpy(&be, eui, 8);
  return be;
}

int fill_port_attr(Context& ctx, uint8_t port, ibv_port_attr& a) {
  if (port != 1) return EINVAL;
  std::memset(&a, 0, sizeof a);
  // A daemon's port is up as far as its clients know: the daemon does not
  // tell its link state.
  const bool up = ctx.rec->endpoint ? ctx.rec->endpoint->dpdk_port().link_up() : true;
  const std::vector<wire::IpAddr>& gids = ctx.device().gids();
  a.state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  a.phys_state = up ? 5 : 3;  // LinkUp : Disabled (IBTA PortPhysicalState)
  a.max_mtu = IBV_MTU_4096;
  a.active_mtu = active_mtu(ctx.device().mtu(), gids.size() > 1 && !gids[1].is_v4_mapped());
  a.gid_tbl_len = static_cast<int>(gids.size());
  a.max_msg_sz = ctx.device().limits().max_msg_sz;
  a.pkey_tbl_len = 1;
  a.max_vl_num = 1;
  a.active_width = 1;  // 1X
  a.active_speed = 1;  // no link-speed figure is reported: SDR as a placeholder
  a.link_layer = IBV_LINK_LAYER_ETHERNET;
  return 0;
}

}  // namespace uroce::abi

using namespace uroce;
using namespace uroce::abi;

extern "C" {

UROCE_V11(ibv_get_device_list) ibv_device** uroce_v11_ibv_get_device_list(int* num) {
  if (num) *num = 0;  // as rdma-core, whatever fails below
  std::vector<DeviceRec*>& devs = devices();
  auto** list = static_cast<ibv_device**>(std::calloc(devs.size() + 1, sizeof(ibv_device*)));
  if (!list) return errno = ENOMEM, nullptr;
  for (size_t i = 0; i < devs.size(); ++i) list[i] = &devs[i]->dev;
  if (num) *num = static_cast<int>(devs.size());
  return list;
}

UROCE_V11(ibv_free_device_list) void uroce_v11_ibv_free_device_list(ibv_device** list) { std::free(list); }

UROCE_V11(ibv_get_device_name) const char* uroce_v11_ibv_get_device_name(ibv_device* d) { return d->name; }

UROCE_V11(ibv_get_device_guid) __be64 uroce_v11_ibv_get_device_guid(ibv_device* d) {
  return node_guid_be(*rec_of(d));
}

UROCE_EXPORT int ibv_get_device_index(ibv_device* d) { return rec_of(d)->index; }

UROCE_V11(ibv_open_device) ibv_context* uroce_v11_ibv_open_device(ibv_device* d) {
  DeviceRec* rec = rec_of(d);
  {
    std::lock_guard<std::mutex> lock(rec->open_mutex);
    if (rec->open_count == 0 && !open_endpoint(*rec)) return errno = ENODEV, nullptr;
    ++rec->open_count;
  }
  auto* ctx = new Context;
  ctx->rec = rec;
  if (!join_events(*ctx)) {
    delete ctx;
    release_device(*rec);
    return errno = EMFILE, nullptr;
  }
  ctx->vctx.sz = sizeof(verbs_context);
  ctx->vctx.query_port = query_port_op;
  ctx->vctx.query_device_ex = query_device_ex_op;
  ctx->vctx.create_cq_ex = create_cq_ex_op;
  ctx->vctx.create_qp_ex = create_qp_ex_op;
  ibv_context& c = ctx->vctx.context;
  c.device = d;
  c.cmd_fd = -1;
  // This context's own event descriptor: programs poll it and set it
  // O_NONBLOCK, and ibv_get_async_event honours that.
  c.async_fd = ctx->event_fd;
  c.num_comp_vectors = 1;
  pthread_mutex_init(&c.mutex, nullptr);
  c.abi_compat = __VERBS_ABI_IS_EXTENDED;
  fill_data_ops(c.ops);
  return &c;
}

UROCE_V11(ibv_close_device) int uroce_v11_ibv_close_device(ibv_context* c) {
  if (exited()) return 0;
  Context* ctx = ctx_of(c);
  DeviceRec* rec = ctx->rec;
  leave_events(*ctx);
  pthread_mutex_destroy(&c->mutex);
  delete ctx;
  release_device(*rec);
  return 0;
}

UROCE_V11(ibv_query_device) int uroce_v11_ibv_query_device(ibv_context* c, ibv_device_attr* attr) {
  fill_device_attr(*ctx_of(c), *attr);
  return 0;
}

// The exported ibv_query_port takes the older, shorter struct (it ends
// after `flags`): programs built with today's header reach query_port_op.
UROCE_V11(ibv_query_port) int uroce_v11_ibv_query_port(ibv_context* c, uint8_t port, void* compat_attr) {
  ibv_port_attr full;
  const int rc = fill_port_attr(*ctx_of(c), port, full);
  if (rc) return rc;
  std::memcpy(compat_attr, &full, offsetof(ibv_port_attr, flags) + sizeof full.flags);
  return 0;
}

UROCE_V11(ibv_query_gid) int uroce_v11_ibv_query_gid(ibv_context* c, uint8_t port, int index, ibv_gid* gid) {
  const std::vector<wire::IpAddr>& gids = ctx_of(c)->device().gids();
  if (port != 1 || index < 0 || size_t(index) >= gids.size()) return errno = EINVAL, -1;
  std::memcpy(gid->raw, gids[index].bytes.data(), 16);
  return 0;
}

UROCE_EXPORT int _ibv_query_gid_ex(ibv_context* c, uint32_t port, uint32_t index, ibv_gid_entry* entry,
                                   uint32_t flags, size_t entry_size) {
  const std::vector<wire::IpAddr>& gids = ctx_of(c)->device().gids();
  if (flags || entry_size < sizeof(ibv_gid_entry) || port != 1) return EINVAL;
  if (index >= gids.size()) return ENODATA;
  std::memset(entry, 0, entry_size);
  std::memcpy(entry->gid.raw, gids[index].bytes.data(), 16);
  entry->gid_index = index;
  entry->port_num = port;
  entry->gid_type = IBV_GID_TYPE_ROCE_V2;
  return 0;
}

UROCE_EXPORT ssize_t _ibv_query_gid_table(ibv_context* c, ibv_gid_entry* entries, size_t max_entries,
                                          uint32_t flags, size_t entry_size) {
  const std::vector<wire::IpAddr>& gids = ctx_of(c)->device().gids();
  if (flags || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  if (max_entries < gids.size()) return -EINVAL;
  auto* bytes = reinterpret_cast<uint8_t*>(entries);
  for (uint32_t i = 0; i < gids.size(); ++i)
    _ibv_query_gid_ex(c, 1, i, reinterpret_cast<ibv_gid_entry*>(bytes + i * entry_size), 0, entry_size);
  return static_cast<ssize_t>(gids.size());
}

// IBVERBS_PRIVATE_34, called by ibv_devinfo: the type as the kernel's
// sysfs tells it, 0 IB/RoCE v1, 1 RoCE v2.
UROCE_EXPORT int ibv_query_gid_type(ibv_context* c, uint8_t port, unsigned int index, int* type) {
  if (port != 1 || index >= ctx_of(c)->device().gids().size()) return errno = EINVAL, -1;
  *type = 1;
  return 0;
}

UROCE_V11(ibv_query_pkey) int uroce_v11_ibv_query_pkey(ibv_context*, uint8_t port, int index, __be16* pkey) {
  if (port != 1 || index != 0) return errno = EINVAL, -1;
  *pkey = 0xffff;  // the default P_Key, the same in either byte order
  return 0;
}

UROCE_EXPORT int ibv_get_pkey_index(ibv_context*, uint8_t port, __be16 pkey) {
  return port == 1 && pkey == 0xffff ? 0 : (errno = EINVAL, -1);
}

UROCE_EXPORT const char* ibv_get_sysfs_path(void) {
  const char* env = getuid() == geteuid() ? std::getenv("SYSFS_PATH") : nullptr;
  return env && *env ? env : "/sys";
}

// Answers for uroce's own devices (ibv_devinfo reads board_id), reads the
// real file for any other directory.
UROCE_EXPORT int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  if (!size) return errno = EINVAL, -1;
  if (device_by_ibdev_path(dir)) {
    std::string value;
    if (!std::strcmp(file, "board_id")) value = "uroce";
    else if (!std::strcmp(file, "fw_ver")) value = "uroce";
    else if (!std::strcmp(file, "node_type")) value = "1: CA";
    else return errno = ENOENT, -1;
    std::snprintf(buf, size, "%s", value.c_str());
    return static_cast<int>(std::min(value.size(), size - 1));
  }
  const std::string path = std::string(dir) + "/" + file;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t n = read(fd, buf, size);
  close(fd);
  if (n <= 0) return -1;
  ssize_t len = n;
  if (size_t(len) == size) --len;
  if (len > 0 && buf[len - 1] == '\n') --len;
  buf[len] = '\0';
  return static_cast<int>(len);
}

UROCE_EXPORT int ibv_read_ibdev_sysfs_file(char* buf, size_t size, const char* dev, const char* fmt, ...) {
  char file[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(file, sizeof file, fmt, ap);
  va_end(ap);
  return ibv_read_sysfs_file((std::string("/sys/class/infiniband/") + dev).c_str(), file, buf, size);
}

// uroce pins nothing through the kernel: a forked child gets copies of
// registered pages like any other memory, so fork needs no preparation.
UROCE_EXPORT int ibv_fork_init(void) { return 0; }
UROCE_EXPORT ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }
UROCE_EXPORT int ibv_dontfork_range(void*, size_t) { return 0; }
UROCE_EXPORT int ibv_dofork_range(void*, size_t) { return 0; }

}  // extern "C"
