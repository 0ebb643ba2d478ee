// SPDX-License-Identifier: BSD-3-Clause
#include "log.h"

#include <array>
#include <string_view>

namespace uroced {

// Registered before main, so that EAL's --log-level=uroced:LEVEL finds it.
RTE_LOG_REGISTER(logtype, uroced, INFO);

bool parse_log_level(const std::string& text, uint32_t& level) {
  // The names EAL's --log-level takes, by RTE_LOG_* value.
  static constexpr std::array<std::string_view, 8> kNames = {"emergency", "alert", "critical", "error",
                                                             "warning",   "notice", "info",   "debug"};
  for (uint32_t i = 0; i < kNames.size(); ++i)
    if (text == kNames[i] || text == std::to_string(i + 1)) return level = i + 1, true;
  return false;
}

}  // namespace uroced
