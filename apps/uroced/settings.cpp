// SPDX-License-Identifier: BSD-3-Clause
#include "settings.h"

#include <sched.h>
#include <sys/stat.h>

#include <rte_cfgfile.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>
#include <memory>

#include "app_support.h"
#include "log.h"
#include "uroce/port/eal.h"

namespace uroced {
namespace {

template <typename T>
bool parse_number(const char* text, T& out, int base = 10) {
  const std::string_view v(text);
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out, base);
  return ec == std::errc() && p == v.data() + v.size() && !v.empty();
}

// vlan and pcp: a number of no sign (a large one is left for check_vlan
// to name); -1 is the settings' own "not given".
bool parse_tag_field(const char* text, int& out) {
  uint32_t v = 0;
  if (!parse_number(text, v)) return false;
  out = int(std::min<uint32_t>(v, 1u << 16));
  return true;
}

struct Reader {
  rte_cfgfile* cfg;
  std::string& error;

  // Copies a string entry if present.
  void text(const char* section, const char* key, std::string& out) const {
    if (const char* v = rte_cfgfile_get_entry(cfg, section, key)) out = v;
  }
  bool tag_field(const char* section, const char* key, int& out) const {
    const char* v = rte_cfgfile_get_entry(cfg, section, key);
    if (v == nullptr || parse_tag_field(v, out)) return true;
    error = std::string("[") + section + "] " + key + " = '" + v + "' is not a number";
    return false;
  }
  template <typename T>
  bool number(const char* section, const char* key, T& out) const {
    const char* v = rte_cfgfile_get_entry(cfg, section, key);
    if (v == nullptr || parse_number(v, out)) return true;
    error = std::string("[") + section + "] " + key + " = '" + v + "' is not a number";
    return false;
  }
};

// What the file may set; anything else is a mistake worth naming (a key
// spelt wrong would otherwise leave its default in force unnoticed).
// The keys of a section, or nullptr for a section the file may not have.
const std::vector<std::string>* known_keys(const std::string& section) {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kKeys = {
      {"daemon", {"socket", "socket_mode", "socket_group", "allow_uids", "eal", "engine_cpu", "log_level", "lcores",
                  "file_prefix", "idle_sleep_us", "hugepage_regions"}},
      {"port", {"dev", "ip", "mac", "mtu", "vlan", "pcp", "pcap", "rx_interrupt", "cc", "cc_config", "cc_param", "socket"}},
      {"limits", {"max_pd", "max_cq", "max_qp", "max_mr", "max_ah", "max_mw", "max_mr_bytes", "arena_bytes"}},
  };
  for (const auto& [name, keys] : kKeys)
    if (name == section) return &keys;
  return nullptr;
}

bool only_known_keys(rte_cfgfile* cfg, std::string& error) {
  const int sections = rte_cfgfile_num_sections(cfg, "", 0);
  std::vector<rte_cfgfile_entry> entries(256);
  for (int i = 0; i < sections; ++i) {
    char name[CFG_NAME_LEN] = {};
    const int n = rte_cfgfile_section_entries_by_index(cfg, i, name, entries.data(), int(entries.size()));
    const std::vector<std::string>* keys = known_keys(name);
    if (keys == nullptr) return error = std::string("unknown section [") + name + "]", false;
    for (int k = 0; k < n; ++k) {
      const std::string key = entries[size_t(k)].name;
      if (std::find(keys->begin(), keys->end(), key) == keys->end())
        return error = std::string("[") + name + "] " + key + ": unknown key", false;
    }
  }
  return true;
}

}  // namespace

bool parse_uids(const std::string& text, std::vector<uid_t>& out) {
  out.clear();
  size_t at = 0;
  while (at <= text.size() && !text.empty()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    uid_t uid;
    if (!parse_number(text.substr(at, comma - at).c_str(), uid)) return false;
    out.push_back(uid);
    at = comma + 1;
  }
  return true;
}

bool parse_mode(const std::string& text, mode_t& out) {
  unsigned mode = 0;
  if (!parse_number(text.c_str(), mode, 8) || mode > 07777) return false;
  out = mode_t(mode);
  return true;
}

namespace {

// Every value of a key that may repeat, in file order.
std::vector<std::string> all_values(rte_cfgfile* cfg, const char* section, const char* key) {
  std::vector<rte_cfgfile_entry> entries(256);
  const int n = rte_cfgfile_section_entries(cfg, section, entries.data(), int(entries.size()));
  std::vector<std::string> out;
  for (int k = 0; k < n; ++k)
    if (std::string(entries[size_t(k)].name) == key) out.push_back(entries[size_t(k)].value);
  return out;
}

// "2", "2-3", "0,4-7": what EAL takes as one lcore's CPU set.
bool cpu_list(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == ',' || c == '-';
  });
}

bool eal_sets_lcores(const std::string& eal) {
  for (const std::string& a : uroce::app::split_args(eal))
    if (a == "-l" || a == "-c" || a.rfind("-l", 0) == 0 || a.rfind("-c", 0) == 0 || a.rfind("--lcores", 0) == 0)
      return true;
  return false;
}

// A PCI address (EAL must be allowed to probe it) rather than a vdev string.
bool is_pci(const std::string& dev) {
  return dev.find(':') != std::string::npos && dev.find('.') != std::string::npos &&
         dev.find(',') == std::string::npos && dev.rfind("net_", 0) != 0;
}

// The second [port] section on (the section at `index` of the file).
bool read_more_port(rte_cfgfile* cfg, int index, size_t nth, PortSettings& p, std::string& error) {
  std::vector<rte_cfgfile_entry> entries(256);
  char name[CFG_NAME_LEN] = {};
  const int n = rte_cfgfile_section_entries_by_index(cfg, index, name, entries.data(), int(entries.size()));
  const std::string where = "[port] " + std::to_string(nth + 1) + ": ";
  for (int k = 0; k < n; ++k) {
    const std::string key = entries[size_t(k)].name, value = entries[size_t(k)].value;
    if (key == "dev") p.dev = value;
    else if (key == "ip") p.ip = value;
    else if (key == "mac") p.mac = value;
    else if (key == "pcap") p.pcap = value;
    else if (key == "rx_interrupt") p.rx_interrupt = value;
    else if (key == "cc") p.cc = value;
    else if (key == "cc_config") p.cc_config = value;
    else if (key == "cc_param") p.cc_params.push_back(value);
    else if (key == "socket") p.socket = value;
    else if (key == "mtu" && !parse_number(value.c_str(), p.mtu))
      return error = where + "mtu = '" + value + "' is not a number", false;
    else if ((key == "vlan" || key == "pcp") && !parse_tag_field(value.c_str(), key == "vlan" ? p.vlan : p.pcp))
      return error = where + key + " = '" + value + "' is not a number", false;
  }
  return true;
}

}  // namespace

std::vector<PortSettings> all_ports(const Settings& s) {
  PortSettings first;
  first.dev = s.dev;
  first.ip = s.ip;
  first.mac = s.mac;
  first.mtu = s.mtu;
  first.vlan = s.vlan;
  first.pcp = s.pcp;
  first.pcap = s.pcap;
  first.rx_interrupt = s.rx_interrupt;
  first.cc = s.cc;
  first.cc_config = s.cc_config;
  first.cc_params = s.cc_params;
  first.cc_resolved = s.cc_resolved;
  first.socket = s.socket;
  std::vector<PortSettings> v{first};
  v.insert(v.end(), s.more_ports.begin(), s.more_ports.end());
  return v;
}

namespace {

// A VLAN id of 4095 is reserved (802.1Q); -1 is "not given" (the file
// and the command line take no sign).
bool check_vlan(const PortSettings& p, const std::string& where, std::string& error) {
  if (p.vlan < -1 || p.vlan > 4094)
    return error = where + "vlan = " + std::to_string(p.vlan) + " is not a VLAN id (0..4094)", false;
  if (p.pcp < -1 || p.pcp > 7)
    return error = where + "pcp = " + std::to_string(p.pcp) + " is not an 802.1p priority (0..7)", false;
  return true;
}

bool check_more_ports(const Settings& s, std::string& error) {
  if (s.more_ports.size() + 1 > kMaxPorts)
    return error = std::to_string(s.more_ports.size() + 1) + " ports: at most " + std::to_string(kMaxPorts), false;
  std::vector<std::string> sockets{s.socket}, devs{s.dev}, pcaps;
  if (!s.pcap.empty()) pcaps.push_back(s.pcap);
  auto taken = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  for (size_t i = 0; i < s.more_ports.size(); ++i) {
    const PortSettings& p = s.more_ports[i];
    const std::string where = "[port] " + std::to_string(i + 2) + ": ";
    if (p.dev.empty() || p.ip.empty()) return error = where + "dev and ip are required", false;
    if (p.socket.empty())
      return error = where + "no socket: each port after the first needs a socket of its own, its clients' way to it",
             false;
    if (taken(sockets, p.socket)) return error = where + "socket " + p.socket + " is another port's too", false;
    if (taken(devs, p.dev)) return error = where + "dev " + p.dev + " is another port's too", false;
    if (!p.pcap.empty() && taken(pcaps, p.pcap))
      return error = where + "pcap " + p.pcap + " is another port's capture too", false;
    sockets.push_back(p.socket);
    devs.push_back(p.dev);
    if (!p.pcap.empty()) pcaps.push_back(p.pcap);
    if (p.rx_interrupt != "auto" && p.rx_interrupt != "off")
      return error = where + "rx_interrupt = '" + p.rx_interrupt + "' is neither auto nor off", false;
    if (!check_vlan(p, where, error)) return false;
  }
  return true;
}

}  // namespace

bool check_settings(const Settings& s, std::string& error) {
  uint32_t level;
  if (!parse_log_level(s.log_level, level))
    return error = "log level '" + s.log_level + "' is none of emergency, alert, critical, error, warning, notice, "
                   "info, debug (or 1..8)",
           false;
  if (!s.lcores.empty() && !cpu_list(s.lcores))
    return error = "lcores '" + s.lcores + "' is not a CPU list (such as 2 or 2-3 or 0,4)", false;
  if (s.file_prefix.empty() || s.file_prefix.find('/') != std::string::npos)
    return error = "file_prefix '" + s.file_prefix + "' is empty or has a '/'", false;
  if (!s.lcores.empty() && eal_sets_lcores(s.eal))
    return error = "lcores and an EAL -l, -c or --lcores in eal: give one of them", false;
  mode_t mode;
  if (!parse_mode(s.socket_mode, mode))
    return error = "socket mode '" + s.socket_mode + "' is not octal permission bits (such as 0660)", false;
  if (s.rx_interrupt != "auto" && s.rx_interrupt != "off")
    return error = "rx_interrupt = '" + s.rx_interrupt + "' is neither auto nor off", false;
  if (s.hugepage_regions != "auto" && s.hugepage_regions != "off")
    return error = "hugepage_regions = '" + s.hugepage_regions + "' is neither auto nor off", false;
  if (s.idle_sleep_us > kMaxIdleSleepUs)
    return error = "idle_sleep_us = " + std::to_string(s.idle_sleep_us) + " is above the maximum of " +
                   std::to_string(kMaxIdleSleepUs) + " (a peer would retransmit before the engine looks)",
           false;
  if (!check_vlan(all_ports(s)[0], "[port] ", error)) return false;
  if (!check_more_ports(s, error)) return false;
  if (s.engine_cpu < -1)
    return error = "engine_cpu = " + std::to_string(s.engine_cpu) + " is not a CPU (-1: not pinned)", false;
  if (s.limits.arena_bytes < kMinArenaBytes)
    return error = "[limits] arena_bytes = " + std::to_string(s.limits.arena_bytes) + " is below the minimum of " +
                   std::to_string(kMinArenaBytes),
           false;
  if (s.limits.arena_bytes > kMaxArenaBytes)
    return error = "[limits] arena_bytes = " + std::to_string(s.limits.arena_bytes) + " is above the maximum of " +
                   std::to_string(kMaxArenaBytes) + " (each client's arena is made whole at HELLO)",
           false;
  return true;
}

namespace {

bool apply_cc(const std::string& cc, const std::string& file, const std::vector<std::string>& params,
              uroce::cc::CcConfig& out, std::string& error) {
  bool ok = cc.empty() || uroce::cc::parse_cc(cc, out, error);
  if (ok && !file.empty()) ok = uroce::cc::load_cc_file(file, out, error);
  for (size_t i = 0; ok && i < params.size(); ++i) ok = uroce::cc::apply_cc_param(params[i], out, error);
  return ok;
}

}  // namespace

bool congestion_control(const Settings& s, uroce::cc::CcConfig& out, std::string& error) {
  return apply_cc(s.cc, s.cc_config, s.cc_params, out, error);
}

bool congestion_control(const PortSettings& p, uroce::cc::CcConfig& out, std::string& error) {
  return apply_cc(p.cc, p.cc_config, p.cc_params, out, error);
}

// The CPUs this process may run on, in EAL's list syntax ("0,1").
static std::string allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::string list;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) {
        if (!list.empty()) list += ',';
        list += std::to_string(cpu);
      }
  return list.empty() ? "0" : list;
}

std::vector<std::string> eal_args(const Settings& s) {
  // DPDK's own messages at error, as uroce's tools keep them; uroced's at
  // the level asked for.
  std::vector<std::string> v = {"--log-level=*:error", "--log-level=uroced:" + s.log_level};
  std::vector<std::string> user = uroce::app::split_args(s.eal);
  auto given = [&user](const std::string& flag) {
    return std::any_of(user.begin(), user.end(), [&](const std::string& a) { return a == flag || a.rfind(flag + "=", 0) == 0; });
  };
  // Two lcores on the same CPUs: the main one serves the clients, the
  // worker runs the engine (an EAL lcore, so DPDK's multi-process stays
  // available; see start_capture_service). Unless eal names the lcores.
  const bool user_lcores = given("--lcores") || std::any_of(user.begin(), user.end(), [](const std::string& a) {
                             return a.size() >= 2 && a[0] == '-' && (a[1] == 'l' || a[1] == 'c');
                           });
  if (!user_lcores) {
    // A worker per port: each engine on an lcore of its own.
    const std::string cpus = s.lcores.empty() ? allowed_cpus() : s.lcores;
    std::string lcores = "--lcores=0@(" + cpus + ")";
    for (size_t i = 1; i <= 1 + s.more_ports.size(); ++i) lcores += "," + std::to_string(i) + "@(" + cpus + ")";
    v.push_back(lcores);
  }
  // The first port's PCI address is allowed when it opens; the others' must
  // be too, before EAL probes.
  for (const PortSettings& p : s.more_ports)
    if (is_pci(p.dev)) v.push_back("-a" + p.dev);
  // DPDK's telemetry socket at a path that does not change from one start
  // to the next (/var/run/dpdk/PREFIX/dpdk_telemetry.v2), unless eal says
  // otherwise.
  if (!given("--telemetry") && !given("--no-telemetry")) v.push_back("--telemetry");
  if (!given("--file-prefix")) v.push_back("--file-prefix=" + s.file_prefix);
  // With hugepages the daemon is a multi-process primary, the mode DPDK's
  // dpdk-dumpcap attaches to as a secondary (uroce's tools take
  // --in-memory, which shares nothing). Without them EAL shares nothing
  // either way.
  if (uroce::eal_hugepages_available() &&
      !given("--no-huge") && !given("--in-memory") && !given("--no-shconf") && !given("--proc-type"))
    v.push_back("--proc-type=primary");
  for (std::string& a : user) v.push_back(std::move(a));
  return v;
}

namespace {

std::string trimmed(std::string_view v) {
  const size_t b = v.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const size_t e = v.find_last_not_of(" \t\r");
  return std::string(v.substr(b, e - b + 1));
}

// DPDK's rte_cfgfile skips a line without '=', cuts values at 255
// characters, takes the first of two equal keys (the last in a repeated
// section) and reads only the first [daemon] or [limits]; its failures say
// nothing of where. So the text is checked line by line first, and each of
// these is refused naming the file, the line and the key.
bool check_config_text(const std::string& file, std::string& error) {
  struct stat st {};
  if (stat(file.c_str(), &st) != 0)
    return error = "cannot read the configuration file " + file + ": " + std::strerror(errno), false;
  if (!S_ISREG(st.st_mode)) return error = "cannot read the configuration file " + file + ": not a regular file", false;
  std::ifstream in(file);
  if (!in) return error = "cannot read the configuration file " + file + ": " + std::strerror(errno), false;
  std::set<std::string> single_seen;
  std::set<std::string> keys;  // of the section being read
  std::string section, line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string at = file + ":" + std::to_string(n) + ": ";
    const std::string text = trimmed(std::string_view(line).substr(0, line.find(';')));
    if (text.empty()) continue;
    if (text.front() == '[') {
      if (text.back() != ']') return error = at + "'" + text + "' is not a [section] line", false;
      section = trimmed(std::string_view(text).substr(1, text.size() - 2));
      if (section != "port" && !single_seen.insert(section).second)
        return error = at + "a second [" + section + "] section", false;
      keys.clear();
      continue;
    }
    const size_t eq = text.find('=');
    if (eq == std::string::npos) return error = at + "'" + text + "' is not KEY = VALUE", false;
    const std::string key = trimmed(std::string_view(text).substr(0, eq));
    const std::string value = trimmed(std::string_view(text).substr(eq + 1));
    if (section.empty()) return error = at + key + " is outside any [section]", false;
    if (key.empty()) return error = at + "'" + text + "' has no key", false;
    if (value.empty()) return error = at + "[" + section + "] " + key + " has no value", false;
    if (key.size() >= CFG_NAME_LEN || value.size() >= CFG_VALUE_LEN)
      return error = at + "[" + section + "] " + key + ": longer than " +
                     std::to_string(key.size() >= CFG_NAME_LEN ? CFG_NAME_LEN - 1 : CFG_VALUE_LEN - 1) +
                     " characters",
             false;
    // cc_param is the one key given once per parameter.
    if (key != "cc_param" && !keys.insert(key).second)
      return error = at + "[" + section + "] " + key + " is given twice", false;
  }
  if (in.bad()) return error = "cannot read the configuration file " + file, false;
  return true;
}

}  // namespace

bool load_config(const std::string& file, Settings& s, std::string& error) {
  if (!check_config_text(file, error)) return false;
  std::unique_ptr<rte_cfgfile, int (*)(rte_cfgfile*)> cfg(rte_cfgfile_load(file.c_str(), 0), rte_cfgfile_close);
  if (!cfg) return error = "cannot read the configuration file " + file, false;
  if (!only_known_keys(cfg.get(), error)) return error = file + ": " + error, false;
  const Reader r{cfg.get(), error};
  r.text("daemon", "socket", s.socket);
  r.text("daemon", "socket_mode", s.socket_mode);
  r.text("daemon", "socket_group", s.socket_group);
  r.text("daemon", "eal", s.eal);
  r.text("daemon", "log_level", s.log_level);
  r.text("daemon", "lcores", s.lcores);
  r.text("daemon", "file_prefix", s.file_prefix);
  r.text("daemon", "hugepage_regions", s.hugepage_regions);
  std::string uids;
  r.text("daemon", "allow_uids", uids);
  if (!parse_uids(uids, s.allow_uids)) return error = "[daemon] allow_uids = '" + uids + "' is not a list of uids", false;
  r.text("port", "dev", s.dev);
  r.text("port", "ip", s.ip);
  r.text("port", "mac", s.mac);
  r.text("port", "rx_interrupt", s.rx_interrupt);
  r.text("port", "pcap", s.pcap);
  r.text("port", "cc", s.cc);
  r.text("port", "cc_config", s.cc_config);
  s.cc_params = all_values(cfg.get(), "port", "cc_param");
  // The first [port] section is the first port; each further one a port of
  // its own.
  const int sections = rte_cfgfile_num_sections(cfg.get(), "", 0);
  size_t port_sections = 0;
  for (int i = 0; i < sections; ++i) {
    char name[CFG_NAME_LEN] = {};
    rte_cfgfile_entry none[1];
    rte_cfgfile_section_entries_by_index(cfg.get(), i, name, none, 0);
    if (std::string(name) != "port") continue;
    if (port_sections++ == 0) {
      if (rte_cfgfile_get_entry(cfg.get(), "port", "socket") != nullptr)
        return error = "[port] socket: the first port's clients use [daemon] socket", false;
      continue;
    }
    PortSettings p;
    if (!read_more_port(cfg.get(), i, port_sections - 1, p, error)) return false;
    s.more_ports.push_back(std::move(p));
  }
  return r.number("daemon", "engine_cpu", s.engine_cpu) && r.number("daemon", "idle_sleep_us", s.idle_sleep_us) &&
         r.number("port", "mtu", s.mtu) && r.tag_field("port", "vlan", s.vlan) && r.tag_field("port", "pcp", s.pcp) &&
         r.number("limits", "max_pd", s.limits.max_pd) && r.number("limits", "max_cq", s.limits.max_cq) &&
         r.number("limits", "max_qp", s.limits.max_qp) && r.number("limits", "max_mr", s.limits.max_mr) &&
         r.number("limits", "max_ah", s.limits.max_ah) && r.number("limits", "max_mw", s.limits.max_mw) &&
         r.number("limits", "max_mr_bytes", s.limits.max_mr_bytes) &&
         r.number("limits", "arena_bytes", s.limits.arena_bytes);
}

}  // namespace uroced
