// One ping-pong session on an open device: create the context, post the
// receives, print the local address(es), swap them with the peer over TCP
// in the example's format, connect, run, and print the result.
#pragma once

#include <string>

#include "app_device.h"
#include "options.h"

namespace uroce::pingpong {

// rc_pingpong (Mode::rc) and ud_pingpong (Mode::ud): one QP.
int run_single_qp(app::AppDevice& ad, const Options& o);
// srq_pingpong: -q QPs on one SRQ.
int run_srq(app::AppDevice& ad, const Options& o);

// "uroce-pingpong: MSG" on stderr; returns 1.
int fail(const std::string& msg);

}  // namespace uroce::pingpong
