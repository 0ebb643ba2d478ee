// SPDX-License-Identifier: BSD-3-Clause
// Client/server mode: one side per process, over a real port (--dev),
// connected by perftest's out-of-band TCP exchange (docs/exchange.md), so
// that either side can also be perftest itself.
#pragma once

#include "options.h"

namespace uroce::perf {

// Runs one side and ends the process: 0, or 1 after printing what failed.
[[noreturn]] void run_remote(const Options& o);

}  // namespace uroce::perf
