#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>
#include <map>

#include "catch_session.h"

namespace {
int g_cases_run = 0;                          // test cases that ended in this run
std::map<std::string, std::string> g_skipped;  // skipped case -> why

struct CountCases : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats&) override { ++g_cases_run; }
};
}  // namespace
CATCH_REGISTER_LISTENER(CountCases)

void record_skip(const std::string& why) { g_skipped[Catch::getResultCapture().getCurrentTestName()] = why; }

int run_catch_session(int argc, char** argv) {
  const int failed = Catch::Session().run(argc, argv);
  if (g_skipped.empty() || failed != 0) return failed;
  const int skipped = int(g_skipped.size());
  if (skipped == g_cases_run) {
    std::cout << "skipped: " << g_skipped.begin()->second << " (" << skipped << " test case"
              << (skipped > 1 ? "s" : "") << ")\n";
    return 77;
  }
  std::cout << "FAILED: " << skipped << " of the " << g_cases_run
            << " test cases run were skipped; a skipped case must not count as passed, so give them a run "
               "of their own (their tag, tests/meson.build):\n";
  for (const auto& [name, why] : g_skipped) std::cout << "  " << name << ": " << why << "\n";
  return 1;
}
