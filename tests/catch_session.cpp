#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_session.h"

int run_catch_session(int argc, char** argv) { return Catch::Session().run(argc, argv); }
