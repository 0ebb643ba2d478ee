// A receive queue: the QP's own, or the one inside a shared receive queue.
#pragma once

#include "wqe.h"
#include "work_queue.h"

namespace uroce::transport {

struct RecvQueue {
  WorkQueue<RecvWqe> wq;
  uint32_t max_sge = 1;
};

}  // namespace uroce::transport
