#include "distributed/communicators/naive_communicator.h"

#include "core/ops/ops.h"
#include "distributed/communicators/packing.h"

namespace chainermn {

void NaiveCommunicator::mean_grads(const GradList& grads) const {
  const MPI_Comm c = comm();
  const double scale = 1.0 / double(size());
  const std::optional<chainer::DType> wire = options().allreduce_grad_dtype;
  for (const auto& [name, p] : grads) {
    Tensor g = p.grad();  // a handle on the same storage: the reduction happens in place
    if (wire && *wire != g.dtype()) {
      // Another dtype on the wire: a scaled copy of this gradient in it, summed, cast back
      // (packing.h: scaled before the cast, so the sum cannot overflow where the mean fits).
      Tensor cast = Tensor::empty({g.numel()}, *wire, g.device());
      packing::pack_one(g, cast, 0, scale);
      mpi_allreduce_sum(cast, c);
      packing::unpack(cast, {g});
      continue;
    }
    mpi_allreduce_sum(g, c);
    chainer::ops::scale_(g, scale);
  }
}

}  // namespace chainermn
