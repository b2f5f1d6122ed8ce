#include "distributed/communicators/naive_communicator.h"

#include "core/ops.h"
#include "distributed/chunked_transfer.h"

namespace chainermn {

void NaiveCommunicator::mean_grads(const GradList& grads) const {
  const MPI_Comm c = comm();
  const double scale = 1.0 / double(size());
  for (const auto& [name, p] : grads) {
    Tensor g = p.grad();  // a handle on the same storage: the reduction happens in place
    detail::allreduce_sum_chunked(g.raw_data(), g.numel(), g.dtype(), c);
    chainer::ops::scale_(g, scale);
  }
}

}  // namespace chainermn
