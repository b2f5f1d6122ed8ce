// The skip mechanism of tests/catch_session.h, run by tests/skips.sh: a run whose every case
// was skipped exits 77, a run that mixes a skipped case with a passed one fails naming it.
#include <catch2/catch.hpp>

#include "catch_session.h"

TEST_CASE("skips: a case whose precondition is missing", "[skipped]") {
  SKIP_UNLESS(false, "the precondition of this example never holds");
  FAIL("SKIP_UNLESS did not end the case");
}

TEST_CASE("skips: a case that runs", "[runs]") { CHECK(1 + 1 == 2); }
