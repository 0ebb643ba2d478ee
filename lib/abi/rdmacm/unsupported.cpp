// SPDX-License-Identifier: BSD-3-Clause
// The parts of Debian 12's librdmacm ABI that uroce does not offer: each
// fails with ENOSYS and says so once on stderr. Multicast needs UD
// multicast groups (uroce has none); ECE is a ConnectX option; rsocket
// (the r* socket calls) is a byte stream over RDMA that no program of the
// RDMA stack here needs. The symbols are present so that programs and
// librspreload.so that name them still load.
#include <errno.h>

#include <string>

#include "cma.h"

using namespace uroce::abi::rdmacm;

#define UROCE_UNSUPPORTED(name, ret, value)                                      \
  extern "C" __attribute__((visibility("default"))) ret name() {                \
    log_once(#name, #name ": not supported by uroce");                          \
    errno = ENOSYS;                                                             \
    return value;                                                               \
  }

#define UROCE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

int unsupported(const char* name) {
  log_once(name, std::string(name) + ": not supported by uroce");
  return fail(ENOSYS);
}

}  // namespace

UROCE_EXPORT int rdma_join_multicast(rdma_cm_id*, sockaddr*, void*) { return unsupported("rdma_join_multicast"); }
UROCE_EXPORT int rdma_join_multicast_ex(rdma_cm_id*, rdma_cm_join_mc_attr_ex*, void*) {
  return unsupported("rdma_join_multicast_ex");
}
UROCE_EXPORT int rdma_leave_multicast(rdma_cm_id*, sockaddr*) { return unsupported("rdma_leave_multicast"); }
UROCE_EXPORT int rdma_set_local_ece(rdma_cm_id*, ibv_ece*) { return unsupported("rdma_set_local_ece"); }
UROCE_EXPORT int rdma_get_remote_ece(rdma_cm_id*, ibv_ece*) { return unsupported("rdma_get_remote_ece"); }
UROCE_EXPORT int rdma_reject_ece(rdma_cm_id*, const void*, uint8_t) { return unsupported("rdma_reject_ece"); }

UROCE_UNSUPPORTED(rsocket, int, -1)
UROCE_UNSUPPORTED(rbind, int, -1)
UROCE_UNSUPPORTED(rlisten, int, -1)
UROCE_UNSUPPORTED(raccept, int, -1)
UROCE_UNSUPPORTED(rconnect, int, -1)
UROCE_UNSUPPORTED(rshutdown, int, -1)
UROCE_UNSUPPORTED(rclose, int, -1)
UROCE_UNSUPPORTED(rrecv, long, -1)
UROCE_UNSUPPORTED(rrecvfrom, long, -1)
UROCE_UNSUPPORTED(rrecvmsg, long, -1)
UROCE_UNSUPPORTED(rsend, long, -1)
UROCE_UNSUPPORTED(rsendto, long, -1)
UROCE_UNSUPPORTED(rsendmsg, long, -1)
UROCE_UNSUPPORTED(rread, long, -1)
UROCE_UNSUPPORTED(rreadv, long, -1)
UROCE_UNSUPPORTED(rwrite, long, -1)
UROCE_UNSUPPORTED(rwritev, long, -1)
UROCE_UNSUPPORTED(rpoll, int, -1)
UROCE_UNSUPPORTED(rselect, int, -1)
UROCE_UNSUPPORTED(rgetpeername, int, -1)
UROCE_UNSUPPORTED(rgetsockname, int, -1)
UROCE_UNSUPPORTED(rsetsockopt, int, -1)
UROCE_UNSUPPORTED(rgetsockopt, int, -1)
UROCE_UNSUPPORTED(rfcntl, int, -1)
UROCE_UNSUPPORTED(riomap, long, -1)
UROCE_UNSUPPORTED(riounmap, int, -1)
UROCE_UNSUPPORTED(riowrite, long, -1)
