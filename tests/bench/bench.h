// SPDX-License-Identifier: BSD-3-Clause
// Every benchmark file includes Catch2 through here, so the benchmarking
// macros are enabled consistently with bench_main.cpp.
#pragma once

#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>
