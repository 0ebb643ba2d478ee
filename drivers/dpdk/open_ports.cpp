// SPDX-License-Identifier: BSD-3-Clause
#include "open_ports.h"

#include <mutex>
#include <set>

namespace uroce::dpdk {
namespace {

std::mutex g_mutex;
std::set<uint16_t>& ports() {
  static std::set<uint16_t> s;
  return s;
}

}  // namespace

bool claim_port(uint16_t port_id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return ports().insert(port_id).second;
}

void release_port(uint16_t port_id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ports().erase(port_id);
}

}  // namespace uroce::dpdk
