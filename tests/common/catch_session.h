// SPDX-License-Identifier: BSD-3-Clause
// The one way the test programs run Catch: --warn NoTests is always on, so
// a test filter that matches no test case (a tag renamed on one side only)
// fails the run with exit status 2 instead of passing with nothing run.
// Include after defining CATCH_CONFIG_RUNNER, in the program's main file.
#pragma once

#include <catch2/catch.hpp>

namespace uroce::test {

inline int run_catch(int argc, char** argv) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv)) return rc;
  Catch::ConfigData& cfg = session.configData();
  cfg.warnings = static_cast<Catch::WarnAbout::What>(cfg.warnings | Catch::WarnAbout::NoTests);
  return session.run();
}

}  // namespace uroce::test
