// Error checking for MPI calls. Every MPI call in chainermn goes through CHAINERMN_MPI_CHECK, and
// chainermn's communicators use MPI_ERRORS_RETURN, so a failing call becomes a C++ exception
// (chainermn::MpiError, a chainer::Error) naming the call, where it was made and MPI's own
// explanation, instead of MPI's default of killing the job without saying where.
#pragma once
#include <mpi.h>

#include <string>

#include "core/error.h"

namespace chainermn {

class MpiError : public chainer::Error {
 public:
  MpiError(int code, const std::string& what) : chainer::Error(what), code_(code) {}
  int code() const { return code_; }  // the MPI error code the call returned

 private:
  int code_;
};

// MPI_Error_string of CODE ("unknown MPI error code N" when MPI does not know it).
std::string mpi_error_string(int code);

// Throws MpiError "MPI call failed: CALL at FILE:LINE: <MPI_Error_string>".
[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);

}  // namespace chainermn

// CHAINERMN_MPI_CHECK(MPI_Send(buf, n, MPI_BYTE, dest, tag, comm));
#define CHAINERMN_MPI_CHECK(call)                                                    \
  do {                                                                               \
    const int chainermn_mpi_rc_ = (call);                                            \
    if (chainermn_mpi_rc_ != MPI_SUCCESS)                                            \
      ::chainermn::throw_mpi_error(chainermn_mpi_rc_, #call, __FILE__, __LINE__);     \
  } while (0)
