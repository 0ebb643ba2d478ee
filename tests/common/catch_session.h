// SPDX-License-Identifier: BSD-3-Clause
// The one way the test programs run Catch: --warn NoTests is always on, so
// a test filter that matches no test case (a tag renamed on one side only)
// fails the run with exit status 2 instead of passing with nothing run.
//
// Catch2's implementation is compiled once, with run_catch, in
// catch_runner.cpp (library catch2_runner): a program's main includes only
// this header, not Catch2's, and costs nothing to compile.
#pragma once

namespace uroce::test {

int run_catch(int argc, char** argv);

}  // namespace uroce::test
