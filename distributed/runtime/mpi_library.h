/// @file
/// What the MPI library under chainermn is and what it can do, asked of the library itself at run
/// time: its version text, whether it is CUDA-aware (can take device pointers in its calls), and
/// whether the launcher that started this process agrees with it about the job. These are the
/// questions of ChainerMN's troubleshooting guide; apps/chainermn_check prints the answers, and a
/// communicator can use mpi_cuda_aware() to decide whether device buffers may go to MPI directly.
/// All are local (no rank waits for another); those that ask the library throw chainer::Error
/// unless MPI is running (chainermn::init_mpi).
#pragma once
#include <string>

namespace chainermn {

/// MPI_Get_library_version, without its trailing blank lines. For MPICH that is several lines
/// ("MPICH Version: 4.0.2", release date, device, configure options, compilers).
std::string mpi_library_version();
/// Its first line, blanks collapsed: "MPICH Version: 4.0.2".
std::string mpi_library_name();
/// The MPI standard the library implements (MPI_Get_version): "4.0".
std::string mpi_standard_version();
/// The thread level MPI gave this process (MPI_Query_thread): "MPI_THREAD_FUNNELED", ...
std::string mpi_thread_level();
/// The file the MPI library was loaded from ("/usr/lib/x86_64-linux-gnu/libmpich.so.12"), or
/// empty when the dynamic loader cannot say (a static link).
std::string mpi_library_path();

/// Whether MPI can take CUDA device memory in its calls, and how that was found out.
struct CudaAwareness {
  /// The answer: yes, no, or unknown (the library could not be asked).
  enum class State { Yes, No, Unknown };
  State state = State::Unknown;  ///< The answer.
  std::string reason;  ///< The query asked and what it said, or why nothing could be asked.
  /// The answer as "yes", "no" or "unknown".
  const char* name() const { return state == State::Yes ? "yes" : state == State::No ? "no" : "unknown"; }
};
/// Asks the library (MPICH `>= 4.0`: `MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA)`; Open MPI:
/// MPIX_Query_cuda_support); Unknown where the library has no such query.
CudaAwareness mpi_cuda_aware();

/// When the environment shows that a launcher started this process as rank R of a job of N
/// (MPICH's hydra: PMI_RANK, PMI_SIZE, MPI_LOCALNRANKS; Open MPI: OMPI_COMM_WORLD_RANK,
/// OMPI_COMM_WORLD_SIZE, PMIX_RANK) but MPI_COMM_WORLD disagrees, what differs, e.g.
/// "PMI_SIZE=2 but MPI_COMM_WORLD has 1 process". That happens when the program was built with
/// one MPI and started by another MPI's mpiexec: every process then runs alone as rank 0 of 1.
/// Empty when they agree or nothing in the environment says.
std::string launcher_mismatch();

}  // namespace chainermn
