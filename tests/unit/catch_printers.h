// SPDX-License-Identifier: BSD-3-Clause
// Lets Catch print ParseError / BuildError by name in failure messages.
#pragma once

#include <catch2/catch.hpp>

#include "uroce/wire/builder.h"
#include "uroce/wire/parse_error.h"

namespace Catch {

template <>
struct StringMaker<uroce::wire::ParseError> {
  static std::string convert(uroce::wire::ParseError e) { return uroce::wire::to_string(e); }
};

template <>
struct StringMaker<uroce::wire::BuildError> {
  static std::string convert(uroce::wire::BuildError e) { return uroce::wire::to_string(e); }
};

}  // namespace Catch
