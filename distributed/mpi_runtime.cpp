#include "distributed/mpi_runtime.h"

#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "distributed/mpi_check.h"
#include "distributed/mpi_wait.h"

namespace chainermn {

namespace {

std::atomic<bool> g_aborting{false};      // abort_job has started: never MPI_Finalize after it
std::atomic<bool> g_in_terminate{false};  // guards the terminate handler against re-entry
std::once_flag g_handlers_once;
std::atomic<double> g_timeout{kDefaultMpiTimeout};  // the watchdog's limit in seconds; 0: off

void write_stderr(const std::string& text) {
  // One write(2), so lines from several ranks do not interleave mid-line.
  std::fflush(stdout);
  std::fflush(stderr);
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(2, p, left);
    if (n <= 0) break;
    p += n;
    left -= size_t(n);
  }
}

[[noreturn]] void terminate_handler() {
  if (g_in_terminate.exchange(true)) std::abort();  // failed while ending the job: give up
  std::string message = "terminate called without an active exception";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      message = chainer::str("uncaught exception: ", ex.what());
    } catch (...) {
      message = "uncaught exception of unknown type";
    }
  }
  abort_job(message, 1);
}

void finalize_at_exit() { finalize_mpi(); }

double timeout_from_environment() {
  const char* text = std::getenv("CHAINERMN_TIMEOUT");
  if (!text || !*text) return g_timeout.load();
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(seconds) || seconds < 0)
    throw chainer::Error(chainer::str("init_mpi: CHAINERMN_TIMEOUT must be a number of seconds >= 0 (0 turns the ",
                                      "watchdog off), not '", text, "'"));
  return seconds;
}

// Ends this rank because SITE has been blocked for LIMIT seconds (see mpi_runtime.h).
[[noreturn]] void end_blocked_rank(const MpiCallSite& site, double limit, int rank, int size) {
  const std::string call(site.call, std::find(site.call, site.call + std::strlen(site.call), '('));
  // Two causes look alike from here, so both are named: a healthy peer busy alone for longer
  // than a small limit (rank 0 reading the data while the others wait in the scatter), and a
  // peer that will never come.
  detail::end_rank_from_watchdog(
      chainer::str(call, " (", site.file, ":", site.line, ") has not completed in ", limit,
                   " s (CHAINERMN_TIMEOUT; default ", kDefaultMpiTimeout, "): a peer has not reached it. Either the ",
                   "peer is still busy on its own (reading or scattering a dataset, evaluating, writing a snapshot): ",
                   "raise CHAINERMN_TIMEOUT above the longest such stretch (seconds; 0 turns this off); or the peer ",
                   "process or its host is unreachable (a cut link, a frozen host or process)"),
      rank, size);
}

// Samples the call in progress (mpi_check.h) every tick: a call seen in progress, with no other
// call started since, for LIMIT seconds ends the rank. Timing starts when the call is first seen,
// so it never fires early, and fires at most a tick late.
void watchdog(int rank, int size) {
  const detail::MpiCallWatch& watch = detail::g_mpi_call_watch;
  uint64_t seen = 0;
  bool watching = false;
  auto since = std::chrono::steady_clock::now();
  for (;;) {
    const double limit = g_timeout.load(std::memory_order_relaxed);
    const double tick = limit > 0 ? std::clamp(limit / 20, 0.01, 1.0) : 1.0;
    std::this_thread::sleep_for(std::chrono::duration<double>(tick));
    const MpiCallSite* site = watch.site.load(std::memory_order_acquire);
    const uint64_t started = watch.started.load(std::memory_order_relaxed);
    const auto now = std::chrono::steady_clock::now();
    if (!site || !watching || started != seen) {
      watching = site != nullptr;
      seen = started;
      since = now;
    } else if (limit > 0 && std::chrono::duration<double>(now - since).count() >= limit) {
      end_blocked_rank(*site, limit, rank, size);
    }
  }
}

}  // namespace

bool mpi_is_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

void init_mpi(int* argc, char*** argv) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) throw chainer::Error("init_mpi: MPI was already finalized in this process and cannot start again");
  bool started_here = false;
  if (!initialized) {
    int provided = MPI_THREAD_SINGLE;
    CHAINERMN_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
    started_here = true;
  }
  std::call_once(g_handlers_once, [started_here] {
    g_timeout = timeout_from_environment();
    detail::decide_wait_policy();
    std::set_terminate(terminate_handler);
    if (started_here) std::atexit(finalize_at_exit);
    // Only where there are peers to wait for; detached, it touches nothing but atomics until it fires.
    if (world_size() > 1) std::thread(watchdog, world_rank(), world_size()).detach();
  });
}

double mpi_timeout() { return g_timeout.load(); }

void set_mpi_timeout(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    throw chainer::Error(chainer::str("set_mpi_timeout: the limit must be a number of seconds >= 0 (0: no limit), not ",
                                      seconds));
  g_timeout = seconds;
}

void finalize_mpi() {
  if (g_aborting.load() || !mpi_is_running()) return;
  static constexpr MpiCallSite site{"MPI_Finalize()", __FILE__, __LINE__};
  const detail::WatchedMpiCall watch(&site);  // it waits for the peers too
  MPI_Finalize();
}

int world_rank() {
  if (!mpi_is_running()) return 0;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  if (!mpi_is_running()) return 1;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

void abort_job(const std::string& message, int code) {
  const int rank = world_rank(), size = world_size();
  std::string text = chainer::str("[rank ", rank, "/", size, "] ", message);
  if (text.empty() || text.back() != '\n') text += '\n';
  write_stderr(text);
  if (code == 0) code = 1;  // an aborted job never reports success
  if (size > 1) {
    g_aborting = true;
    // mpiexec's proxy forwards our stderr asynchronously, and MPI_Abort has it kill every
    // process at once: on a loaded machine the message was sometimes lost on the way. A moment
    // to forward it costs nothing next to a hang.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort should not return
  }
  std::exit(code);  // one process: a plain exit (MPI_Finalize runs at exit)
}

namespace detail {

// The message, a moment for hydra's proxy to forward it (as in abort_job), then SIGKILL, which
// hydra treats as a bad termination of the job (a plain exit code would leave mpiexec waiting
// for the proxies it cannot reach).
void end_rank_from_watchdog(const std::string& message, int rank, int size) {
  write_stderr(chainer::str("[rank ", rank, "/", size, "] chainermn: ", message, ". Ending the job\n"));
  g_aborting = true;
  if (size > 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::kill(::getpid(), SIGKILL);
  }
  std::_Exit(1);
}

int run_main_impl(int& argc, char**& argv, const std::function<int(int&, char**&)>& fn) {
  try {
    init_mpi(&argc, &argv);
    return fn(argc, argv);
  } catch (const std::exception& e) {
    abort_job(e.what(), 1);
  } catch (...) {
    abort_job("unknown exception (not derived from std::exception)", 1);
  }
}

}  // namespace detail

}  // namespace chainermn
