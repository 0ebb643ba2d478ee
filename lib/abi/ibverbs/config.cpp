// SPDX-License-Identifier: BSD-3-Clause
#include "config.h"

#include <algorithm>

#include <infiniband/verbs.h>
#include <sys/stat.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "uroce/wire/eth.h"
#include "uroce/wire/ip_addr.h"

namespace uroce::abi {
namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

DeviceSettings& device_named(Settings& s, const std::string& name) {
  for (DeviceSettings& d : s.devices)
    if (d.name == name) return d;
  s.devices.push_back(DeviceSettings{});
  s.devices.back().name = name;
  return s.devices.back();
}

// Decimal digits only (no sign, no blank: std::strtol would take " 5"
// and "+5"), within [lo, hi].
bool parse_decimal(const std::string& text, long lo, long hi, long& out) {
  const char* const last = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), last, out);
  return !text.empty() && text[0] != '-' && ec == std::errc{} && p == last && out >= lo && out <= hi;
}

bool parse_mtu(const std::string& text, uint16_t& mtu) {
  long v = 0;
  if (!parse_decimal(text, 68, 9600, v)) return false;
  mtu = static_cast<uint16_t>(v);
  return true;
}

// A VLAN id (0..4094) or priority (0..7).
bool parse_small(const std::string& text, int max, int& out) {
  long v = 0;
  if (!parse_decimal(text, 0, max, v)) return false;
  out = int(v);
  return true;
}

bool set_vlan(const std::string& what, const std::string& value, int& vlan, std::string& error) {
  return parse_small(value, 4094, vlan) || (error = what + " '" + value + "' is not a VLAN id (0..4094)", false);
}

bool set_pcp(const std::string& what, const std::string& value, int& pcp, std::string& error) {
  return parse_small(value, 7, pcp) || (error = what + " '" + value + "' is not an 802.1p priority (0..7)", false);
}

bool set_device_key(DeviceSettings& d, const std::string& key, const std::string& value, std::string& error) {
  if (key == "dev") d.dev = value;
  else if (key == "ip") d.ip = value;
  else if (key == "mac") d.mac = value;
  else if (key == "daemon") d.daemon = value;
  else if (key == "mtu") {
    if (!parse_mtu(value, d.mtu)) return error = "mtu '" + value + "' is not in 68..9600", false;
    d.mtu_given = true;
  } else if (key == "vlan") {
    return set_vlan("vlan", value, d.vlan, error);
  } else if (key == "pcp") {
    return set_pcp("pcp", value, d.pcp, error);
  } else {
    return error = "unknown key '" + key + "' (dev, ip, mac, mtu, vlan, pcp, daemon)", false;
  }
  return true;
}

}  // namespace

std::vector<std::string> split_args(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string word;
  while (in >> word) out.push_back(word);
  return out;
}

bool parse_ini(const std::string& text, const std::string& origin, Settings& out, std::string& error) {
  std::istringstream in(text);
  std::string line, section;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string where = origin + ":" + std::to_string(n) + ": ";
    const size_t hash = line.find_first_of(";#");
    line = trim(hash == std::string::npos ? line : line.substr(0, hash));
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']') return error = where + "unterminated section header", false;
      section = trim(line.substr(1, line.size() - 2));
      if (section != "eal" && section.rfind("device ", 0) != 0)
        return error = where + "unknown section [" + section + "] ([eal], [device NAME])", false;
      if (section != "eal") {
        const std::string name = trim(section.substr(7));
        if (name.empty() || name.size() >= IBV_SYSFS_NAME_MAX)
          return error = where + "bad device name '" + name + "'", false;
        device_named(out, name);
      }
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos) return error = where + "expected key = value", false;
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (section == "eal") {
      if (key != "args") return error = where + "unknown key '" + key + "' in [eal] (args)", false;
      out.eal_args = split_args(value);
    } else if (!section.empty()) {
      if (!set_device_key(device_named(out, trim(section.substr(7))), key, value, error))
        return error = where + error, false;
    } else {
      return error = where + "key outside a section", false;
    }
  }
  return true;
}

bool parse_addresses(const std::string& text, std::string& error) {
  std::vector<wire::IpAddr> seen;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string one = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    wire::IpAddr ip;
    if (!wire::IpAddr::parse(one, ip)) return error = "address '" + one + "' is not IPv4 or IPv6", false;
    if (std::find(seen.begin(), seen.end(), ip) != seen.end()) return error = "address '" + one + "' is given twice", false;
    seen.push_back(ip);
    if (seen.size() > size_t(kMaxAddresses))
      return error = "more than " + std::to_string(kMaxAddresses) + " addresses in '" + text + "'", false;
    if (comma == std::string::npos) return true;
    start = comma + 1;
  }
}

bool validate_device(const DeviceSettings& d, std::string& error) {
  const std::string who = "device " + d.name + ": ";
  if (!d.daemon.empty()) {
    // The daemon's port, address and MAC: settings of a port of its own
    // would be silently ignored.
    if (!d.dev.empty() || !d.ip.empty() || !d.mac.empty() || d.mtu_given || d.vlan >= 0 || d.pcp >= 0)
      return error = who + "a daemon socket (UROCE_DAEMON or daemon=) takes no dev, ip, mac, mtu, vlan or pcp", false;
    return true;
  }
  if (d.dev.empty()) return error = who + "no port (UROCE_DEV or dev=)", false;
  if (d.dev.find_first_of(" \t") != std::string::npos)
    return error = who + "port '" + d.dev + "' contains a space", false;
  if (d.dev.front() == ',' || d.dev.back() == ',')
    return error = who + "port '" + d.dev + "' is not a PCI address or vdev string", false;
  if (d.ip.empty()) return error = who + "no address (UROCE_IP or ip=)", false;
  if (!parse_addresses(d.ip, error)) return error = who + error, false;
  wire::MacAddr mac;
  if (!d.mac.empty() && !wire::MacAddr::parse(d.mac, mac))
    return error = who + "mac '" + d.mac + "' is not a MAC address", false;
  return true;
}

bool load_settings(Settings& out, std::string& error) {
  out = Settings{};
  const std::string file = env("UROCE_CONFIG");
  if (!file.empty()) {
    // A directory opens and reads as empty; /dev/zero never ends.
    struct stat st {};
    if (stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      return error = "UROCE_CONFIG: cannot read " + file + (stat(file.c_str(), &st) == 0 ? ": not a regular file" : ""),
             false;
    std::ifstream in(file);
    if (!in) return error = "UROCE_CONFIG: cannot read " + file, false;
    std::stringstream text;
    text << in.rdbuf();
    if (!parse_ini(text.str(), file, out, error)) return false;
  }
  const std::string eal = env("UROCE_EAL");
  if (!eal.empty()) out.eal_args = split_args(eal);
  const std::string dev = env("UROCE_DEV"), ip = env("UROCE_IP"), mac = env("UROCE_MAC"), mtu = env("UROCE_MTU");
  const std::string daemon = env("UROCE_DAEMON"), vlan = env("UROCE_VLAN"), pcp = env("UROCE_PCP");
  if (!daemon.empty()) {
    // Wins over the file's port for uroce0, as the other variables do.
    DeviceSettings& d = device_named(out, "uroce0");
    d = DeviceSettings{};
    d.name = "uroce0";
    d.daemon = daemon;
  }
  if (!dev.empty() || !ip.empty() || !mac.empty() || !mtu.empty() || !vlan.empty() || !pcp.empty()) {
    DeviceSettings& d = device_named(out, "uroce0");
    if (!dev.empty()) d.dev = dev;
    if (!ip.empty()) d.ip = ip;
    if (!mac.empty()) d.mac = mac;
    if (!mtu.empty() && !parse_mtu(mtu, d.mtu)) return error = "UROCE_MTU '" + mtu + "' is not in 68..9600", false;
    if (!mtu.empty()) d.mtu_given = true;
    if (!vlan.empty() && !set_vlan("UROCE_VLAN", vlan, d.vlan, error)) return false;
    if (!pcp.empty() && !set_pcp("UROCE_PCP", pcp, d.pcp, error)) return false;
  }
  for (const DeviceSettings& d : out.devices)
    if (!validate_device(d, error)) return false;
  return true;
}

}  // namespace uroce::abi
