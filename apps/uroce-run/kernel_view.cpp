// SPDX-License-Identifier: BSD-3-Clause
#include "kernel_view.h"

#include <dirent.h>
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
  // uroce's GIDs as the drop-in reports them: 0 the link-local address,
  // then the configured ones, all RoCE v2 (docs/verbs-abi.md).
  for (int i = 0; i < d.gids; ++i) {
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

namespace {

bool write_proc(const char* path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  f.flush();
  return static_cast<bool>(f);
}

std::string read_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// Why the kernel will not give this user a user namespace, or "" when it
// may: Debian's switch, the namespace limit, then unshare itself (an LSM
// or a container's seccomp profile can still refuse it).
std::string userns_refusal() {
  if (read_line("/proc/sys/kernel/unprivileged_userns_clone") == "0")
    return "kernel.unprivileged_userns_clone is 0";
  if (read_line("/proc/sys/user/max_user_namespaces") == "0") return "user.max_user_namespaces is 0";
  return "";
}

// A user namespace that maps the caller's own ids to themselves: PROGRAM
// keeps its uid and gid (files, sockets, ps look the same) and, not being
// uid 0 in it, loses at execve the capabilities the namespace gave this
// process for the mounts.
bool enter_user_namespace(std::string& refused, std::string& error) {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  refused = userns_refusal();
  if (!refused.empty()) return false;
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
    refused = std::string("unshare(CLONE_NEWUSER) failed: ") + std::strerror(errno);
    return false;
  }
  // An unprivileged process may write gid_map only after denying setgroups.
  if (!write_proc("/proc/self/setgroups", "deny")) return fail(error, "write /proc/self/setgroups");
  if (!write_proc("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1\n"))
    return fail(error, "write /proc/self/uid_map");
  if (!write_proc("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n"))
    return fail(error, "write /proc/self/gid_map");
  return true;
}

// Unprivileged, /dev cannot be an overlay: mknod is refused and every file
// system mounted in a user namespace is nodev, so the real /dev/null seen
// through it would no longer open. The new /dev is a tmpfs directory of
// symbolic links into the real /dev, bound (with its sub-mounts) at
// /dev/.host, and /dev/infiniband/uroceN links to /dev/null: a character
// device PROGRAM may read and write, which is all UCX asks.
bool replace_dev_user(const std::string& tmp, const std::vector<ViewDevice>& devices, std::string& error) {
  const std::string nd = tmp + "/newdev";
  if (!make_dirs(nd + "/.host") || !make_dirs(nd + "/infiniband")) return fail(error, "mkdir " + nd);
  if (mount("/dev", (nd + "/.host").c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
    return fail(error, "bind /dev");
  DIR* dir = opendir("/dev");
  if (dir == nullptr) return fail(error, "opendir /dev");
  bool ok = true;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    // infiniband/ is made above, its entries are linked below.
    if (name == "." || name == ".." || name == ".host" || name == "infiniband") continue;
    const std::string link = nd + "/" + name;
    if (symlink(("/dev/.host/" + name).c_str(), link.c_str()) != 0) {
      ok = fail(error, "symlink " + link);
      break;
    }
  }
  closedir(dir);
  if (!ok) return false;
  if (DIR* ib = opendir("/dev/infiniband")) {  // a host with RDMA devices keeps them
    while (dirent* e = readdir(ib)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      if (symlink(("/dev/.host/infiniband/" + name).c_str(), (nd + "/infiniband/" + name).c_str()) != 0 &&
          errno != EEXIST) {
        closedir(ib);
        return fail(error, "symlink infiniband/" + name);
      }
    }
    closedir(ib);
  }
  for (const ViewDevice& d : devices) {
    const std::string link = nd + "/infiniband/" + d.name;
    unlink(link.c_str());  // a kernel device of the same name gives way, as in the root view
    if (symlink("/dev/null", link.c_str()) != 0) return fail(error, "symlink " + link);
  }
  if (mount(nd.c_str(), "/dev", nullptr, MS_BIND | MS_REC, nullptr) != 0) return fail(error, "bind onto /dev");
  return true;
}

// The private tmpfs that holds the upper directories and the new /dev;
// detached once mounted, leaving no name, so only this namespace sees it.
bool build_view(const std::vector<ViewDevice>& devices, bool user, std::string& error) {
  // Nothing mounted from here on reaches the parent namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return fail(error, "make / private");
  char tmp[] = "/tmp/uroce-run.XXXXXX";
  if (mkdtemp(tmp) == nullptr) return fail(error, "mkdtemp");
  bool ok = mount("uroce-run", tmp, "tmpfs", MS_NOSUID, "mode=0755") == 0;
  if (!ok) fail(error, "tmpfs");
  ok = ok && replace_sys_class(tmp, devices, error) &&
       (user ? replace_dev_user(tmp, devices, error) : replace_dev(tmp, devices, error));
  umount2(tmp, MNT_DETACH);
  rmdir(tmp);
  return ok;
}

}  // namespace

ViewResult enter_kernel_view(const std::vector<ViewDevice>& devices, std::string& error) {
  if (geteuid() == 0) {
    if (unshare(CLONE_NEWNS) != 0) return fail(error, "unshare(CLONE_NEWNS)"), ViewResult::failed;
    return build_view(devices, false, error) ? ViewResult::entered : ViewResult::failed;
  }
  std::string refused;
  if (!enter_user_namespace(refused, error)) {
    if (refused.empty()) return ViewResult::failed;
    error = refused;
    return ViewResult::refused;
  }
  return build_view(devices, true, error) ? ViewResult::entered : ViewResult::failed;
}

}  // namespace uroce::run
