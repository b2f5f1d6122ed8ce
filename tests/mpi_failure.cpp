// A job where one rank fails while the others wait for it in a collective; driven by
// tests/mpi_failure.sh, which checks that the whole job ends quickly with a non-zero status and
// the failing rank's message. Modes (argv[1]):
//   throw      rank 1 throws a chainer::Error inside run_main
//   terminate  rank 1 throws on a std::thread of its own: the std::terminate handler ends the job
//   sigkill    rank 1 kills itself with SIGKILL (no handler runs; mpiexec must notice)
//   ok         nobody fails: every rank prints "rank R ok" and the job exits 0
#include <csignal>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "core/error.h"
#include "distributed/communicators/communicator.h"

int main(int argc, char** argv) {
  return chainermn::run_main(argc, argv, [](int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "ok";
    auto comm = chainermn::create_communicator("naive");
    const int rank = comm->rank();
    comm->allreduce(chainer::Tensor::ones({4}));  // everyone is up
    if (rank == 1 || comm->size() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the others block first
      if (mode == "throw") throw chainer::Error("rank 1 failed on purpose: bad batch");
      if (mode == "terminate") {
        std::thread t([] { throw chainer::Error("uncaught on a worker thread"); });
        t.join();
      }
      if (mode == "sigkill") std::raise(SIGKILL);
    }
    // The others wait here for rank 1, which never comes unless mode is "ok".
    const chainer::Tensor sum = comm->allreduce(chainer::Tensor::ones({4}));
    std::printf("rank %d ok %g\n", rank, sum.to_vector<double>()[0]);
    return 0;
  });
}
