// ibv_post_send / ibv_post_recv: validate each work request as verbs does,
// then copy it into the queue (the caller may reuse its WR at once).
#pragma once

#include "qp.h"

namespace uroce::transport {

int post_send(Qp& qp, const SendWr* wr, const SendWr** bad);
int post_recv(Qp& qp, const RecvWr* wr, const RecvWr** bad);
// Into a receive queue (the QP's or an SRQ's); EINVAL/ENOMEM.
int post_recv_to(RecvQueue& rq, engine::Engine& eng, const RecvWr& wr);

}  // namespace uroce::transport
