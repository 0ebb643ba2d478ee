// SPDX-License-Identifier: BSD-3-Clause
// --chk's data: each message carries a pattern of its iteration number,
// so a lost, stale or misplaced message shows as a mismatch (the same
// bytes every time would let a buffer that never changed pass).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace uroce::pingpong {

void fill_pattern(uint8_t* p, size_t n, uint32_t iter);

// True if p holds iteration `iter`'s pattern; otherwise a message naming
// the first wrong byte.
bool check_pattern(const uint8_t* p, size_t n, uint32_t iter, std::string& error);

}  // namespace uroce::pingpong
