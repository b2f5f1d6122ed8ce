// A job where one rank fails while the others wait for it in a collective; driven by
// tests/distributed/mpi_failure.sh, which checks that the whole job ends quickly with a non-zero status and
// the failing rank's message. Modes (argv[1]):
//   throw      rank 1 throws a chainer::Error inside run_main
//   throw_std  rank 1 throws std::out_of_range("stoll"), a library exception whose what() names no
//              fault: the message must give its type
//   terminate  rank 1 throws on a std::thread of its own: the std::terminate handler ends the job
//   sigkill    rank 1 kills itself with SIGKILL (no handler runs; mpiexec must notice)
//   stop       rank 1 stops itself with SIGSTOP: nothing fails, the others just wait, as for a
//              peer behind a cut link; the watchdog (CHAINERMN_TIMEOUT) must end the job, and
//              the healthy ranks' messages must name rank 1 as not running
//   loop [S]   every rank all-reduces 256 KiB over and over, for S seconds (rank 0's clock), or
//              until the job is ended from outside (tests/distributed/simhosts.sh cuts a host's link)
//   ok         nobody fails: every rank prints "rank R ok" and the job exits 0
// and, for chainermn::functions (model parallelism; 2 processes):
//   fn_send_unreceived        rank 0 sends, then runs backward on the delegate, which waits for a
//                             gradient; rank 1 never receives (it sleeps): the watchdog must end the job
//   fn_send_large_unreceived  rank 0 sends 8 MiB, which waits for the receiver; rank 1 never receives
//   fn_recv_unsent            rank 1 waits in recv for rank 0, which never sends
//   fn_recv_tag               rank 1 receives with tag 2 what rank 0 sent with tag 1: an error
//   fn_recv_shape             rank 1 expects shape (3,), rank 0 sends (2, 2): an error
//   fn_rnn_states             rank 0's encoder of 3 layers sends its states and waits in backward
//                             for their gradients; rank 1's decoder of 2 layers refuses them: its
//                             error must end the job, rank 0 included
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/util/error.h"
#include "distributed/communicators/communicator.h"
#include "distributed/functions/point_to_point.h"
#include "distributed/links/multi_node_n_step_rnn.h"

namespace {

// The fn_* modes. The rank that misbehaves by doing nothing sleeps outside MPI, so only its
// peer's wait can end the job.
void communication_function_mode(const std::string& mode, const std::shared_ptr<chainermn::Communicator>& comm) {
  namespace MF = chainermn::functions;
  using chainer::Tensor;
  using chainer::Variable;
  const int rank = comm->rank();
  const auto idle = [] { std::this_thread::sleep_for(std::chrono::seconds(30)); };
  if (mode == "fn_send_unreceived") {
    if (rank == 0) MF::send(Variable(Tensor::ones({4})), comm, 1).backward();
    if (rank == 1) idle();
  } else if (mode == "fn_send_large_unreceived") {
    if (rank == 0) MF::send(Variable(Tensor::ones({int64_t(2) << 20})), comm, 1);
    if (rank == 1) idle();
  } else if (mode == "fn_recv_unsent") {
    if (rank == 0) idle();
    if (rank == 1) MF::recv(comm, 0);
  } else if (mode == "fn_recv_tag") {
    if (rank == 0) MF::send(Variable(Tensor::ones({4})), comm, 1, 1);
    if (rank == 1) MF::recv(comm, 0, {}, 2);
  } else if (mode == "fn_recv_shape") {
    if (rank == 0) MF::send(Variable(Tensor::ones({2, 2})), comm, 1);
    MF::RecvOptions expect;
    expect.shape = chainer::Shape{3};
    if (rank == 1) MF::recv(comm, 0, {}, 0, expect);
  } else if (mode == "fn_rnn_states") {
    using chainermn::links::create_multi_node_n_step_rnn;
    const std::vector<Variable> xs = {Variable(Tensor::ones({3, 2}))};
    auto lstm = std::make_shared<chainer::links::NStepLSTM>(rank == 0 ? 3 : 2, 2, 4, 0.0);
    if (rank == 0) create_multi_node_n_step_rnn(lstm, comm, std::nullopt, 1)->forward(xs).delegate.backward();
    if (rank == 1) create_multi_node_n_step_rnn(lstm, comm, 0)->forward(xs);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return chainermn::run_main(argc, argv, [](int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "ok";
    auto comm = chainermn::create_communicator("naive");
    const int rank = comm->rank();
    comm->allreduce(chainer::Tensor::ones({4}));  // everyone is up
    if (mode == "loop") {
      // Element 0 of each sum says whether to go on (only rank 0 votes), so all ranks stop together.
      const double seconds = argc > 2 ? std::atof(argv[2]) : -1;
      const auto start = std::chrono::steady_clock::now();
      int64_t steps = 0;
      for (bool more = true; more; ++steps) {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        chainer::Tensor x = chainer::Tensor::zeros({int64_t(64) << 10});
        if (rank == 0 && (seconds < 0 || elapsed < seconds)) x.fill_(1.0);
        more = comm->allreduce(x).to_vector<double>()[0] > 0;
        if (rank == 0 && steps == 0) {
          std::printf("rank 0 all-reducing\n");
          std::fflush(stdout);
        }
      }
      std::printf("rank %d ok after %lld all-reduces\n", rank, (long long)steps);
      return 0;
    }
    if (mode.rfind("fn_", 0) == 0) communication_function_mode(mode, comm);
    if (rank == 1 || comm->size() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the others block first
      if (mode == "throw") throw chainer::Error("rank 1 failed on purpose: bad batch");
      if (mode == "throw_std") throw std::out_of_range("stoll");
      if (mode == "terminate") {
        std::thread t([] { throw chainer::Error("uncaught on a worker thread"); });
        t.join();
      }
      if (mode == "sigkill") std::raise(SIGKILL);
      if (mode == "stop") std::raise(SIGSTOP);
    }
    // The others wait here for rank 1, which never comes unless mode is "ok".
    const chainer::Tensor sum = comm->allreduce(chainer::Tensor::ones({4}));
    std::printf("rank %d ok %g\n", rank, sum.to_vector<double>()[0]);
    return 0;
  });
}
