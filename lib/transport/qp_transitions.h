// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <infiniband/verbs.h>

namespace uroce::transport {

struct Transition {
  ibv_qp_state from;
  ibv_qp_state to;
  int rc_req, rc_opt, ud_req, ud_opt, uc_req, uc_opt;
};

// True if `mask` is exactly right for from -> to on a QP of this type.
bool transition_allowed(ibv_qp_type type, ibv_qp_state from, ibv_qp_state to, int mask);

}  // namespace uroce::transport
