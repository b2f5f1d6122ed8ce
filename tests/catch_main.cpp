// main() of the single-process test binaries.
#include "catch_session.h"

int main(int argc, char** argv) { return run_catch_session(argc, argv); }
