#include "distributed/communicators/flat_communicator.h"

#include <vector>

#include "distributed/communicators/packing.h"

namespace chainermn {

Tensor FlatCommunicator::buffer(chainer::DType dtype) const {
  auto it = buffers_.find(dtype);
  return it == buffers_.end() ? Tensor() : it->second;
}

void FlatCommunicator::mean_grads(const GradList& grads) const {
  const MPI_Comm c = comm();
  std::vector<Tensor> gs;
  for (const auto& [name, p] : grads) gs.push_back(p.grad());
  packing::reduce_packed(
      gs, buffers_, 1.0 / double(size()),
      [&](Tensor& packed) { mpi_allreduce_sum(packed, c); },
      options().allreduce_grad_dtype);
}

}  // namespace chainermn
