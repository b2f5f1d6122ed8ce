/// @file
/// The MPI job around a chainermn program: starting MPI once, finalizing it at normal exit, and
/// ending the whole job (every rank, non-zero status, the message on stderr) as soon as one rank
/// fails, instead of leaving the others blocked forever in a collective. Wrap main in run_main:
///
/// ```
///   int main(int argc, char** argv) {
///     return chainermn::run_main(argc, argv, [&] { ...; return 0; });
///   }
/// ```
///
/// A program started without mpiexec runs as a 1-process job (MPICH's singleton init).
///
/// A rank that dies without running any handler (SIGKILL, a crash) cannot call MPI_Abort; MPICH's
/// mpiexec (hydra) notices the abnormal exit and kills the other ranks itself, within about a
/// second, unless it was started with -disable-auto-cleanup (don't).
///
/// A peer that becomes unreachable (its host's link cut, its host or process frozen) is another
/// matter: nothing fails, every rank waits in MPI forever, and neither MPICH nor TCP ever notices
/// (measured on simulated hosts: docs/design.md, "A cut link ends the job"). So in a job of
/// several processes init_mpi starts a watchdog thread, as PyTorch's NCCL watchdog: when one MPI
/// call made through CHAINERMN_MPI_CHECK (distributed/runtime/mpi_check.h) has not returned within the
/// time limit, the rank prints
/// ```
///   [rank R/N] chainermn: mpi::allreduce (FILE:LINE) has not completed in T s (CHAINERMN_TIMEOUT;
///   default 600): a peer has not reached it. Either the peer is still busy on its own ... or the
///   peer process or its host is unreachable ...
/// ```
/// to stderr and kills itself with SIGKILL (MPI may not be called from a second thread under
/// MPI_THREAD_FUNNELED, so no MPI_Abort). Hydra takes a process killed by a signal as a bad
/// termination and kills every rank it can reach, and mpiexec returns non-zero at once; ranks
/// behind the cut link time out the same way on their own. (A plain non-zero exit would not do:
/// hydra then waits for the unreachable host's proxy forever.)
///
/// The message also names the peers that have not reached the call, as far as the rank can see
/// them without MPI. The watchdogs of one host share a board (a small shared-memory segment that
/// init_mpi maps on every rank of the host, distributed/runtime/shared_segment.h): every tick each
/// watchdog writes there its rank's pid, the call its rank is in (or, outside MPI, the last one
/// it made) with the time it was first seen there, and a heartbeat. The MPI thread pays nothing
/// more than its mark (distributed/runtime/mpi_check.h: a few plain stores, no clock read). A rank that
/// times out reads the others' slots:
/// ```
///   ... a peer has not reached it. On this host (node1): rank 1 (pid 4242) has not run for
///   601.3 s: it is stopped or frozen (SIGSTOP, a debugger, a stalled machine); it was last seen
///   outside MPI, after mpi::allreduce (FILE:LINE); rank 2 waits in the same call. Ranks 4-7 on
///   node2: not visible from here (a watchdog sees the ranks of its own host only).
/// ```
/// A heartbeat older than five ticks (at least 1 s) means the process is not running at all; a
/// fresh one shows the peer in another call ("has been in another call for 3.0 s: MPI_Bcast
/// (FILE:LINE)") or busy outside MPI ("has been running outside MPI for 12.0 s, since ...
/// returned"). Ranks of other hosts are named by host only: no watchdog reaches another host
/// without MPI; their own watchdogs time out too and print what they see there. When every
/// other rank of the host waits in the same call, the message says that the peer missing is
/// among the other hosts' ranks. Without shared memory for the board (a full /dev/shm) the
/// message says so and names no peer of its host.
///
/// The limit is `CHAINERMN_TIMEOUT=<seconds>` in the environment (read by init_mpi; 0 turns the
/// watchdog off), or set_mpi_timeout; default 600 s, PyTorch's for NCCL. It bounds how long ONE
/// call may wait, and a call waits for as long as its slowest peer takes to reach it: when one
/// rank works alone while the others sit in the next collective (rank 0 evaluating a test set or
/// writing a large snapshot by itself), that stretch must stay under the limit, or the job ends
/// although nothing is wrong. A training step is seconds; raise the limit for longer solo phases.
/// MPI_Finalize (finalize_mpi) is watched too: over UCX's TCP transport it sometimes never returns
/// (docs/design.md). `MPIEXEC_TIMEOUT=<seconds>` in mpiexec's environment remains a limit on the
/// whole job.
#pragma once
#include <exception>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

namespace chainermn {

/// Starts MPI (MPI_Init_thread asking for MPI_THREAD_FUNNELED: only the main thread calls MPI;
/// OpenMP workers never do). Idempotent, and fine when the caller already started MPI itself.
/// When it starts MPI, MPI_Finalize runs at normal exit (not after abort_job). It also installs
/// a std::terminate handler: an uncaught exception on any thread of any rank ends the whole job
/// with the exception's message, and, in a job of several processes, maps its host's board and
/// starts the watchdog (see above; making the board is collective, as deciding the wait policy
/// is). Throws chainer::Error if MPI was already finalized, or if CHAINERMN_TIMEOUT is not a
/// number of seconds `>= 0`.
void init_mpi(int* argc = nullptr, char*** argv = nullptr);

/// True between MPI_Init and MPI_Finalize.
bool mpi_is_running();

/// The default of the watchdog's limit on one blocking MPI call, in seconds (PyTorch's for NCCL).
inline constexpr double kDefaultMpiTimeout = 600;
/// The watchdog's limit on one blocking MPI call, in seconds (see above); 0: no limit.
double mpi_timeout();
/// Sets it for this process from now on (CHAINERMN_TIMEOUT, read by init_mpi, overrides the default
/// only). Throws chainer::Error for a negative or non-finite value.
void set_mpi_timeout(double seconds);

/// MPI_Finalize, if MPI runs and the job is not being aborted; idempotent. Normally called for
/// you at exit; call it yourself only to finalize earlier.
void finalize_mpi();

/// Rank in MPI_COMM_WORLD (0 while MPI is not running).
int world_rank();
/// Size of MPI_COMM_WORLD (1 while MPI is not running).
int world_size();

/// Prints "[rank R/N] MESSAGE" to stderr and ends the job with status CODE: MPI_Abort on
/// MPI_COMM_WORLD when the job has several processes (mpiexec then kills every rank), a plain
/// exit otherwise.
[[noreturn]] void abort_job(const std::string& message, int code = 1);

/// The C++ name of E's dynamic type, as written in code: "std::invalid_argument".
std::string exception_type_name(const std::exception& e);
/// What E says, for a message: a chainer::Error's what(); "out of memory (std::bad_alloc)"; for
/// any other exception its type, then its what() ("std::out_of_range: stoll"), since the C++
/// library's own messages name no fault.
std::string describe_exception(const std::exception& e);

namespace detail {
// Ends rank RANK of SIZE from a watchdog thread, which may not call MPI (MPI_THREAD_FUNNELED):
// prints "[rank R/N] chainermn: MESSAGE. Ending the job" to stderr and kills the process
// (SIGKILL, so that mpiexec ends every rank; a plain exit in a job of one process).
[[noreturn]] void end_rank_from_watchdog(const std::string& message, int rank, int size);
int run_main_impl(int& argc, char**& argv, const std::function<int(int&, char**&)>& fn);
}

/// Calls init_mpi, then FN (`FN(argc, argv)` or `FN()`, returning int or nothing, meaning 0), and
/// returns its status. Any exception escaping FN becomes `abort_job(describe_exception(e))`: the
/// whole job stops with the message instead of hanging the ranks that wait for this one.
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
