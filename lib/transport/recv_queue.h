// A receive queue: the QP's own, or the one inside a shared receive queue.
#pragma once

#include "wqe.h"
#include "work_queue.h"

namespace uroce {
class SharedReceiveQueue;
}

namespace uroce::transport {

struct RecvQueue {
  WorkQueue<RecvWqe> wq;
  uint32_t max_sge = 1;
  // SRQ only: the armed limit (ibv_modify_srq IBV_SRQ_LIMIT), 0 = off.
  // When a receive taken leaves fewer WQEs than this, the SRQ_LIMIT_REACHED
  // event fires once and the limit disarms.
  uint32_t limit = 0;
  // SRQ only: QPs drawing from it (it must outlive them), and the public
  // handle its events name.
  uint32_t users = 0;
  SharedReceiveQueue* owner = nullptr;
};

}  // namespace uroce::transport
