// SPDX-License-Identifier: BSD-3-Clause
// Moving a client's own pages into a memfd the daemon can map, and back,
// and keeping a forked child from sharing them (docs/daemon.md, Memory).
#pragma once

#include <cstddef>
#include <cstdint>

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

// The application's pages that registrations share with the daemon, one
// memfd per range: a registration whose pages lie within a range shared
// already (two buffers of one page, a struct's fields) shares that range's
// memfd again; the pages go back to private memory with the last one.
// acquire: the range holding [start, start+len) with a user more, its
// start, length and memfd (kept by the table); false if none holds it.
bool acquire(uintptr_t start, size_t len, uintptr_t& range_start, size_t& range_len, int& fd);
// A new range and its memfd (the table keeps it), with one user.
void add(uintptr_t start, size_t len, int fd);
// One user fewer; true if it was the last (the range is forgotten and its
// memfd closed: the caller makes the pages private).
bool release(uintptr_t start);

// Ranges a forked child must not share: registered client memory and
// daemon-provided regions alike.
void track(void* start, size_t len);
void untrack(void* start);

}  // namespace uroce::client::pages
