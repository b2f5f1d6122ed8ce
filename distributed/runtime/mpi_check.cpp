#include "distributed/runtime/mpi_check.h"

namespace chainermn {

namespace detail {
MpiCallWatch g_mpi_call_watch;
}  // namespace detail

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return chainer::str("unknown MPI error code ", code);
  return std::string(text, size_t(len));
}

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  throw MpiError(code, chainer::str("MPI call failed: ", call, " at ", file, ":", line, ": ", mpi_error_string(code)));
}

}  // namespace chainermn
