// SPDX-License-Identifier: BSD-3-Clause
// uroce-perf --daemon SOCKET: both ends as clients of one uroced.
#pragma once

#include "options.h"

namespace uroce::perf {

// The test's rows; 0, or 1 with a message.
int run_daemon(const Options& o);

}  // namespace uroce::perf
