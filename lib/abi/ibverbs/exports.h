// SPDX-License-Identifier: BSD-3-Clause
// How a function becomes one of the library's versioned symbols
// (libibverbs.map lists the names and versions):
//  - UROCE_EXPORT: a function whose only version is the one the map gives
//    its name.
//  - UROCE_V11(name) before `uroce_v11_<name>`: the default version
//    name@@IBVERBS_1.1 of a function that also has a compat version
//    name@IBVERBS_1.0 (exports.cpp). The map lists such names in the 1.0
//    node, so the default needs a body of another name bound by .symver.
#pragma once

#define UROCE_EXPORT extern "C" __attribute__((visibility("default")))
#define UROCE_V11(name)                                                        \
  __asm__(".symver uroce_v11_" #name ", " #name "@@IBVERBS_1.1");              \
  extern "C" __attribute__((visibility("default")))
