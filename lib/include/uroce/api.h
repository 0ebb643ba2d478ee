// SPDX-License-Identifier: BSD-3-Clause
// The export macro of liburoce's public API: the library is built with
// hidden visibility, so only what is marked here is exported.
#pragma once
#define UROCE_API __attribute__((visibility("default")))
