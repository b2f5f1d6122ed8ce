#include "distributed/communicators/composed_communicators.h"

#include <algorithm>

#include "distributed/communicators/nccl_backend.h"
#include "distributed/runtime/mpi_check.h"
#include "distributed/communicators/packing.h"

namespace chainermn {

using chainer::Error;
using chainer::str;
using chainer::Tensor;

namespace {
const char* name_of(ComposedCommunicator::Algorithm a) {
  switch (a) {
    case ComposedCommunicator::Algorithm::Hierarchical: return "hierarchical";
    case ComposedCommunicator::Algorithm::TwoDimensional: return "two_dimensional";
    case ComposedCommunicator::Algorithm::SingleNode: return "single_node";
    case ComposedCommunicator::Algorithm::NonCudaAware: return "non_cuda_aware";
    case ComposedCommunicator::Algorithm::PureNccl: return "pure_nccl";
  }
  return "?";
}
}  // namespace

ComposedCommunicator::ComposedCommunicator(Algorithm algorithm, MPI_Comm comm, CommunicatorOptions options)
    : Communicator(name_of(algorithm), comm, std::move(options)), algorithm_(algorithm) {
  // Placement checks first: every rank knows every host name, so all reach the same verdict.
  const std::vector<std::string>& hosts = host_names();
  if (algorithm == Algorithm::SingleNode && inter_size() > 1)
    throw Error(str("single_node: the job spans ", inter_size(), " hosts (inter_size ", inter_size(),
                    "), but this communicator averages within one host; use hierarchical, two_dimensional or flat"));
  if (algorithm == Algorithm::TwoDimensional) {
    const std::map<std::string, int> per_host = processes_per_host(hosts);
    const auto [low, high] = std::minmax_element(per_host.begin(), per_host.end(),
                                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    if (low->second != high->second)
      throw Error(str("two_dimensional: every host needs the same number of processes, but ", low->first, " has ",
                      low->second, " and ", high->first, " has ", high->second,
                      "; use hierarchical, which allows uneven hosts"));
  }
  const MPI_Comm c = mpi_comm();
  // pure_nccl's one stage spans every rank.
  CHAINERMN_MPI_CHECK(MPI_Comm_split(c, algorithm == Algorithm::PureNccl ? 0 : inter_rank(), rank(), &intra_comm_));
  const bool per_host_root = algorithm == Algorithm::Hierarchical || algorithm == Algorithm::NonCudaAware;
  const int inter_color = per_host_root                            ? (intra_rank() == 0 ? 0 : MPI_UNDEFINED)
                          : algorithm == Algorithm::TwoDimensional ? intra_rank()
                                                                   : MPI_UNDEFINED;
  CHAINERMN_MPI_CHECK(MPI_Comm_split(c, inter_color, rank(), &inter_comm_));
  intra_ = mpi_backend(intra_comm_);
  if (inter_comm_ != MPI_COMM_NULL)
    inter_ = mpi_backend(inter_comm_, algorithm == Algorithm::NonCudaAware ? DeviceMemory::Staged : DeviceMemory::Auto);
}

ComposedCommunicator::~ComposedCommunicator() {
  if (mpi_is_running()) finalize();
}

void ComposedCommunicator::finalize() {
  intra_nccl_.reset();
  intra_.reset();
  inter_.reset();
  if (intra_comm_ != MPI_COMM_NULL) MPI_Comm_free(&intra_comm_);
  if (inter_comm_ != MPI_COMM_NULL) MPI_Comm_free(&inter_comm_);
  Communicator::finalize();
}

const CollectiveBackend& ComposedCommunicator::intra_for(const Tensor& buf) const {
  const bool gpu_only = algorithm_ == Algorithm::PureNccl || algorithm_ == Algorithm::NonCudaAware;
  if (buf.device().is_cpu()) {
    if (gpu_only)
      throw Error(str(name(), ": this communicator averages GPU gradients, but they are in host memory (",
                      buf.device().str(), "); move the model to the GPU (model.to_gpu(comm->intra_rank())) or use ",
                      "flat or hierarchical for a CPU model"));
    return *intra_;
  }
  if (!intra_nccl_ || nccl_device_ != buf.device().index) {
    intra_nccl_ = nccl::backend(intra_comm_, buf.device().index, name().c_str());
    nccl_device_ = buf.device().index;
  }
  return *intra_nccl_;
}

void ComposedCommunicator::reduce(Tensor& buf) const {
  const CollectiveBackend& intra = intra_for(buf);
  switch (algorithm_) {
    case Algorithm::Hierarchical:
    case Algorithm::NonCudaAware:
      intra.reduce(buf, 0);
      if (inter_) inter_->allreduce(buf);
      intra.bcast(buf, 0);
      return;
    case Algorithm::TwoDimensional: {
      const std::vector<int64_t> shares = even_shares(buf.numel(), intra.size());
      intra.reduce_scatter(buf, shares);
      int64_t at = 0;
      for (int i = 0; i < intra.rank(); ++i) at += shares[size_t(i)];
      Tensor mine = buf.narrow(0, at, shares[size_t(intra.rank())]);
      inter_->allreduce(mine);  // the same shard of every host (equal hosts: equal shares)
      intra.allgather(buf, shares);
      return;
    }
    case Algorithm::SingleNode:
    case Algorithm::PureNccl: intra.allreduce(buf); return;
  }
}

std::unique_ptr<PendingSum> ComposedCommunicator::start_sum(Tensor& buf) const {
  comm();  // throws after finalize()
  // One stage (and on a GPU): the backend can queue it and let backward go on meanwhile.
  if (algorithm_ == Algorithm::PureNccl || algorithm_ == Algorithm::SingleNode) return intra_for(buf).start_allreduce(buf);
  reduce(buf);
  return finished_sum();
}

void ComposedCommunicator::mean_grads(const GradList& grads) const {
  comm();  // throws after finalize()
  std::vector<Tensor> gs;
  for (const auto& [name, p] : grads) gs.push_back(p.grad());
  packing::reduce_packed(gs, buffers_, 1.0 / double(size()), [&](Tensor& packed) { reduce(packed); },
                         options().allreduce_grad_dtype);
}

}  // namespace chainermn
