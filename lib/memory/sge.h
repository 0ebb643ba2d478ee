// SPDX-License-Identifier: BSD-3-Clause
// A scatter/gather list: a view of a work request's SGEs, which live in
// their queue's slab (transport/send_queue.h, recv_queue.h). What the memory
// layer gathers from and scatters into.
#pragma once

#include <infiniband/verbs.h>

namespace uroce::memory {

struct SgeList {
  const ibv_sge* sge = nullptr;
  int num = 0;
};

}  // namespace uroce::memory
