// SPDX-License-Identifier: BSD-3-Clause
// Moving a client's own pages into a memfd the daemon can map, and back,
// and keeping a forked child from sharing them (docs/daemon.md, Memory).
#pragma once

#include <cstddef>
#include <cstdint>

namespace uroce::client::pages {

// [start, start+len) is private anonymous read-write memory (heap or
// anonymous mmap), not a stack, and not already shared by a registration.
bool private_anonymous(uintptr_t start, size_t len);

// Copies the range into a new memfd sealed against shrinking, growing and
// further sealing, and maps it over the range (MAP_FIXED | MAP_SHARED).
// The memfd, or -1 with errno set (the range is left as it was).
int share(void* start, size_t len);

// Replaces the range with private anonymous pages holding its current
// contents.
bool make_private(void* start, size_t len);

// Ranges a forked child must not share: registered client memory and
// daemon-provided regions alike.
void track(void* start, size_t len);
void untrack(void* start);

}  // namespace uroce::client::pages
