// SPDX-License-Identifier: BSD-3-Clause
// ibv_wc_status_str's text, without linking libibverbs (we only use its
// header for the enum values).
#pragma once

#include <infiniband/verbs.h>

namespace uroce::pingpong {

const char* wc_status_str(ibv_wc_status status);

}  // namespace uroce::pingpong
