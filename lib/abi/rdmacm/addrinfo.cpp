// SPDX-License-Identifier: BSD-3-Clause
// rdma_getaddrinfo over the C library's getaddrinfo (uroce's addresses are
// IP addresses), and the device list of rdma_get_devices.
#include <errno.h>
#include <netdb.h>

#include <cstdlib>
#include <cstring>

#include "cma.h"

using namespace uroce::abi::rdmacm;

#define UROCE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

sockaddr* copy_addr(const sockaddr* sa, socklen_t len) {
  auto* c = static_cast<sockaddr*>(std::calloc(1, len));
  if (c) std::memcpy(c, sa, len);
  return c;
}

// No name to look up: the answer is the hints' addresses and settings
// (libfabric's verbs provider passes the peer's address this way).
int from_hints(const rdma_addrinfo& h, rdma_addrinfo** res) {
  auto* ai = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
  if (!ai) return fail(ENOMEM);
  ai->ai_flags = h.ai_flags;
  ai->ai_family = h.ai_family;
  ai->ai_qp_type = h.ai_qp_type ? h.ai_qp_type : IBV_QPT_RC;
  ai->ai_port_space = h.ai_port_space ? h.ai_port_space : RDMA_PS_TCP;
  if (h.ai_src_addr && h.ai_src_len) {
    ai->ai_src_addr = copy_addr(h.ai_src_addr, h.ai_src_len);
    ai->ai_src_len = h.ai_src_len;
  }
  if (h.ai_dst_addr && h.ai_dst_len) {
    ai->ai_dst_addr = copy_addr(h.ai_dst_addr, h.ai_dst_len);
    ai->ai_dst_len = h.ai_dst_len;
  }
  if (!ai->ai_family) ai->ai_family = ai->ai_dst_addr ? ai->ai_dst_addr->sa_family
                                      : ai->ai_src_addr ? ai->ai_src_addr->sa_family : AF_INET;
  *res = ai;
  return 0;
}

}  // namespace

UROCE_EXPORT int rdma_getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints,
                                  rdma_addrinfo** res) {
  if (!res || (!node && !service && !hints)) return fail(EINVAL);
  if (!node && !service) return from_hints(*hints, res);
  addrinfo h{};
  h.ai_socktype = SOCK_STREAM;
  int flags = 0;
  if (hints) {
    flags = hints->ai_flags;
    if (hints->ai_family == AF_INET || hints->ai_family == AF_INET6) h.ai_family = hints->ai_family;
    else if (hints->ai_family != 0 && hints->ai_family != AF_UNSPEC) return fail(EAFNOSUPPORT);
    if (hints->ai_qp_type == IBV_QPT_UD || hints->ai_port_space == RDMA_PS_UDP) h.ai_socktype = SOCK_DGRAM;
  }
  if (flags & RAI_PASSIVE) h.ai_flags |= AI_PASSIVE;
  if (flags & RAI_NUMERICHOST) h.ai_flags |= AI_NUMERICHOST;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(node, service, &h, &found);
  // librdmacm hands getaddrinfo's failure on as it is: an EAI_* code for
  // gai_strerror.
  if (rc != 0) return rc;
  auto* ai = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
  if (!ai) {
    freeaddrinfo(found);
    return fail(ENOMEM);
  }
  ai->ai_flags = flags & RAI_PASSIVE;
  ai->ai_family = found->ai_family;
  ai->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
  ai->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space
                                                    : (ai->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP);
  sockaddr* addr = copy_addr(found->ai_addr, found->ai_addrlen);
  if (flags & RAI_PASSIVE) {
    ai->ai_src_addr = addr;
    ai->ai_src_len = found->ai_addrlen;
  } else {
    ai->ai_dst_addr = addr;
    ai->ai_dst_len = found->ai_addrlen;
    if (hints && hints->ai_src_addr && hints->ai_src_len) {
      ai->ai_src_addr = copy_addr(hints->ai_src_addr, hints->ai_src_len);
      ai->ai_src_len = hints->ai_src_len;
    }
  }
  freeaddrinfo(found);
  *res = ai;
  return 0;
}

UROCE_EXPORT void rdma_freeaddrinfo(rdma_addrinfo* res) {
  while (res) {
    rdma_addrinfo* next = res->ai_next;
    std::free(res->ai_src_addr);
    std::free(res->ai_dst_addr);
    std::free(res->ai_src_canonname);
    std::free(res->ai_dst_canonname);
    std::free(res->ai_route);
    std::free(res->ai_connect);
    std::free(res);
    res = next;
  }
}

UROCE_EXPORT ibv_context** rdma_get_devices(int* num_devices) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  int n = 0;
  if (load_devices(r)) {
    for (auto& d : r.devs) {
      if (!d->verbs) d->verbs = ibv_open_device(d->device);
      n += d->verbs != nullptr;
    }
  }
  auto** list = static_cast<ibv_context**>(std::calloc(size_t(n) + 1, sizeof(ibv_context*)));
  if (!list) {
    errno = ENOMEM;
    return nullptr;
  }
  int i = 0;
  for (auto& d : r.devs)
    if (d->verbs) list[i++] = d->verbs;
  if (num_devices) *num_devices = n;
  return list;
}

UROCE_EXPORT void rdma_free_devices(ibv_context** list) { std::free(list); }
