// SPDX-License-Identifier: BSD-3-Clause
#include "probe_diagnosis.h"

#include <net/if.h>
#include <unistd.h>

#include <rte_devargs.h>
#include <rte_errno.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace uroce::dpdk {
namespace {

std::string name_of(const std::string& dev) { return dev.substr(0, dev.find(',')); }

bool looks_like_pci(const std::string& name) { return name.find(':') != std::string::npos; }

// "3b:00.0" -> "0000:3b:00.0", as sysfs names PCI devices.
std::string full_pci_address(const std::string& name) {
  return std::count(name.begin(), name.end(), ':') == 1 ? "0000:" + name : name;
}

// The value of `key=` among a vdev string's arguments; empty if absent.
std::string arg_value(const std::string& dev, const std::string& key) {
  for (size_t at = dev.find(','); at != std::string::npos; at = dev.find(',', at + 1)) {
    if (dev.compare(at + 1, key.size() + 1, key + "=") != 0) continue;
    const size_t begin = at + key.size() + 2;
    return dev.substr(begin, dev.find(',', begin) - begin);
  }
  return {};
}

// The kernel driver a PCI device is bound to ("" for none); false when the
// device does not exist.
bool pci_driver(const std::string& address, std::string& driver) {
  const std::string dir = "/sys/bus/pci/devices/" + address;
  if (access(dir.c_str(), F_OK) != 0) return false;
  char link[PATH_MAX];
  const ssize_t n = readlink((dir + "/driver").c_str(), link, sizeof link - 1);
  driver.clear();
  if (n > 0) {
    link[n] = '\0';
    const char* slash = std::strrchr(link, '/');
    driver = slash ? slash + 1 : link;
  }
  return true;
}

// Drivers through which a DPDK PMD can drive a PCI NIC (mlx4/5 are
// bifurcated: the PMD works beside the kernel driver).
bool dpdk_capable(const std::string& driver) {
  for (const char* d : {"vfio-pci", "uio_pci_generic", "igb_uio", "mlx5_core", "mlx4_core"})
    if (driver == d) return true;
  return false;
}

std::string pci_failure(const std::string& dev, int rc) {
  const std::string address = full_pci_address(name_of(dev));
  std::string driver;
  if (!pci_driver(address, driver)) return "no such PCI device: " + address;
  if (driver.empty())
    return "PCI device " + address + " is bound to no driver: bind it to vfio-pci (dpdk-devbind.py --bind=vfio-pci " +
           address + "); see docs/ports.md";
  if (!dpdk_capable(driver))
    return "PCI device " + address + " is bound to the kernel driver " + driver +
           ", not to one DPDK can use: bind it to vfio-pci (dpdk-devbind.py --bind=vfio-pci " + address +
           "); see docs/ports.md";
  return "PCI device " + address + " (driver " + driver + "): DPDK could not attach it: " + rte_strerror(-rc) +
         " (EAL probes only what EalConfig::pci allows; its log above says more)";
}

}  // namespace

std::string unknown_device(const std::string& dev) {
  rte_devargs da{};
  if (rte_devargs_parse(&da, dev.c_str()) == 0) {
    rte_devargs_reset(&da);
    return {};
  }
  return "no such DPDK device or driver: " + name_of(dev) +
         " (a PCI address, or a vdev whose name starts with its driver's: net_af_packet0,iface=eth1, net_memif0, "
         "net_ring0, net_tap0, net_af_xdp0)";
}

std::string probe_failure(const std::string& dev, int rc) {
  if (looks_like_pci(name_of(dev))) return pci_failure(dev, rc);
  const std::string iface = arg_value(dev, "iface");
  if (!iface.empty() && if_nametoindex(iface.c_str()) == 0)
    return "port " + dev + ": no such network interface: " + iface + " (iface=)";
  return "port " + dev + ": the driver refused the device or its arguments (" + rte_strerror(-rc) +
         "); check its arguments (EAL's log above may say which)";
}

}  // namespace uroce::dpdk
