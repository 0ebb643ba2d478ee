// SPDX-License-Identifier: BSD-3-Clause
// Moving a client's own pages into a memfd the daemon can map, and back,
// and keeping a forked child from sharing them (docs/daemon.md, Memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace uroce::client::pages {

// [start, start+len) is private read-write memory (heap, anonymous mmap,
// or a private file mapping: a program's data and bss), not a stack, and
// not already shared by a registration.
bool private_memory(uintptr_t start, size_t len);

// Copies the range into a new memfd sealed against shrinking, growing and
// further sealing, and maps it over the range (MAP_FIXED | MAP_SHARED).
// The memfd, or -1 with errno set (the range is left as it was).
int share(void* start, size_t len);

// Replaces the range with private anonymous pages holding its current
// contents.
bool make_private(void* start, size_t len);

// The application's pages that registrations share with the daemon, in
// ranges of one memfd each. A registration's pages are covered by the
// ranges shared already (two buffers of one page, a struct's fields,
// neighbours that overlap) and new ranges for the pages between them;
// a range goes back to private memory with its last registration.
struct Piece {
  uintptr_t addr;    // pages of the registration
  size_t len;
  int fd;            // the range's memfd (the table keeps it)
  uint64_t offset;   // of addr in it
  uintptr_t range;   // the range's start
};
// Covers [start, start+len) (whole pages) in order, a user more for each
// range it takes. False with errno (EINVAL: memory that is not private)
// and nothing taken if part of it cannot be shared.
bool cover(uintptr_t start, size_t len, std::vector<Piece>& out);
// One user fewer of each range; a range's last user makes it private again.
void drop(const std::vector<uintptr_t>& ranges);

// Ranges a forked child must not share: registered client memory and
// daemon-provided regions alike.
void track(void* start, size_t len);
void untrack(void* start);

}  // namespace uroce::client::pages
