// SPDX-License-Identifier: BSD-3-Clause
#include <arpa/inet.h>

#include <cctype>
#include <cstdio>

#include "uroce/wire/eth.h"
#include "uroce/wire/ip_addr.h"

namespace uroce::wire {

std::string MacAddr::to_string() const {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", bytes[0], bytes[1], bytes[2], bytes[3],
                bytes[4], bytes[5]);
  return buf;
}

bool MacAddr::parse(const std::string& text, MacAddr& out) {
  // Exactly "xx:xx:xx:xx:xx:xx" with hex digits: sscanf would also take
  // signs, spaces and "0x".
  if (text.size() != 17) return false;
  MacAddr m;
  for (int i = 0; i < 6; ++i) {
    const char* p = text.c_str() + i * 3;
    if (!std::isxdigit(uint8_t(p[0])) || !std::isxdigit(uint8_t(p[1])) || (i < 5 && p[2] != ':')) return false;
    m.bytes[i] = uint8_t(std::stoi(std::string(p, 2), nullptr, 16));
  }
  out = m;
  return true;
}

std::string IpAddr::to_string() const {
  char buf[INET6_ADDRSTRLEN];
  if (is_v4_mapped()) return inet_ntop(AF_INET, v4_bytes(), buf, sizeof buf);
  return inet_ntop(AF_INET6, bytes.data(), buf, sizeof buf);
}

bool IpAddr::parse(const std::string& text, IpAddr& out) {
  uint8_t b[16];
  if (inet_pton(AF_INET, text.c_str(), b) == 1) {
    out = from_v4(b);
    return true;
  }
  if (inet_pton(AF_INET6, text.c_str(), b) == 1) {
    out = from_v6(b);
    return true;
  }
  return false;
}

}  // namespace uroce::wire
