// SPDX-License-Identifier: BSD-3-Clause
// Which devices the drop-in libibverbs shows, read from the environment
// that uroce-run sets (docs/verbs-abi.md):
//   UROCE_DEV     DPDK port of uroce0: PCI address or vdev string
//   UROCE_IP      uroce0's address (IPv4 or IPv6): GID 1; more addresses
//                 after commas are GIDs 2, 3, ...
//   UROCE_MAC     overrides the port's MAC (optional)
//   UROCE_MTU     Ethernet MTU asked of the port (optional, default 1500)
//   UROCE_VLAN    802.1Q VLAN id of uroce0's frames, 0..4094 (optional:
//                 untagged)
//   UROCE_PCP     their priority, 0..7 (optional; alone: VLAN id 0)
//   UROCE_EAL     extra EAL arguments, split on spaces (optional)
//   UROCE_DAEMON  uroce0 is a client of uroced at this socket instead of
//                 a port of its own (no EAL; port, address, MAC and MTU
//                 are the daemon's)
//   UROCE_CONFIG  an INI file: [eal] args=..., and one [device NAME]
//                 section per device with dev=, ip=, mac=, mtu=, vlan=,
//                 pcp=, or
//                 daemon= alone
// The variables describe uroce0 and win over the file's [device uroce0].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace uroce::abi {

struct DeviceSettings {
  std::string name;
  std::string dev;
  std::string ip;
  std::string mac;
  uint16_t mtu = 1500;
  bool mtu_given = false;  // a daemon's device takes the daemon's
  int vlan = -1, pcp = -1;  // -1: not given (DeviceConfig::vlan_id)
  std::string daemon;  // uroced's socket: no port of its own
};

struct Settings {
  std::vector<std::string> eal_args;
  std::vector<DeviceSettings> devices;
};

// Reads UROCE_CONFIG (if set) and the UROCE_* variables. False with a
// message naming the variable, file line or value at fault.
bool load_settings(Settings& out, std::string& error);

// Parses INI text into `out` (the part of load_settings that reads a file).
bool parse_ini(const std::string& text, const std::string& origin, Settings& out, std::string& error);

// Checks one device's values without opening anything: dev non-empty and
// free of spaces, ip an address, mac a MAC, mtu in 68..9600, vlan and pcp
// in range; or daemon alone.
bool validate_device(const DeviceSettings& d, std::string& error);

// Checks "ADDR[,ADDR...]": each an IPv4 or IPv6 address, none twice, at
// most kMaxAddresses. False with a message naming the one at fault.
inline constexpr int kMaxAddresses = 8;
bool parse_addresses(const std::string& text, std::string& error);

// Splits on runs of spaces.
std::vector<std::string> split_args(const std::string& text);

}  // namespace uroce::abi
