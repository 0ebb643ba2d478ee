// SPDX-License-Identifier: BSD-3-Clause
// One ping-pong session on an open device: create the context, post the
// receives, print the local address(es), swap them with the peer over TCP
// in the example's format, connect, run, and print the result.
#pragma once

#include <string>

#include "options.h"
#include "uroce/exchange/tcp_channel.h"
#include "uroce/port/endpoint.h"

namespace uroce::pingpong {

// rc_pingpong (Mode::rc) and ud_pingpong (Mode::ud): one QP. `listener`:
// the server's, bound before anything was printed; nullptr for a client.
int run_single_qp(uroce::Endpoint& ep, exchange::TcpListener* listener, const Options& o);
// srq_pingpong: -q QPs on one SRQ.
int run_srq(uroce::Endpoint& ep, exchange::TcpListener* listener, const Options& o);

// "uroce-pingpong: MSG" on stderr; returns 1.
int fail(const std::string& msg);

}  // namespace uroce::pingpong
