// SPDX-License-Identifier: BSD-3-Clause
// uroced's settings: the INI file (rte_cfgfile), then the command line on
// top of it (docs/daemon.md).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "uroce/cc/dcqcn.h"

namespace uroced {

struct Limits {  // per client
  uint32_t max_pd = 64;
  uint32_t max_cq = 256;
  uint32_t max_qp = 256;
  uint32_t max_mr = 1024;
  uint32_t max_ah = 4096;
  uint32_t max_mw = 1024;
  uint64_t max_mr_bytes = uint64_t(4) << 30;
  uint64_t arena_bytes = 16u << 20;
};

// A port after the first: a [port] section of its own, with the socket its
// clients connect to. The first port's settings are Settings' own fields
// (the first [port] section and the command line), its socket [daemon]'s.
struct PortSettings {
  std::string dev, ip, mac;
  uint16_t mtu = 1500;
  int vlan = -1, pcp = -1;  // as Settings' own
  std::string pcap;
  std::string rx_interrupt = "auto";
  std::string cc, cc_config;
  std::vector<std::string> cc_params;
  uroce::cc::CcConfig cc_resolved;
  std::string socket;
};

struct Settings {
  std::string socket = "/run/uroce/uroced.sock";
  std::string socket_mode = "0660";
  std::string socket_group;  // empty: leave the group as created
  std::vector<uid_t> allow_uids;  // empty: any peer the socket lets in
  std::string eal;
  std::string log_level = "info";  // uroced's log type; DPDK's own stay at error
  std::string lcores;              // CPUs of the EAL main lcore (and so the engine thread's); empty: all
  std::string file_prefix = "uroced";  // EAL's --file-prefix: where dpdk-telemetry.py -f finds the daemon
  int engine_cpu = -1;
  // Longest nap of an idle engine between looks at the port (the device's
  // idle_sleep_max_us): a frame that arrives meanwhile waits up to this.
  uint32_t idle_sleep_us = 1000;
  // alloc_mr's regions of a huge page or more on 2 MiB pages, registered
  // with DPDK as external memory (a NIC may DMA from them), while the
  // kernel has free huge pages: "auto"; "off": always 4 KiB pages.
  std::string hugepage_regions = "auto";
  std::string dev, ip, mac;
  uint16_t mtu = 1500;
  // 802.1Q: the port's VLAN id (0..4094) and priority (0..7); -1 not
  // given. A PCP without a VLAN id tags frames with VLAN id 0 (priority
  // tagging); neither: untagged frames (uroce::set_vlan).
  int vlan = -1, pcp = -1;
  std::string pcap;  // capture of the port's frames; empty: none
  // auto: an idle engine sleeps on the port's receive interrupt where the
  // PMD has one (net_tap, mlx5); off: it naps and looks, as on other ports.
  std::string rx_interrupt = "auto";
  // Congestion control as uroce-perf takes it: the preset, then the file,
  // then each NAME=VALUE; empty: the device's default (none).
  std::string cc, cc_config;
  std::vector<std::string> cc_params;
  uroce::cc::CcConfig cc_resolved;  // what the above come to (congestion_control)
  // The second [port] section on, in file order: device uroce1, uroce2, ...
  std::vector<PortSettings> more_ports;
  Limits limits;
};

// Every port in device order: the first (Settings' own fields, [daemon]
// socket), then more_ports.
std::vector<PortSettings> all_ports(const Settings& s);

// The ports a daemon may serve at most (one engine lcore each).
inline constexpr size_t kMaxPorts = 8;

// Reads FILE into s; false with a message naming the section and key.
bool load_config(const std::string& file, Settings& s, std::string& error);
// "1000,1001" -> uids; false on anything else.
bool parse_uids(const std::string& text, std::vector<uid_t>& out);
// "0660" -> permission bits (octal, at most 07777); false on anything else.
bool parse_mode(const std::string& text, mode_t& out);
// The values no parser catches; false with a message naming the setting.
bool check_settings(const Settings& s, std::string& error);
// [port] cc, cc_config and cc_param applied in that order.
bool congestion_control(const Settings& s, uroce::cc::CcConfig& out, std::string& error);
bool congestion_control(const PortSettings& p, uroce::cc::CcConfig& out, std::string& error);
// What EAL gets: the log levels and lcores, then `eal` (which wins).
std::vector<std::string> eal_args(const Settings& s);

// The longest idle_sleep_us: past it a peer's retransmission timer
// (rxe's default is about 67 ms) would fire before the engine looks.
inline constexpr uint32_t kMaxIdleSleepUs = 50000;

// An arena holds its header page and at least a few rings.
inline constexpr uint64_t kMinArenaBytes = 64 << 10;
// Each client's arena is made and populated at HELLO: a mistyped size must
// not cost the host its memory once per client.
inline constexpr uint64_t kMaxArenaBytes = uint64_t(4) << 30;

}  // namespace uroced
