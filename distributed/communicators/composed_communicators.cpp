#include "distributed/communicators/composed_communicators.h"

#include <algorithm>

#include "distributed/mpi_check.h"
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
  CHAINERMN_MPI_CHECK(MPI_Comm_split(c, inter_rank(), rank(), &intra_comm_));
  const int inter_color = algorithm == Algorithm::Hierarchical    ? (intra_rank() == 0 ? 0 : MPI_UNDEFINED)
                          : algorithm == Algorithm::TwoDimensional ? intra_rank()
                                                                   : MPI_UNDEFINED;
  CHAINERMN_MPI_CHECK(MPI_Comm_split(c, inter_color, rank(), &inter_comm_));
  intra_ = mpi_backend(intra_comm_);
  if (inter_comm_ != MPI_COMM_NULL) inter_ = mpi_backend(inter_comm_);
}

ComposedCommunicator::~ComposedCommunicator() {
  if (mpi_is_running()) finalize();
}

void ComposedCommunicator::finalize() {
  intra_.reset();
  inter_.reset();
  if (intra_comm_ != MPI_COMM_NULL) MPI_Comm_free(&intra_comm_);
  if (inter_comm_ != MPI_COMM_NULL) MPI_Comm_free(&inter_comm_);
  Communicator::finalize();
}

void ComposedCommunicator::reduce(Tensor& buf) const {
  switch (algorithm_) {
    case Algorithm::Hierarchical:
      intra_->reduce(buf, 0);
      if (inter_) inter_->allreduce(buf);
      intra_->bcast(buf, 0);
      return;
    case Algorithm::TwoDimensional: {
      const std::vector<int64_t> shares = even_shares(buf.numel(), intra_->size());
      intra_->reduce_scatter(buf, shares);
      int64_t at = 0;
      for (int i = 0; i < intra_->rank(); ++i) at += shares[size_t(i)];
      Tensor mine = buf.narrow(0, at, shares[size_t(intra_->rank())]);
      inter_->allreduce(mine);  // the same shard of every host (equal hosts: equal shares)
      intra_->allgather(buf, shares);
      return;
    }
    case Algorithm::SingleNode: intra_->allreduce(buf); return;
  }
}

void ComposedCommunicator::mean_grads(const GradList& grads) const {
  comm();  // throws after finalize()
  std::vector<Tensor> gs;
  for (const auto& [name, p] : grads) gs.push_back(p.grad());
  packing::reduce_packed(gs, buffers_, 1.0 / double(size()), [&](Tensor& packed) { reduce(packed); });
}

}  // namespace chainermn
