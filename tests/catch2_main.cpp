// SPDX-License-Identifier: BSD-3-Clause
// Catch2 main of the test programs that need nothing started before Catch.
#include "common/catch_session.h"

int main(int argc, char** argv) { return uroce::test::run_catch(argc, argv); }
