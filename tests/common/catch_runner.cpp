// SPDX-License-Identifier: BSD-3-Clause
// Catch2's implementation and run_catch (catch_session.h), compiled once
// for every test program: the slowest file of a test program to compile.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_session.h"

namespace uroce::test {

int run_catch(int argc, char** argv) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv)) return rc;
  Catch::ConfigData& cfg = session.configData();
  cfg.warnings = static_cast<Catch::WarnAbout::What>(cfg.warnings | Catch::WarnAbout::NoTests);
  return session.run();
}

}  // namespace uroce::test
