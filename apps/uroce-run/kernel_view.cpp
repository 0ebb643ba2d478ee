// SPDX-License-Identifier: BSD-3-Clause
#include "kernel_view.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace uroce::run {
namespace {

// uroce's GID table as the drop-in reports it: 0 the link-local address,
// 1 the configured one, both RoCE v2 (docs/verbs-abi.md).
constexpr int kGids = 2;

bool fail(std::string& error, const std::string& step) {
  error = step + ": " + std::strerror(errno);
  return false;
}

bool make_dirs(const std::string& path) {
  size_t at = 0;
  do {
    at = path.find('/', at + 1);
    if (mkdir(path.substr(0, at).c_str(), 0755) != 0 && errno != EEXIST) return false;
  } while (at != std::string::npos);
  return true;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text << '\n';
  return static_cast<bool>(f);
}

// ports/1/gid_attrs of one device, in the overlay's upper directory.
bool add_sysfs(const std::string& upper, const ViewDevice& d, std::string& error) {
  const std::string attrs = upper + "/infiniband/" + d.name + "/ports/1/gid_attrs";
  if (!make_dirs(attrs + "/types") || !make_dirs(attrs + "/ndevs")) return fail(error, "mkdir " + attrs);
  for (int i = 0; i < kGids; ++i) {
    const std::string n = std::to_string(i);
    if (!write_file(attrs + "/types/" + n, "RoCE v2")) return fail(error, "write " + attrs + "/types/" + n);
    if (!d.netdev.empty() && !write_file(attrs + "/ndevs/" + n, d.netdev))
      return fail(error, "write " + attrs + "/ndevs/" + n);
  }
  return true;
}

// UCX only stats the node and checks access(R_OK|W_OK); it is the null
// device (1,3), so a program that does open it reads and writes nothing.
bool add_dev_node(const std::string& upper, const ViewDevice& d, std::string& error) {
  const std::string node = upper + "/infiniband/" + d.name;
  if (mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0 || chmod(node.c_str(), 0666) != 0)
    return fail(error, "mknod " + node);
  return true;
}

bool overlay(const std::string& lower, const std::string& base, const std::string& target, std::string& error) {
  if (!make_dirs(base + "/upper") || !make_dirs(base + "/work")) return fail(error, "mkdir " + base);
  const std::string opts = "lowerdir=" + lower + ",upperdir=" + base + "/upper,workdir=" + base + "/work";
  if (mount("overlay", target.c_str(), "overlay", 0, opts.c_str()) != 0) return fail(error, "overlay on " + target);
  return true;
}

// Mount points below /dev (/dev/pts, /dev/shm, /dev/hugepages, ...), the
// outermost ones only: an overlay does not show them, so they are bound
// again, with what is mounted below them, on the new /dev.
std::vector<std::string> dev_submounts() {
  std::vector<std::string> out;
  std::ifstream info("/proc/self/mountinfo");
  std::string line;
  while (std::getline(info, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    fields >> id >> parent >> devno >> root >> point;
    if (point.rfind("/dev/", 0) != 0 || point.find('\\') != std::string::npos) continue;
    bool nested = false;
    for (const std::string& p : out) nested |= point.rfind(p + "/", 0) == 0 || point == p;
    if (!nested) out.push_back(point);
  }
  return out;
}

bool replace_dev(const std::string& tmp, const std::vector<ViewDevice>& devices, std::string& error) {
  const std::string upper = tmp + "/dev/upper";
  if (!make_dirs(upper + "/infiniband") || !make_dirs(tmp + "/newdev")) return fail(error, "mkdir " + upper);
  for (const ViewDevice& d : devices)
    if (!add_dev_node(upper, d, error)) return false;
  if (!overlay("/dev", tmp + "/dev", tmp + "/newdev", error)) return false;
  for (const std::string& point : dev_submounts()) {
    const std::string target = tmp + "/newdev" + point.substr(4);
    if (mount(point.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      return fail(error, "bind " + point);
  }
  if (mount((tmp + "/newdev").c_str(), "/dev", nullptr, MS_MOVE, nullptr) != 0) return fail(error, "move onto /dev");
  return true;
}

bool replace_sys_class(const std::string& tmp, const std::vector<ViewDevice>& devices, std::string& error) {
  for (const ViewDevice& d : devices)
    if (!add_sysfs(tmp + "/sys/upper", d, error)) return false;
  return overlay("/sys/class", tmp + "/sys", "/sys/class", error);
}

}  // namespace

std::string netdev_of(const std::string& dev) {
  const size_t at = dev.find("iface=");
  if (at == std::string::npos) return "";
  return dev.substr(at + 6, dev.find(',', at) - (at + 6));
}

bool enter_kernel_view(const std::vector<ViewDevice>& devices, std::string& error) {
  if (unshare(CLONE_NEWNS) != 0) return fail(error, "unshare(CLONE_NEWNS)");
  // Nothing mounted from here on reaches the parent namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return fail(error, "make / private");
  // The overlays' upper directories live on a tmpfs that only this
  // namespace ever sees; it is detached once mounted, leaving no name.
  char tmp[] = "/tmp/uroce-run.XXXXXX";
  if (mkdtemp(tmp) == nullptr) return fail(error, "mkdtemp");
  bool ok = mount("uroce-run", tmp, "tmpfs", MS_NOSUID, "mode=0755") == 0;
  if (!ok) fail(error, "tmpfs");
  ok = ok && replace_sys_class(tmp, devices, error) && replace_dev(tmp, devices, error);
  umount2(tmp, MNT_DETACH);
  rmdir(tmp);
  return ok;
}

}  // namespace uroce::run
