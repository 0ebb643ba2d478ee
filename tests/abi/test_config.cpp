// SPDX-License-Identifier: BSD-3-Clause
// The drop-in libibverbs' settings: the INI file and the UROCE_*
// variables (lib/abi/ibverbs/config.h).
#include "config.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "uroce/verbs/device_config.h"

using uroce::abi::DeviceSettings;
using uroce::abi::Settings;

namespace {

void clear_env() {
  for (const char* v : {"UROCE_DEV", "UROCE_IP", "UROCE_MAC", "UROCE_MTU", "UROCE_EAL", "UROCE_CONFIG", "UROCE_DAEMON",
                        "UROCE_VLAN", "UROCE_PCP"})
    unsetenv(v);
}

}  // namespace

TEST_CASE("an INI file with [eal] and two devices", "[abi-config]") {
  Settings s;
  std::string err;
  const std::string text =
      "; comment\n[eal]\nargs = --log-level=8  -l 1\n"
      "[device uroce0]\ndev = net_af_packet0,iface=a\nip = 10.0.0.1  # trailing comment\n"
      "[device uroce1]\ndev = 0000:3b:00.0\nip = fd00::1\nmac = 02:00:00:00:00:01\nmtu = 9000\n";
  REQUIRE(uroce::abi::parse_ini(text, "f.ini", s, err));
  REQUIRE(s.devices.size() == 2);
  CHECK(s.eal_args == std::vector<std::string>{"--log-level=8", "-l", "1"});
  CHECK(s.devices[0].name == "uroce0");
  CHECK(s.devices[0].dev == "net_af_packet0,iface=a");
  CHECK(s.devices[0].ip == "10.0.0.1");
  CHECK(s.devices[0].mtu == 1500);
  CHECK(s.devices[1].ip == "fd00::1");
  CHECK(s.devices[1].mac == "02:00:00:00:00:01");
  CHECK(s.devices[1].mtu == 9000);
}

TEST_CASE("INI mistakes name the file and line", "[abi-config]") {
  const char* const bad[][2] = {
      {"[device uroce0\n", "f:1: unterminated section header"},
      {"[ports]\n", "f:1: unknown section [ports]"},
      {"dev = x\n", "f:1: key outside a section"},
      {"[device uroce0]\nspeed = 1\n", "f:2: unknown key 'speed'"},
      {"[device uroce0]\nmtu = 20\n", "f:2: mtu '20' is not in 68..9600"},
      {"[eal]\nlcores = 1\n", "f:2: unknown key 'lcores' in [eal]"},
      {"[device uroce0]\njust words\n", "f:2: expected key = value"},
      {"[device uroce0]\nvlan = 4095\n", "f:2: vlan '4095' is not a VLAN id (0..4094)"},
      {"[device uroce0]\nvlan = -1\n", "f:2: vlan '-1' is not a VLAN id"},
      {"[device uroce0]\npcp = 8\n", "f:2: pcp '8' is not an 802.1p priority (0..7)"},
      {"[device uroce0]\npcp = +5\n", "f:2: pcp '+5' is not an 802.1p priority (0..7)"},
      {"[device uroce0]\nvlan = 0x10\n", "f:2: vlan '0x10' is not a VLAN id"},
      {"[device uroce0]\nmtu = 1500.0\n", "f:2: mtu '1500.0' is not in 68..9600"},
  };
  for (const auto& b : bad) {
    Settings s;
    std::string err;
    INFO(b[0]);
    CHECK_FALSE(uroce::abi::parse_ini(b[0], "f", s, err));
    CHECK(err.rfind(b[1], 0) == 0);
  }
}

TEST_CASE("device values are checked", "[abi-config]") {
  std::string err;
  DeviceSettings d;
  d.name = "uroce0";
  d.dev = "net_af_packet0,iface=a";
  d.ip = "10.0.0.1";
  CHECK(uroce::abi::validate_device(d, err));
  d.ip = "10.0.0";
  CHECK_FALSE(uroce::abi::validate_device(d, err));
  CHECK(err == "device uroce0: address '10.0.0' is not IPv4 or IPv6");
  d.ip = "10.0.0.1";
  d.mac = "02:00";
  CHECK_FALSE(uroce::abi::validate_device(d, err));
  d.mac = "";
  d.dev = "net_af_packet0, iface=a";
  CHECK_FALSE(uroce::abi::validate_device(d, err));
  d.dev = "";
  CHECK_FALSE(uroce::abi::validate_device(d, err));
  CHECK(err == "device uroce0: no port (UROCE_DEV or dev=)");
}

TEST_CASE("vlan and pcp: the file's keys, the variables, what the device is given", "[abi-config]") {
  clear_env();
  Settings s;
  std::string err;
  REQUIRE(uroce::abi::parse_ini("[device uroce0]\ndev = net_null0\nip = 10.0.0.1\nvlan = 100\npcp = 5\n"
                                "[device uroce1]\ndev = net_null1\nip = 10.0.1.1\npcp = 3\n"
                                "[device uroce2]\ndev = net_null2\nip = 10.0.2.1\n",
                                "f", s, err));
  REQUIRE(s.devices.size() == 3);
  uroce::DeviceConfig c[3];
  for (int i = 0; i < 3; ++i) uroce::set_vlan(c[i], s.devices[i].vlan, s.devices[i].pcp);
  CHECK(c[0].vlan_id == 100);
  CHECK(c[0].vlan_pcp == 5);
  CHECK(c[1].vlan_id == 0);  // priority tagging
  CHECK(c[1].vlan_pcp == 3);
  CHECK(c[2].vlan_id == -1);  // untagged
  for (const DeviceSettings& d : s.devices) CHECK(uroce::abi::validate_device(d, err));

  setenv("UROCE_DEV", "net_null0", 1);
  setenv("UROCE_IP", "10.0.0.1", 1);
  setenv("UROCE_VLAN", "7", 1);
  setenv("UROCE_PCP", "2", 1);
  REQUIRE(uroce::abi::load_settings(s, err));
  REQUIRE(s.devices.size() == 1);
  CHECK(s.devices[0].vlan == 7);
  CHECK(s.devices[0].pcp == 2);
  setenv("UROCE_VLAN", "seven", 1);
  CHECK_FALSE(uroce::abi::load_settings(s, err));
  CHECK(err == "UROCE_VLAN 'seven' is not a VLAN id (0..4094)");
  setenv("UROCE_VLAN", " 7", 1);  // the variable's value is taken as it is: no blank, no sign
  CHECK_FALSE(uroce::abi::load_settings(s, err));
  CHECK(err == "UROCE_VLAN ' 7' is not a VLAN id (0..4094)");
  setenv("UROCE_VLAN", "7", 1);
  setenv("UROCE_PCP", "9", 1);
  CHECK_FALSE(uroce::abi::load_settings(s, err));
  CHECK(err == "UROCE_PCP '9' is not an 802.1p priority (0..7)");
  clear_env();

  DeviceSettings d;
  d.name = "uroce0";
  d.daemon = "/run/uroce/uroced.sock";
  d.vlan = 5;
  CHECK_FALSE(uroce::abi::validate_device(d, err));
  CHECK(err == "device uroce0: a daemon socket (UROCE_DAEMON or daemon=) takes no dev, ip, mac, mtu, vlan or pcp");
  // The MTU is the daemon's port's too: one given beside the socket is refused.
  setenv("UROCE_DAEMON", "/run/uroce/uroced.sock", 1);
  setenv("UROCE_MTU", "9000", 1);
  CHECK_FALSE(uroce::abi::load_settings(s, err));
  CHECK(err.find("takes no dev, ip, mac, mtu, vlan or pcp") != std::string::npos);
  clear_env();
  // A configuration file that is a directory or a device: refused, not read as empty.
  setenv("UROCE_CONFIG", "/tmp", 1);
  CHECK_FALSE(uroce::abi::load_settings(s, err));
  CHECK(err == "UROCE_CONFIG: cannot read /tmp: not a regular file");
  setenv("UROCE_CONFIG", "/dev/zero", 1);
  CHECK_FALSE(uroce::abi::load_settings(s, err));
  CHECK(err == "UROCE_CONFIG: cannot read /dev/zero: not a regular file");
  clear_env();
}

TEST_CASE("the variables describe uroce0 and win over the file", "[abi-config]") {
  clear_env();
  Settings s;
  std::string err;
  REQUIRE(uroce::abi::load_settings(s, err));
  CHECK(s.devices.empty());

  const std::string path = "abi_config_test.ini";
  FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f);
  std::fputs("[device uroce0]\ndev = net_null0\nip = 10.0.0.9\n[device uroce1]\ndev = net_null1\nip = 10.0.1.9\n", f);
  std::fclose(f);
  setenv("UROCE_CONFIG", path.c_str(), 1);
  setenv("UROCE_IP", "10.0.0.1", 1);
  setenv("UROCE_EAL", "--log-level=8", 1);
  REQUIRE(uroce::abi::load_settings(s, err));
  REQUIRE(s.devices.size() == 2);
  CHECK(s.devices[0].ip == "10.0.0.1");
  CHECK(s.devices[0].dev == "net_null0");
  CHECK(s.devices[1].ip == "10.0.1.9");
  CHECK(s.eal_args == std::vector<std::string>{"--log-level=8"});

  setenv("UROCE_MTU", "abc", 1);
  CHECK_FALSE(uroce::abi::load_settings(s, err));
  CHECK(err == "UROCE_MTU 'abc' is not in 68..9600");
  unsetenv("UROCE_MTU");
  setenv("UROCE_CONFIG", "/nonexistent.ini", 1);
  CHECK_FALSE(uroce::abi::load_settings(s, err));
  CHECK(err == "UROCE_CONFIG: cannot read /nonexistent.ini");
  std::remove(path.c_str());
  clear_env();
}

TEST_CASE("a daemon socket instead of a port", "[abi-config]") {
  clear_env();
  Settings s;
  std::string err;
  REQUIRE(uroce::abi::parse_ini("[device uroce1]\ndaemon = /run/uroce/uroced.sock\n", "f.ini", s, err));
  REQUIRE(s.devices.size() == 1);
  CHECK(s.devices[0].daemon == "/run/uroce/uroced.sock");
  CHECK(uroce::abi::validate_device(s.devices[0], err));

  DeviceSettings both = s.devices[0];
  both.dev = "net_null0";
  CHECK_FALSE(uroce::abi::validate_device(both, err));
  CHECK(err == "device uroce1: a daemon socket (UROCE_DAEMON or daemon=) takes no dev, ip, mac, mtu, vlan or pcp");

  // UROCE_DAEMON replaces the file's port for uroce0, like the other variables.
  const std::string path = "abi_config_daemon.ini";
  FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f);
  std::fputs("[device uroce0]\ndev = net_null0\nip = 10.0.0.9\n", f);
  std::fclose(f);
  setenv("UROCE_CONFIG", path.c_str(), 1);
  setenv("UROCE_DAEMON", "/tmp/d.sock", 1);
  REQUIRE(uroce::abi::load_settings(s, err));
  REQUIRE(s.devices.size() == 1);
  CHECK(s.devices[0].daemon == "/tmp/d.sock");
  CHECK(s.devices[0].dev.empty());
  CHECK(s.devices[0].ip.empty());
  // A port of its own beside it is a contradiction, refused.
  setenv("UROCE_DEV", "net_null0", 1);
  CHECK_FALSE(uroce::abi::load_settings(s, err));
  CHECK(err.find("takes no dev, ip, mac, mtu, vlan or pcp") != std::string::npos);
  std::remove(path.c_str());
  clear_env();
}
