// SPDX-License-Identifier: BSD-3-Clause
#include "dump.h"

namespace uroce::dump {

void Summary::add(const Record& r) {
  ++frames;
  if (!r.roce) {
    ++other;
    return;
  }
  ++roce;
  if (r.error == wire::ParseError::ok) {
    ++valid;
  } else {
    ++invalid;
    ++errors[r.error];
  }
}

}  // namespace uroce::dump
