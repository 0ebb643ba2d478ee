// SPDX-License-Identifier: BSD-3-Clause
// uroced's messages go through DPDK's log (log type "uroced"), so EAL's
// --log-level (and [daemon] log_level) governs them with DPDK's own.
#pragma once

#include <rte_log.h>

#include <string>

namespace uroced {

extern int logtype;

// "debug", "info", ... or 1..8 -> RTE_LOG_*; false for anything else.
bool parse_log_level(const std::string& text, uint32_t& level);

}  // namespace uroced

#define UROCED_LOG(level, fmt, ...) \
  rte_log(RTE_LOG_##level, uroced::logtype, "uroced: " fmt "\n" __VA_OPT__(, ) __VA_ARGS__)
