#include "distributed/runtime/mpi_library.h"

#include <dlfcn.h>
#include <mpi.h>
// Open MPI declares its extensions (MPIX_Query_cuda_support) in a header of their own.
#if defined(OPEN_MPI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <cstdlib>
#include <optional>
#include <vector>

#include "core/util/error.h"
#include "distributed/runtime/mpi_check.h"
#include "distributed/runtime/mpi_runtime.h"

namespace chainermn {

using chainer::str;

namespace {

void require_mpi(const char* op) {
  if (!mpi_is_running()) throw chainer::Error(str(op, ": MPI is not running (call chainermn::init_mpi first)"));
}

// The environment variable NAME as a non-negative integer, if set to one.
std::optional<long> env_number(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*end != '\0' || v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::string mpi_library_version() {
  require_mpi("mpi_library_version");
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  CHAINERMN_MPI_CHECK(MPI_Get_library_version(text, &length));
  std::string s(text, size_t(length));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t' || s.back() == '\0')) s.pop_back();
  return s;
}

std::string mpi_library_name() {
  const std::string all = mpi_library_version();
  std::string out;
  for (char c : all.substr(0, all.find('\n'))) {
    const bool blank = c == ' ' || c == '\t' || c == '\r';
    if (blank && (out.empty() || out.back() == ' ')) continue;
    out += blank ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string mpi_standard_version() {
  int major = 0, minor = 0;
  CHAINERMN_MPI_CHECK(MPI_Get_version(&major, &minor));
  return str(major, ".", minor);
}

std::string mpi_thread_level() {
  require_mpi("mpi_thread_level");
  int level = MPI_THREAD_SINGLE;
  CHAINERMN_MPI_CHECK(MPI_Query_thread(&level));
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return str("thread level ", level);
  }
}

std::string mpi_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&MPI_Get_library_version), &info) && info.dli_fname) return info.dli_fname;
  return "";
}

CudaAwareness mpi_cuda_aware() {
  require_mpi("mpi_cuda_aware");
  CudaAwareness a;
#if defined(MPIX_GPU_SUPPORT_CUDA)
  // MPICH >= 4.0: true when it was built with CUDA support and GPU support is on at run time
  // (MPIR_CVAR_ENABLE_GPU, on by default).
  int supported = 0;
  CHAINERMN_MPI_CHECK(MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported));
  a.state = supported ? CudaAwareness::State::Yes : CudaAwareness::State::No;
  a.reason = supported ? "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA) says this MPICH supports CUDA memory"
                       : "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA) says no: this MPICH was built without "
                         "CUDA, or GPU support is off (MPIR_CVAR_ENABLE_GPU=0)";
#elif defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  // Open MPI built with CUDA: the library in use may still have it off.
  const bool supported = MPIX_Query_cuda_support() == 1;
  a.state = supported ? CudaAwareness::State::Yes : CudaAwareness::State::No;
  a.reason = supported ? "MPIX_Query_cuda_support() says yes" : "MPIX_Query_cuda_support() says no (it is off at run time)";
#elif defined(MPIX_CUDA_AWARE_SUPPORT)
  a.state = CudaAwareness::State::No;
  a.reason = "this Open MPI was built without CUDA support (MPIX_CUDA_AWARE_SUPPORT is 0)";
#else
  a.reason = "this MPI library offers no query for CUDA support (neither MPICH's MPIX_GPU_query_support nor "
             "Open MPI's MPIX_Query_cuda_support)";
#endif
  return a;
}

std::string launcher_mismatch() {
  require_mpi("launcher_mismatch");
  int rank = 0, size = 1;
  CHAINERMN_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHAINERMN_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  std::vector<std::string> found;
  // What MPICH's hydra and Open MPI's launcher (prterun/orterun) give every process they start.
  for (const char* name : {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE"})
    if (auto v = env_number(name); v && *v != size)
      found.push_back(str(name, "=", *v, " but MPI_COMM_WORLD has ", size, size == 1 ? " process" : " processes"));
  for (const char* name : {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"})
    if (auto v = env_number(name); v && *v != rank)
      found.push_back(str(name, "=", *v, " but this process is rank ", rank, " of MPI_COMM_WORLD"));
  // Processes started on this host: more than the whole job has.
  for (const char* name : {"MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE"})
    if (auto v = env_number(name); v && *v > size)
      found.push_back(str(name, "=", *v, " but MPI_COMM_WORLD has ", size, size == 1 ? " process" : " processes"));
  std::string out;
  for (const std::string& f : found) out += (out.empty() ? "" : "; ") + f;
  return out;
}

}  // namespace chainermn
