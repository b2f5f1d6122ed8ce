// NCCL on device memory, as a CollectiveBackend (distributed/communicators/collective_backend.h):
// the intra-host stage of hierarchical, two_dimensional, single_node and non_cuda_aware on
// GPUs, and the whole of pure_nccl. NCCL lives in a plugin, libchainermn_nccl.so, beside
// libchainermn.so and loaded at first use, as the CUDA backend is (core/device/cuda.h): a CPU-only run
// of a CUDA build loads neither NCCL nor the CUDA runtime.
//
// A backend belongs to one device and one MPI communicator (borrowed). Its NCCL communicator is
// made at its first collective, which every member reaches together; collectives run on a stream
// of the backend's own, after what the device's compute stream has queued, and the compute stream
// is ordered after them: the host never waits for one. A watchdog thread polls them and NCCL's
// errors, and ends the job when a peer fails or a collective outlives CHAINERMN_TIMEOUT.
// start_allreduce leaves the ordering to PendingSum::wait(), so backward keeps the compute stream
// busy while a bucket is summed. The logic and its reasons: nccl_collectives.h. NCCL refuses two
// ranks on one GPU ("Duplicate GPU detected"): its error says so.
#pragma once
#include <mpi.h>

#include <memory>
#include <string>

#include "distributed/communicators/collective_backend.h"

namespace chainermn::nccl {

// Empty when NCCL can be used here; otherwise why not (a build without CUDA or NCCL, the plugin
// or libnccl not loadable, a libnccl older than the calls need, no CUDA device).
std::string unavailable_reason();
// NCCL's version as ncclGetVersion gives it (22803 for 2.28.3); 0 when unavailable.
int version();
// The version of the nccl.h the NCCL plugin was compiled with (NCCL_VERSION_CODE, encoded as
// version()); 0 when the plugin cannot be loaded.
int header_version();
// Throws chainer::Error with unavailable_reason() naming OP when NCCL cannot be used.
std::unique_ptr<CollectiveBackend> backend(MPI_Comm comm, int device, const char* op);

// What libchainermn asks of the plugin (no NCCL or CUDA type here).
class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual int version() = 0;
  virtual int header_version() = 0;
  virtual std::string unavailable_reason() = 0;  // no device, or a libnccl too old, say
  virtual std::unique_ptr<CollectiveBackend> backend(MPI_Comm comm, int device) = 0;
};

}  // namespace chainermn::nccl

extern "C" chainermn::nccl::Plugin* chainermn_nccl_plugin();
