// SPDX-License-Identifier: BSD-3-Clause
// Congestion-control settings from a file: the same names as --cc and
// --cc-param, one "name = value" per line (config/dcqcn-*.conf).
#include <fstream>

#include "uroce/cc/dcqcn.h"

namespace uroce::cc {
namespace {

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

bool load_cc_file(const std::string& path, CcConfig& cfg, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read congestion-control file " + path;
    return false;
  }
  std::string line;
  bool any_param = false;
  for (int n = 1; std::getline(in, line); ++n) {
    std::string_view s = line;
    if (size_t hash = s.find('#'); hash != std::string_view::npos) s = s.substr(0, hash);
    s = trim(s);
    if (s.empty()) continue;
    const size_t eq = s.find('=');
    const std::string_view key = trim(s.substr(0, eq == std::string_view::npos ? s.size() : eq));
    const std::string_view value = eq == std::string_view::npos ? std::string_view{} : trim(s.substr(eq + 1));
    std::string why;
    bool ok;
    if (key == "cc") {
      // A preset replaces every parameter: it must come before them.
      ok = !any_param && parse_cc(value, cfg, why);
      if (any_param) why = "cc = NAME must come before the parameters it would reset";
    } else {
      ok = apply_cc_param(std::string(key) + "=" + std::string(value), cfg, why);
      any_param = true;
    }
    if (!ok) {
      error = path + ":" + std::to_string(n) + ": " + why;
      return false;
    }
  }
  return true;
}

}  // namespace uroce::cc
