// SPDX-License-Identifier: BSD-3-Clause
// --cm: rc_pingpong's run on a connection the CM sets up on the wire
// (uroce's connection manager, rdma_cm's port space and messages) instead
// of the TCP exchange: the server listens on -p, the client connects to
// the server's RoCE address.
#pragma once

#include "options.h"
#include "session.h"

namespace uroce::pingpong {

int run_cm(Station& st, const Options& o);

}  // namespace uroce::pingpong
