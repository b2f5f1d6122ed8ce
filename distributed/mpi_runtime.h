// The MPI job around a chainermn program: starting MPI once, finalizing it at normal exit, and
// ending the whole job (every rank, non-zero status, the message on stderr) as soon as one rank
// fails, instead of leaving the others blocked forever in a collective. Wrap main in run_main:
//
//   int main(int argc, char** argv) {
//     return chainermn::run_main(argc, argv, [&] { ...; return 0; });
//   }
//
// A program started without mpiexec runs as a 1-process job (MPICH's singleton init).
//
// A rank that dies without running any handler (SIGKILL, a crash) cannot call MPI_Abort; MPICH's
// mpiexec (hydra) notices the abnormal exit and kills the other ranks itself, within about a
// second, unless it was started with -disable-auto-cleanup (don't). MPIEXEC_TIMEOUT=<seconds> in
// mpiexec's environment makes hydra end a job that hangs for any other reason.
#pragma once
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

namespace chainermn {

// Starts MPI (MPI_Init_thread asking for MPI_THREAD_FUNNELED: only the main thread calls MPI;
// OpenMP workers never do). Idempotent, and fine when the caller already started MPI itself.
// When it starts MPI, MPI_Finalize runs at normal exit (not after abort_job). It also installs
// a std::terminate handler: an uncaught exception on any thread of any rank ends the whole job
// with the exception's message. Throws chainer::Error if MPI was already finalized.
void init_mpi(int* argc = nullptr, char*** argv = nullptr);

// True between MPI_Init and MPI_Finalize.
bool mpi_is_running();

// MPI_Finalize, if MPI runs and the job is not being aborted; idempotent. Normally called for
// you at exit; call it yourself only to finalize earlier.
void finalize_mpi();

// Rank and size in MPI_COMM_WORLD (0 and 1 while MPI is not running).
int world_rank();
int world_size();

// Prints "[rank R/N] MESSAGE" to stderr and ends the job with status CODE: MPI_Abort on
// MPI_COMM_WORLD when the job has several processes (mpiexec then kills every rank), a plain
// exit otherwise.
[[noreturn]] void abort_job(const std::string& message, int code = 1);

namespace detail {
int run_main_impl(int& argc, char**& argv, const std::function<int(int&, char**&)>& fn);
}

// Calls init_mpi, then FN (FN(argc, argv) or FN(), returning int or nothing, meaning 0), and
// returns its status. Any exception escaping FN becomes abort_job(e.what()): the whole job
// stops with the message instead of hanging the ranks that wait for this one.
template <class Fn>
int run_main(int argc, char** argv, Fn&& fn) {
  return detail::run_main_impl(argc, argv, [&fn](int& c, char**& v) -> int {
    if constexpr (std::is_invocable_v<Fn&, int, char**>) {
      if constexpr (std::is_void_v<std::invoke_result_t<Fn&, int, char**>>) {
        fn(c, v);
        return 0;
      } else {
        return int(fn(c, v));
      }
    } else {
      static_assert(std::is_invocable_v<Fn&>, "run_main: FN must be callable as fn(argc, argv) or fn()");
      if constexpr (std::is_void_v<std::invoke_result_t<Fn&>>) {
        fn();
        return 0;
      } else {
        return int(fn());
      }
    }
  });
}

}  // namespace chainermn
