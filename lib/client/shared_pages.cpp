// SPDX-License-Identifier: BSD-3-Clause
#include "shared_pages.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>

namespace uroce::client::pages {
namespace {

std::mutex g_mutex;
std::map<uintptr_t, size_t>* g_ranges = nullptr;  // start -> length; leaked: used from atfork

struct Share {
  size_t len;
  int fd;
  unsigned users;
};
std::mutex g_share_mutex;
std::map<uintptr_t, Share> g_shares;  // start -> its range

// fork: each shared range becomes a private copy in the child, so the
// child neither sees the parent's later writes nor clobbers the parent's
// heap objects around a registered buffer; the child's own registrations
// share nothing of the parent's.
void before_fork() {
  g_share_mutex.lock();
  g_mutex.lock();
}
void after_fork_parent() {
  g_mutex.unlock();
  g_share_mutex.unlock();
}
void after_fork_child() {
  if (g_ranges != nullptr)
    for (const auto& [start, len] : *g_ranges) make_private(reinterpret_cast<void*>(start), len);
  for (const auto& [start, s] : g_shares) close(s.fd);
  g_shares.clear();
  g_mutex.unlock();
  g_share_mutex.unlock();
}

std::map<uintptr_t, size_t>& ranges() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_ranges = new std::map<uintptr_t, size_t>();
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  });
  return *g_ranges;
}

// Copies whole pages, so the bytes around the registered buffer come
// along: the allocator's and its neighbours' (an address sanitizer's
// redzones among them). Those are copied, never used, so this copy is
// exempt from address checks; volatile keeps the loop from becoming a
// memcpy call, which the sanitizer's interceptor would check.
__attribute__((no_sanitize("address"))) void copy_pages(void* to, const void* from, size_t len) {
  auto* d = static_cast<volatile uint64_t*>(to);
  const auto* s = static_cast<const volatile uint64_t*>(from);
  for (size_t i = 0; i < len / 8; ++i) d[i] = s[i];
}

}  // namespace

bool private_memory(uintptr_t start, size_t len) {
  std::ifstream maps("/proc/self/maps");
  uintptr_t covered = start;
  for (std::string line; std::getline(maps, line);) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, path;
    unsigned long inode = 0;
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in >> std::ws, path);
    const size_t dash = range.find('-');
    const uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (hi <= covered || lo >= start + len) continue;
    if (lo > covered) return false;  // a hole
    // Private memory only: anonymous, the heap, or a private file mapping
    // (a program's data and bss, whose writes never reach the file); not
    // a stack or the kernel's pages ([stack], [vvar], ...), not hugepages.
    const bool special = !path.empty() && path[0] == '[' && path != "[heap]";
    if (perms.compare(0, 4, "rw-p") != 0 || special || path.rfind("/anon_hugepage", 0) == 0) return false;
    // A file mapping must lie within its file: a page past the end faults.
    if (inode != 0) {
      struct stat st {};
      const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
      if (stat(path.c_str(), &st) != 0 || std::stoull(offset, nullptr, 16) + (hi - lo) >
                                                 ((uint64_t(st.st_size) + page - 1) & ~(page - 1)))
        return false;
    }
    covered = hi;
    if (covered >= start + len) return true;
  }
  return false;
}

int share(void* start, size_t len) {
  const int fd = memfd_create("uroce-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  // The current bytes go into the file; then the file's pages replace the
  // private ones at the same address.
  bool ok = ftruncate(fd, off_t(len)) == 0;
  if (ok) {
    void* file = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ok = file != MAP_FAILED;
    if (ok) {
      copy_pages(file, start, len);
      munmap(file, len);
    }
  }
  ok = ok && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0 &&
       mmap(start, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == start;
  if (!ok) {
    const int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

bool make_private(void* start, size_t len) {
  void* copy = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (copy == MAP_FAILED) return false;
  copy_pages(copy, start, len);
  // mremap swaps the copy in at once: the range is never unmapped between.
  return mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, start) == start;
}

namespace {

// With g_share_mutex held.
void drop_locked(uintptr_t range) {
  auto it = g_shares.find(range);
  if (it == g_shares.end() || --it->second.users > 0) return;
  const size_t len = it->second.len;
  close(it->second.fd);
  g_shares.erase(it);
  untrack(reinterpret_cast<void*>(range));
  make_private(reinterpret_cast<void*>(range), len);
}

}  // namespace

bool cover(uintptr_t start, size_t len, std::vector<Piece>& out) {
  std::lock_guard lock(g_share_mutex);
  out.clear();
  const uintptr_t end = start + len;
  auto undo = [&](int err) {
    for (const Piece& p : out) drop_locked(p.range);
    out.clear();
    errno = err;
    return false;
  };
  for (uintptr_t at = start; at < end;) {
    auto next = g_shares.upper_bound(at);
    if (next != g_shares.begin()) {
      auto it = std::prev(next);
      if (at < it->first + it->second.len) {  // a range shared already
        const uintptr_t to = std::min(end, it->first + it->second.len);
        ++it->second.users;
        out.push_back(Piece{at, to - at, it->second.fd, at - it->first, it->first});
        at = to;
        continue;
      }
    }
    // The pages up to the next range: shared now.
    const uintptr_t to = next == g_shares.end() ? end : std::min(end, next->first);
    if (!private_memory(at, to - at)) return undo(EINVAL);
    const int fd = share(reinterpret_cast<void*>(at), to - at);
    if (fd < 0) return undo(errno ? errno : ENOMEM);
    g_shares[at] = Share{to - at, fd, 1};
    track(reinterpret_cast<void*>(at), to - at);
    out.push_back(Piece{at, to - at, fd, 0, at});
    at = to;
  }
  return true;
}

void drop(const std::vector<uintptr_t>& ranges) {
  std::lock_guard lock(g_share_mutex);
  for (uintptr_t r : ranges) drop_locked(r);
}

void track(void* start, size_t len) {
  auto& r = ranges();
  std::lock_guard lock(g_mutex);
  r[reinterpret_cast<uintptr_t>(start)] = len;
}

void untrack(void* start) {
  auto& r = ranges();
  std::lock_guard lock(g_mutex);
  r.erase(reinterpret_cast<uintptr_t>(start));
}

}  // namespace uroce::client::pages
