// The test binaries' entry to Catch2. Catch2's single header compiles its whole implementation
// wherever CATCH_CONFIG_RUNNER or CATCH_CONFIG_MAIN is defined (about 20 s of the compiler's time
// each): catch_session.cpp does that once for every binary, and each binary's main
// (catch_main.cpp, cuda_main.cpp, mpi_main.cpp) runs the tests through this function.
#pragma once

// Catch::Session().run(argc, argv): the number of failed test cases.
int run_catch_session(int argc, char** argv);
