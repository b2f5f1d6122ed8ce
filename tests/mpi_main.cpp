// Catch2 main for tests that run under mpiexec: every rank runs every test case in the same
// order (so collectives inside them meet), and a failure on any rank fails the whole job: the
// failure counts are summed over the ranks and every rank returns the same status.
//
// A test case that fails on one rank of several ends the whole job right away (MPI_Abort, after
// the failure has been printed): the other ranks may be waiting in a collective that the failed
// rank left (a REQUIRE between two collectives), and would otherwise sit there until the test's
// timeout with no word of why.
// The reporter bases, for the listener below, outside the file that compiles Catch2.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>
#include <mpi.h>

#include <cstdio>
#include <iostream>

#include "catch_session.h"
#include "distributed/runtime/mpi_runtime.h"

namespace {
struct AbortJobOnFailure : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    int size = 1, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size == 1 || stats.totals.assertions.failed == 0) return;
    std::cout.flush();
    std::fprintf(stderr, "[rank %d of %d] test case '%s' failed (see above); ending the job so that no rank waits "
                 "for it in a collective\n", rank, size, stats.testInfo.name.c_str());
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
};
}  // namespace
CATCH_REGISTER_LISTENER(AbortJobOnFailure)

int main(int argc, char** argv) {
  chainermn::init_mpi(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int result = run_catch_session(argc, argv);
  // Skipped (77) only when every rank skipped every case it ran; a skip on some ranks only is a
  // failure, as a mix of skipped and passed cases is in one process.
  const int failed = result == 77 ? 0 : result, skipped = result == 77 ? 1 : 0;
  int total = 0, skipped_ranks = 0, size = 1;
  MPI_Allreduce(&failed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&skipped, &skipped_ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (total != 0 && failed == 0) std::fprintf(stderr, "[rank %d] passed here, but %d failure(s) on other ranks\n", rank, total);
  chainermn::finalize_mpi();
  if (total == 0 && skipped_ranks == size) return 77;
  if (total == 0 && skipped_ranks != 0) {
    std::fprintf(stderr, "[rank %d] %d of %d ranks skipped their cases: a skip must be the same on every rank\n", rank,
                 skipped_ranks, size);
    return 1;
  }
  return total != 0 ? 1 : 0;
}
