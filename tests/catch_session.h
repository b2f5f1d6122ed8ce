// The test binaries' entry to Catch2. Catch2's single header compiles its whole implementation
// wherever CATCH_CONFIG_RUNNER or CATCH_CONFIG_MAIN is defined (about 20 s of the compiler's time
// each): catch_session.cpp does that once for every binary, and each binary's main
// (catch_main.cpp, cuda_main.cpp, mpi_main.cpp) runs the tests through this function.
//
// Skips. A case whose precondition is missing where it runs (a peer process, cairo) says so with
// SKIP_UNLESS and ends there; it never counts as passed. Catch2 v2 has no per-case skip, so a run
// is one result for meson: when every case it ran was skipped it exits 77 (meson's SKIP), and a
// run that mixes skipped and passed cases fails, naming the skipped ones. tests/meson.build
// therefore gives such cases runs of their own by their tags ([peers], [cairo], [no-cairo],
// [hosts]), so that no test passes vacuously.
#pragma once
#include <string>

/// Runs Catch2 on ARGV: 0 when every case ran passed, 77 when every case ran was skipped, else
/// the number of failed cases (a run mixing skipped and passed cases counts as one failure).
int run_catch_session(int argc, char** argv);

/// Records that the current test case is skipped, and why (use SKIP_UNLESS).
void record_skip(const std::string& why);

/// Ends the current test case as skipped, saying WHY, unless CONDITION holds.
#define SKIP_UNLESS(condition, why) \
  do {                              \
    if (!(condition)) {             \
      record_skip(why);             \
      return;                       \
    }                               \
  } while (0)
