// Communicators composed of an intra-host and an inter-host stage, as ChainerMN's:
//   hierarchical     sum within each host to its first rank, all-reduce among those ranks (one
//                    per host), broadcast within each host;
//   two_dimensional  reduce-scatter within each host, all-reduce of each shard across hosts
//                    (among the ranks of equal intra_rank), all-gather within each host (it
//                    needs the same number of processes on every host);
//   single_node      one all-reduce within the host (the job must fit on one host);
//   non_cuda_aware   hierarchical for GPU gradients, with the inter-host stage always staged
//                    through host memory (for an MPI that cannot read device memory);
//   pure_nccl        one NCCL all-reduce over every rank (GPU gradients only).
// Each stage is a CollectiveBackend over a sub-communicator (the ranks of this host; the first
// rank of every host; the ranks of this intra_rank), so one algorithm serves any memory. For host
// memory both stages are MPI (distributed/communicators/collective_backend.h); for device memory
// the intra-host stage is NCCL (distributed/communicators/nccl_backend.h; made at the first GPU
// reduction, on that device) and the inter-host stage MPI, which reads device memory directly
// where MPI is CUDA-aware and stages it through host memory otherwise. Gradients are packed into
// one flat buffer per dtype (distributed/communicators/packing.h) and come back scaled by 1/size.
#pragma once
#include <map>
#include <memory>

#include "distributed/communicators/collective_backend.h"
#include "distributed/communicators/communicator.h"

namespace chainermn {

class ComposedCommunicator : public Communicator {
 public:
  enum class Algorithm { Hierarchical, TwoDimensional, SingleNode, NonCudaAware, PureNccl };
  // Collective over COMM (duplicated, as every communicator's). Throws chainer::Error on every
  // rank when the placement does not suit ALGORITHM (single_node across hosts, two_dimensional
  // with uneven hosts).
  ComposedCommunicator(Algorithm algorithm, MPI_Comm comm, CommunicatorOptions options = {});
  ~ComposedCommunicator() override;
  void finalize() override;
  // A one-stage algorithm (single_node, pure_nccl) is started by its backend, so on a GPU it is
  // queued on NCCL's stream; the others run at once (their stages wait for one another) and
  // return a finished handle.
  std::unique_ptr<PendingSum> start_sum(chainer::Tensor& buf) const override;

 protected:
  void mean_grads(const GradList& grads) const override;

 private:
  void reduce(chainer::Tensor& buf) const;  // BUF = its sum over all ranks
  // The intra-host stage for BUF's memory: MPI for host memory, NCCL on BUF's device.
  const CollectiveBackend& intra_for(const chainer::Tensor& buf) const;
  Algorithm algorithm_;
  MPI_Comm intra_comm_ = MPI_COMM_NULL, inter_comm_ = MPI_COMM_NULL;
  std::unique_ptr<CollectiveBackend> intra_, inter_;  // inter_ is null where this rank takes no part
  mutable std::unique_ptr<CollectiveBackend> intra_nccl_;  // made at the first GPU reduction
  mutable int nccl_device_ = -1;
  mutable std::map<chainer::DType, chainer::Tensor> buffers_;
};

}  // namespace chainermn
