#include "distributed/mpi_runtime.h"

#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "distributed/mpi_check.h"

namespace chainermn {

namespace {

std::atomic<bool> g_aborting{false};      // abort_job has started: never MPI_Finalize after it
std::atomic<bool> g_in_terminate{false};  // guards the terminate handler against re-entry
std::once_flag g_handlers_once;

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
    std::set_terminate(terminate_handler);
    if (started_here) std::atexit(finalize_at_exit);
  });
}

void finalize_mpi() {
  if (g_aborting.load() || !mpi_is_running()) return;
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
