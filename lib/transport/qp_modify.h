// SPDX-License-Identifier: BSD-3-Clause
// ibv_modify_qp for RC and UD: which attributes a transition requires and
// allows (the kernel's qp_state_table), value checks, and what each state
// entry does to the requester, completer and responder.
#pragma once

#include <infiniband/verbs.h>

#include "qp.h"

namespace uroce::transport {

// 0 or EINVAL (bad transition, mask or value), EHOSTUNREACH (no MAC for
// the destination GID).
int modify_qp(Qp& qp, const ibv_qp_attr& attr, int mask);
void query_qp(const Qp& qp, ibv_qp_attr& attr);

// Largest path MTU a port with this Ethernet MTU carries (IPv6 worst case).
ibv_mtu max_path_mtu(uint16_t port_mtu);

}  // namespace uroce::transport
