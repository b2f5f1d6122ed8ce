// The collectives that communicators are composed of (distributed/communicators/composed_communicators.h),
// on one flat buffer of one dtype over a group of processes: sums to a root or to everyone,
// broadcast, and the reduce-scatter / all-gather pair over consecutive shares. One
// implementation per kind of memory and transport: MPI on host memory here (with the
// sub-communicators of one host or of one rank per host); NCCL on device memory is the GPU
// communicators' intra-host backend.
#pragma once
#include <mpi.h>

#include <memory>
#include <vector>

#include "core/tensor/tensor.h"
#include "distributed/communicators/pending_sum.h"

namespace chainermn {

class CollectiveBackend {
 public:
  virtual ~CollectiveBackend() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In place on BUF (flat, contiguous, float32 or float64), called by every member in the same order.
  virtual void reduce(chainer::Tensor& buf, int root) const = 0;  // ROOT's BUF = the sum; others' unspecified
  virtual void allreduce(chainer::Tensor& buf) const = 0;         // every BUF = the sum
  virtual void bcast(chainer::Tensor& buf, int root) const = 0;   // every BUF = ROOT's
  // BUF is size() consecutive shares, SHARES[i] elements for member i: member i's share of BUF
  // becomes the sum of that share over all members (the rest of BUF is unspecified) ...
  virtual void reduce_scatter(chainer::Tensor& buf, const std::vector<int64_t>& shares) const = 0;
  // ... and back: every member's share of BUF goes to every member's BUF.
  virtual void allgather(chainer::Tensor& buf, const std::vector<int64_t>& shares) const = 0;
  // allreduce, started: by default done at once; NCCL's queues it on its stream and the handle's
  // wait() orders the compute stream after it, so backward goes on meanwhile.
  virtual std::unique_ptr<PendingSum> start_allreduce(chainer::Tensor& buf) const {
    allreduce(buf);
    return finished_sum();
  }
};

// How an MPI stage treats device memory: Auto hands MPI the device pointers when MPI is
// CUDA-aware (distributed/runtime/mpi_library.h) and stages through host memory otherwise; Staged always
// stages (non_cuda_aware).
enum class DeviceMemory { Auto, Staged };

// MPI over COMM (borrowed: it must outlive the backend), on host memory, and on device memory
// as DEVICE says.
std::unique_ptr<CollectiveBackend> mpi_backend(MPI_Comm comm, DeviceMemory device = DeviceMemory::Auto);

// N elements cut into PARTS consecutive shares as evenly as possible (the first N % PARTS one
// larger).
std::vector<int64_t> even_shares(int64_t n, int parts);

}  // namespace chainermn
