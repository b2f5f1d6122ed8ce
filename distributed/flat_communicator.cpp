#include "distributed/flat_communicator.h"

#include <vector>

#include "distributed/chunked_transfer.h"
#include "distributed/packing.h"

namespace chainermn {

Tensor FlatCommunicator::buffer(chainer::DType dtype) const {
  auto it = buffers_.find(dtype);
  return it == buffers_.end() ? Tensor() : it->second;
}

void FlatCommunicator::mean_grads(const GradList& grads) const {
  const MPI_Comm c = comm();
  // One buffer per dtype, in dtype order (the same on every rank); parameters in list order.
  std::map<chainer::DType, std::vector<Tensor>> groups;
  for (const auto& [name, p] : grads) groups[p.grad().dtype()].push_back(p.grad());
  for (auto& [dtype, gs] : groups) {
    int64_t total = 0;
    for (const Tensor& g : gs) total += g.numel();
    Tensor& buf = buffers_[dtype];
    if (!buf.defined() || buf.numel() < total) buf = Tensor::empty({total}, dtype);
    packing::pack(gs, buf);
    detail::allreduce_sum_chunked(buf.raw_data(), total, dtype, c);
    packing::unpack(buf, gs, 1.0 / double(size()));
  }
}

}  // namespace chainermn
