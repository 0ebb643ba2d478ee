// SPDX-License-Identifier: BSD-3-Clause
// The rest of Debian 12's libibverbs ABI: the compat symbols of the
// pre-1.1 ABI, the IBVERBS_PRIVATE_34 node that provider libraries
// (libmlx5, libefa) link against, the text and rate helpers, and the
// verbs uroce does not offer (they fail with EOPNOTSUPP and say so once).
#include <errno.h>

#include <cstring>

#include "exports.h"
#include "shim.h"

using namespace uroce::abi;

namespace {

void unsupported(const char* what) { log_once(what, std::string(what) + ": not supported by uroce"); }

}  // namespace

// The pre-1.1 ABI (name@IBVERBS_1.0) took other struct layouts; no
// program built in this century uses it. Each entry fails.
#define UROCE_COMPAT10(name, ret, value)                                      \
  __asm__(".symver uroce_v10_" #name ", " #name "@IBVERBS_1.0");              \
  extern "C" __attribute__((visibility("default"))) ret uroce_v10_##name() { \
    unsupported(#name "@IBVERBS_1.0");                                        \
    errno = ENOSYS;                                                           \
    return value;                                                             \
  }
#define UROCE_COMPAT10_VOID(name)                                             \
  __asm__(".symver uroce_v10_" #name ", " #name "@IBVERBS_1.0");              \
  extern "C" __attribute__((visibility("default"))) void uroce_v10_##name() { \
    unsupported(#name "@IBVERBS_1.0");                                        \
  }

UROCE_COMPAT10_VOID(ibv_ack_async_event)
UROCE_COMPAT10_VOID(ibv_ack_cq_events)
UROCE_COMPAT10(ibv_alloc_pd, void*, nullptr)
UROCE_COMPAT10(ibv_attach_mcast, int, -1)
UROCE_COMPAT10(ibv_close_device, int, -1)
UROCE_COMPAT10(ibv_create_ah, void*, nullptr)
UROCE_COMPAT10(ibv_create_cq, void*, nullptr)
UROCE_COMPAT10(ibv_create_qp, void*, nullptr)
UROCE_COMPAT10(ibv_create_srq, void*, nullptr)
UROCE_COMPAT10(ibv_dealloc_pd, int, -1)
UROCE_COMPAT10(ibv_dereg_mr, int, -1)
UROCE_COMPAT10(ibv_destroy_ah, int, -1)
UROCE_COMPAT10(ibv_destroy_cq, int, -1)
UROCE_COMPAT10(ibv_destroy_qp, int, -1)
UROCE_COMPAT10(ibv_destroy_srq, int, -1)
UROCE_COMPAT10(ibv_detach_mcast, int, -1)
UROCE_COMPAT10_VOID(ibv_free_device_list)
UROCE_COMPAT10(ibv_get_async_event, int, -1)
UROCE_COMPAT10(ibv_get_cq_event, int, -1)
UROCE_COMPAT10(ibv_get_device_guid, uint64_t, 0)
UROCE_COMPAT10(ibv_get_device_list, void*, nullptr)
UROCE_COMPAT10(ibv_get_device_name, const char*, nullptr)
UROCE_COMPAT10(ibv_modify_qp, int, -1)
UROCE_COMPAT10(ibv_modify_srq, int, -1)
UROCE_COMPAT10(ibv_open_device, void*, nullptr)
UROCE_COMPAT10(ibv_query_device, int, -1)
UROCE_COMPAT10(ibv_query_gid, int, -1)
UROCE_COMPAT10(ibv_query_pkey, int, -1)
UROCE_COMPAT10(ibv_query_port, int, -1)
UROCE_COMPAT10(ibv_query_qp, int, -1)
UROCE_COMPAT10(ibv_query_srq, int, -1)
UROCE_COMPAT10(ibv_reg_mr, void*, nullptr)
UROCE_COMPAT10(ibv_resize_cq, int, -1)

// Providers register with libibverbs from their constructors; uroce's
// devices are served by this library itself, so a registration is kept
// nowhere and every device stays ours.
__asm__(".symver uroce_v11_compat_ibv_register_driver, ibv_register_driver@IBVERBS_1.1");
extern "C" __attribute__((visibility("default"))) void uroce_v11_compat_ibv_register_driver(const char*, void*) {}

// IBVERBS_PRIVATE_34: what provider libraries import. Loading them (perftest
// links libmlx5 and libefa) must work; calling them is never reached, since
// no provider ever gets one of uroce's devices.
#define UROCE_PRIVATE_INT(name)                     \
  UROCE_EXPORT int name() {                         \
    unsupported(#name);                             \
    return EOPNOTSUPP;                              \
  }
#define UROCE_PRIVATE_PTR(name)                     \
  UROCE_EXPORT void* name() {                       \
    unsupported(#name);                             \
    errno = EOPNOTSUPP;                             \
    return nullptr;                                 \
  }
#define UROCE_PRIVATE_VOID(name)                    \
  UROCE_EXPORT void name() { unsupported(#name); }

UROCE_EXPORT void verbs_register_driver_34(const void*) {}
UROCE_EXPORT void __verbs_log(void*, int, const char*, ...) {}
extern "C" {
__attribute__((visibility("default"))) bool verbs_allow_disassociate_destroy = false;
}
UROCE_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int n, void*) { return n; }
UROCE_PRIVATE_PTR(_verbs_init_and_alloc_context)
UROCE_PRIVATE_PTR(verbs_open_device)
UROCE_PRIVATE_VOID(verbs_init_cq)
UROCE_PRIVATE_VOID(verbs_set_ops)
UROCE_PRIVATE_VOID(verbs_uninit_context)
UROCE_PRIVATE_INT(execute_ioctl)
UROCE_PRIVATE_INT(ibv_cmd_advise_mr)
UROCE_PRIVATE_INT(ibv_cmd_alloc_dm)
UROCE_PRIVATE_INT(ibv_cmd_alloc_mw)
UROCE_PRIVATE_INT(ibv_cmd_alloc_pd)
UROCE_PRIVATE_INT(ibv_cmd_attach_mcast)
UROCE_PRIVATE_INT(ibv_cmd_close_xrcd)
UROCE_PRIVATE_INT(ibv_cmd_create_ah)
UROCE_PRIVATE_INT(ibv_cmd_create_counters)
UROCE_PRIVATE_INT(ibv_cmd_create_cq)
UROCE_PRIVATE_INT(ibv_cmd_create_cq_ex)
UROCE_PRIVATE_INT(ibv_cmd_create_flow)
UROCE_PRIVATE_INT(ibv_cmd_create_flow_action_esp)
UROCE_PRIVATE_INT(ibv_cmd_create_qp)
UROCE_PRIVATE_INT(ibv_cmd_create_qp_ex)
UROCE_PRIVATE_INT(ibv_cmd_create_qp_ex2)
UROCE_PRIVATE_INT(ibv_cmd_create_rwq_ind_table)
UROCE_PRIVATE_INT(ibv_cmd_create_srq)
UROCE_PRIVATE_INT(ibv_cmd_create_srq_ex)
UROCE_PRIVATE_INT(ibv_cmd_create_wq)
UROCE_PRIVATE_INT(ibv_cmd_dealloc_mw)
UROCE_PRIVATE_INT(ibv_cmd_dealloc_pd)
UROCE_PRIVATE_INT(ibv_cmd_dereg_mr)
UROCE_PRIVATE_INT(ibv_cmd_destroy_ah)
UROCE_PRIVATE_INT(ibv_cmd_destroy_counters)
UROCE_PRIVATE_INT(ibv_cmd_destroy_cq)
UROCE_PRIVATE_INT(ibv_cmd_destroy_flow)
UROCE_PRIVATE_INT(ibv_cmd_destroy_flow_action)
UROCE_PRIVATE_INT(ibv_cmd_destroy_qp)
UROCE_PRIVATE_INT(ibv_cmd_destroy_rwq_ind_table)
UROCE_PRIVATE_INT(ibv_cmd_destroy_srq)
UROCE_PRIVATE_INT(ibv_cmd_destroy_wq)
UROCE_PRIVATE_INT(ibv_cmd_detach_mcast)
UROCE_PRIVATE_INT(ibv_cmd_free_dm)
UROCE_PRIVATE_INT(ibv_cmd_get_context)
UROCE_PRIVATE_INT(ibv_cmd_modify_cq)
UROCE_PRIVATE_INT(ibv_cmd_modify_flow_action_esp)
UROCE_PRIVATE_INT(ibv_cmd_modify_qp)
UROCE_PRIVATE_INT(ibv_cmd_modify_qp_ex)
UROCE_PRIVATE_INT(ibv_cmd_modify_srq)
UROCE_PRIVATE_INT(ibv_cmd_modify_wq)
UROCE_PRIVATE_INT(ibv_cmd_open_qp)
UROCE_PRIVATE_INT(ibv_cmd_open_xrcd)
UROCE_PRIVATE_INT(ibv_cmd_poll_cq)
UROCE_PRIVATE_INT(ibv_cmd_post_recv)
UROCE_PRIVATE_INT(ibv_cmd_post_send)
UROCE_PRIVATE_INT(ibv_cmd_post_srq_recv)
UROCE_PRIVATE_INT(ibv_cmd_query_context)
UROCE_PRIVATE_INT(ibv_cmd_query_device_any)
UROCE_PRIVATE_INT(ibv_cmd_query_mr)
UROCE_PRIVATE_INT(ibv_cmd_query_port)
UROCE_PRIVATE_INT(ibv_cmd_query_qp)
UROCE_PRIVATE_INT(ibv_cmd_query_srq)
UROCE_PRIVATE_INT(ibv_cmd_read_counters)
UROCE_PRIVATE_INT(ibv_cmd_reg_dm_mr)
UROCE_PRIVATE_INT(ibv_cmd_reg_dmabuf_mr)
UROCE_PRIVATE_INT(ibv_cmd_reg_mr)
UROCE_PRIVATE_INT(ibv_cmd_req_notify_cq)
UROCE_PRIVATE_INT(ibv_cmd_rereg_mr)
UROCE_PRIVATE_INT(ibv_cmd_resize_cq)

// --- Text and rates -------------------------------------------------------

namespace {

template <size_t N>
const char* pick(const char* const (&table)[N], int i, const char* fallback) {
  return i >= 0 && size_t(i) < N ? table[i] : fallback;
}

struct RateRow {
  ibv_rate rate;
  int mult;  // multiple of 2.5 Gb/s; -1 for the rates after 120 Gb/s
  int mbps;
};

constexpr RateRow kRates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},      {IBV_RATE_5_GBPS, 2, 5000},        {IBV_RATE_10_GBPS, 4, 10000},
    {IBV_RATE_20_GBPS, 8, 20000},      {IBV_RATE_30_GBPS, 12, 30000},     {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},     {IBV_RATE_80_GBPS, 32, 80000},     {IBV_RATE_120_GBPS, 48, 120000},
    {IBV_RATE_14_GBPS, -1, 14062},     {IBV_RATE_56_GBPS, -1, 56250},     {IBV_RATE_112_GBPS, -1, 112500},
    {IBV_RATE_168_GBPS, -1, 168750},   {IBV_RATE_25_GBPS, -1, 25781},     {IBV_RATE_100_GBPS, -1, 103125},
    {IBV_RATE_200_GBPS, -1, 206250},   {IBV_RATE_300_GBPS, -1, 309375},   {IBV_RATE_28_GBPS, -1, 28125},
    {IBV_RATE_50_GBPS, -1, 53125},     {IBV_RATE_400_GBPS, -1, 425000},   {IBV_RATE_600_GBPS, -1, 637500},
};

}  // namespace

UROCE_EXPORT const char* ibv_wc_status_str(ibv_wc_status status) {
  static const char* const kText[] = {
      "success", "local length error", "local QP operation error", "local EE context operation error",
      "local protection error", "Work Request Flushed Error", "memory management operation error",
      "bad response error", "local access error", "remote invalid request error", "remote access error",
      "remote operation error", "transport retry counter exceeded", "RNR retry counter exceeded",
      "local RDD violation error", "remote invalid RD request", "aborted error", "invalid EE context number",
      "invalid EE context state", "fatal error", "response timeout error", "general error", "TM error",
      "TM software rendezvous"};
  return pick(kText, status, "unknown");
}

UROCE_EXPORT const char* ibv_node_type_str(ibv_node_type type) {
  static const char* const kText[] = {"unknown", "InfiniBand channel adapter", "InfiniBand switch",
                                      "InfiniBand router", "iWARP NIC", "usNIC", "usNIC UDP", "unspecified"};
  return pick(kText, type, "unknown");
}

UROCE_EXPORT const char* ibv_port_state_str(ibv_port_state state) {
  static const char* const kText[] = {"no state change (NOP)", "down", "init", "armed", "active", "active defer"};
  return pick(kText, state, "unknown");
}

UROCE_EXPORT const char* ibv_event_type_str(ibv_event_type event) {
  static const char* const kText[] = {
      "CQ error", "local work queue catastrophic error", "invalid request local work queue error",
      "local access violation work queue error", "communication established", "send queue drained",
      "path migrated", "path migration request error", "local catastrophic error", "port active", "port error",
      "LID change", "P_Key change", "SM change", "SRQ catastrophic error", "SRQ limit reached",
      "last WQE reached", "client reregistration", "GID table change", "WQ fatal"};
  return pick(kText, event, "unknown");
}

UROCE_EXPORT int ibv_rate_to_mult(ibv_rate rate) {
  for (const RateRow& r : kRates)
    if (r.rate == rate) return r.mult;
  return -1;
}

UROCE_EXPORT ibv_rate mult_to_ibv_rate(int mult) {
  for (const RateRow& r : kRates)
    if (r.mult == mult && mult > 0) return r.rate;
  return IBV_RATE_MAX;
}

UROCE_EXPORT int ibv_rate_to_mbps(ibv_rate rate) {
  for (const RateRow& r : kRates)
    if (r.rate == rate) return r.mbps;
  return -1;
}

UROCE_EXPORT ibv_rate mbps_to_ibv_rate(int mbps) {
  for (const RateRow& r : kRates)
    if (r.mbps == mbps) return r.rate;
  return IBV_RATE_MAX;
}

// --- Verbs uroce does not offer --------------------------------------------

UROCE_V11(ibv_resize_cq) int uroce_v11_ibv_resize_cq(ibv_cq*, int) {
  unsupported("ibv_resize_cq");
  return EOPNOTSUPP;
}

UROCE_V11(ibv_attach_mcast) int uroce_v11_ibv_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
  unsupported("ibv_attach_mcast");
  return EOPNOTSUPP;
}
UROCE_V11(ibv_detach_mcast) int uroce_v11_ibv_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
  unsupported("ibv_detach_mcast");
  return EOPNOTSUPP;
}

UROCE_EXPORT int ibv_rereg_mr(ibv_mr*, int, ibv_pd*, void*, size_t, int) {
  unsupported("ibv_rereg_mr");
  errno = EOPNOTSUPP;
  return IBV_REREG_MR_ERR_INPUT;
}

UROCE_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
  unsupported("ibv_reg_dmabuf_mr");
  errno = EOPNOTSUPP;
  return nullptr;
}

UROCE_EXPORT int ibv_query_qp_data_in_order(ibv_qp*, ibv_wr_opcode, uint32_t) { return 0; }

UROCE_EXPORT int ibv_query_ece(ibv_qp*, ibv_ece*) { return EOPNOTSUPP; }
UROCE_EXPORT int ibv_set_ece(ibv_qp*, ibv_ece*) { return EOPNOTSUPP; }

UROCE_EXPORT ibv_context* ibv_import_device(int) {
  unsupported("ibv_import_device");
  errno = EOPNOTSUPP;
  return nullptr;
}
UROCE_EXPORT ibv_pd* ibv_import_pd(ibv_context*, uint32_t) {
  unsupported("ibv_import_pd");
  errno = EOPNOTSUPP;
  return nullptr;
}
UROCE_EXPORT void ibv_unimport_pd(ibv_pd*) {}
UROCE_EXPORT ibv_mr* ibv_import_mr(ibv_pd*, uint32_t) {
  unsupported("ibv_import_mr");
  errno = EOPNOTSUPP;
  return nullptr;
}
UROCE_EXPORT void ibv_unimport_mr(ibv_mr*) {}
UROCE_EXPORT ibv_dm* ibv_import_dm(ibv_context*, uint32_t) {
  unsupported("ibv_import_dm");
  errno = EOPNOTSUPP;
  return nullptr;
}
UROCE_EXPORT void ibv_unimport_dm(ibv_dm*) {}

UROCE_EXPORT int ibv_resolve_eth_l2_from_gid(ibv_context*, ibv_ah_attr*, uint8_t[6], uint16_t*) {
  unsupported("ibv_resolve_eth_l2_from_gid");
  return EOPNOTSUPP;
}

// Conversions between the kernel's uverbs structs and verbs': only
// librdmacm's kernel client calls them, and uroce has no kernel side.
UROCE_EXPORT void ibv_copy_qp_attr_from_kern(ibv_qp_attr*, void*) { unsupported("ibv_copy_qp_attr_from_kern"); }
UROCE_EXPORT void ibv_copy_ah_attr_from_kern(ibv_ah_attr*, void*) { unsupported("ibv_copy_ah_attr_from_kern"); }
UROCE_EXPORT void ibv_copy_path_rec_from_kern(void*, void*) { unsupported("ibv_copy_path_rec_from_kern"); }
UROCE_EXPORT void ibv_copy_path_rec_to_kern(void*, void*) { unsupported("ibv_copy_path_rec_to_kern"); }

