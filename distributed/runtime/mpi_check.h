/// @file
/// Error checking for MPI calls. Every MPI call in chainermn goes through CHAINERMN_MPI_CHECK, and
/// chainermn's communicators use MPI_ERRORS_RETURN, so a failing call becomes a C++ exception
/// (chainermn::MpiError, a chainer::Error) naming the call, where it was made and MPI's own
/// explanation, instead of MPI's default of killing the job without saying where.
///
/// The macro also marks the call as in progress while it runs, for the job runtime's watchdog
/// (distributed/runtime/mpi_runtime.h, CHAINERMN_TIMEOUT): a call that never returns, because a peer or
/// its host became unreachable, ends the job with a message naming the call and file:line instead
/// of hanging it, and the ranks of its host that are not in the call. The mark is three plain
/// stores and a load per call, no clock read and no atomic read-modify-write, so even the
/// MPI_Test calls the gradient reducer makes from every gradient hook do not notice it; the
/// watchdog thread, not the call, copies what it sees where the other ranks can read it.
#pragma once
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "core/util/error.h"

namespace chainermn {

/// A failed MPI call: its message names the call, where it was made and MPI's explanation.
class MpiError : public chainer::Error {
 public:
  /// An error with MPI error code CODE and message WHAT.
  MpiError(int code, const std::string& what) : chainer::Error(what), code_(code) {}
  int code() const { return code_; }  ///< The MPI error code the call returned.

 private:
  int code_;
};

/// MPI_Error_string of CODE ("unknown MPI error code N" when MPI does not know it).
std::string mpi_error_string(int code);

/// Throws MpiError `"MPI call failed: CALL at FILE:LINE: <MPI_Error_string>"`.
[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);

/// Where a watched MPI call is made: the call as written, and file:line.
struct MpiCallSite {
  const char* call;  ///< The call as written.
  const char* file;  ///< The source file it is in.
  int line;          ///< Its line.
};

namespace detail {

// The MPI call in progress on the thread that calls MPI (MPI_THREAD_FUNNELED: one thread), or
// nullptr between calls; the last call started (kept after it returns, so that a rank busy
// outside MPI can say what it did last); and how many watched calls have started. The watchdog
// samples all three.
struct MpiCallWatch {
  std::atomic<const MpiCallSite*> site{nullptr};
  std::atomic<const MpiCallSite*> last{nullptr};
  std::atomic<uint64_t> started{0};
};
extern MpiCallWatch g_mpi_call_watch;

// Marks SITE as in progress for its lifetime.
class WatchedMpiCall {
 public:
  explicit WatchedMpiCall(const MpiCallSite* site) noexcept {
    // Only the MPI thread writes these, so a plain load and store count (no locked increment).
    g_mpi_call_watch.started.store(g_mpi_call_watch.started.load(std::memory_order_relaxed) + 1,
                                   std::memory_order_relaxed);
    g_mpi_call_watch.last.store(site, std::memory_order_relaxed);
    g_mpi_call_watch.site.store(site, std::memory_order_release);
  }
  ~WatchedMpiCall() { g_mpi_call_watch.site.store(nullptr, std::memory_order_release); }
  WatchedMpiCall(const WatchedMpiCall&) = delete;
  WatchedMpiCall& operator=(const WatchedMpiCall&) = delete;
};

}  // namespace detail

}  // namespace chainermn

/// Runs the MPI call CALL, watched, and throws MpiError unless it returns MPI_SUCCESS:
/// `CHAINERMN_MPI_CHECK(MPI_Send(buf, n, MPI_BYTE, dest, tag, comm));`
#define CHAINERMN_MPI_CHECK(call)                                                              \
  do {                                                                                         \
    static constexpr ::chainermn::MpiCallSite chainermn_mpi_site_{#call, __FILE__, __LINE__};  \
    int chainermn_mpi_rc_;                                                                     \
    {                                                                                          \
      const ::chainermn::detail::WatchedMpiCall chainermn_mpi_watch_(&chainermn_mpi_site_);    \
      chainermn_mpi_rc_ = (call);                                                              \
    }                                                                                          \
    if (chainermn_mpi_rc_ != MPI_SUCCESS)                                                      \
      ::chainermn::throw_mpi_error(chainermn_mpi_rc_, #call, __FILE__, __LINE__);               \
  } while (0)
