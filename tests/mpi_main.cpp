// Catch2 main for tests that run under mpiexec: every rank runs every test case in the same
// order (so collectives inside them meet), and a failure on any rank fails the whole job: the
// failure counts are summed over the ranks and every rank returns the same status.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <mpi.h>

#include "distributed/mpi_runtime.h"

int main(int argc, char** argv) {
  chainermn::init_mpi(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Catch::Session session;
  int failed = session.run(argc, argv);
  int total = 0;
  MPI_Allreduce(&failed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (total != 0 && failed == 0) std::fprintf(stderr, "[rank %d] passed here, but %d failure(s) on other ranks\n", rank, total);
  chainermn::finalize_mpi();
  return total != 0 ? 1 : 0;
}
