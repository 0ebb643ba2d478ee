#include <arpa/inet.h>

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
  unsigned b[6];
  char tail;
  if (std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
                  &tail) != 6)
    return false;
  for (int i = 0; i < 6; ++i) out.bytes[i] = uint8_t(b[i]);
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
