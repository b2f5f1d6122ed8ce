#include "distributed/flat_communicator.h"

#include <cstring>
#include <vector>

#include "distributed/chunked_transfer.h"

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
    char* base = static_cast<char*>(buf.raw_data());
    size_t off = 0;
    for (const Tensor& g : gs) {
      std::memcpy(base + off, g.raw_data(), g.nbytes());
      off += g.nbytes();
    }
    detail::allreduce_sum_chunked(base, total, dtype, c);
    const double scale = 1.0 / double(size());
    CHAINER_DISPATCH_FLOATING(dtype, "multi_node_mean_grad", [&] {
      const scalar_t s = scalar_t(scale);
      const scalar_t* src = reinterpret_cast<const scalar_t*>(base);
      for (Tensor g : gs) {
        scalar_t* dst = g.data<scalar_t>();
        for (int64_t i = 0, n = g.numel(); i < n; ++i) dst[i] = src[i] * s;
        src += g.numel();
      }
    });
  }
}

}  // namespace chainermn
