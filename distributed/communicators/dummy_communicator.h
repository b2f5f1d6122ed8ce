/// @file
/// The "dummy" communicator, as ChainerMN's DummyCommunicator: multi_node_mean_grad packs the
/// gradients into one buffer per dtype and unpacks them again, exactly as "flat" does, but sums
/// nothing, so each rank keeps its own gradients. It exists to time everything but the
/// reduction (compare a run with "flat"); training with it is not data-parallel. Every other
/// collective (bcast_data, allreduce, the object collectives) communicates as usual.
#pragma once
#include <map>
#include <memory>
#include <utility>

#include "distributed/communicators/communicator.h"

namespace chainermn {

/// The "dummy" communicator: multi_node_mean_grad packs and unpacks, and averages nothing.
class DummyCommunicator : public Communicator {
 public:
  /// A dummy communicator over a duplicate of COMM.
  explicit DummyCommunicator(MPI_Comm comm = MPI_COMM_WORLD, CommunicatorOptions options = {})
      : Communicator("dummy", comm, std::move(options)) {}

  /// False: the gradients stay each rank's own.
  bool averages_gradients() const override { return false; }
  /// Sums nothing: BUF keeps this rank's values, and the handle is already finished.
  std::unique_ptr<PendingSum> start_sum(Tensor& buf) const override;

 protected:
  void mean_grads(const GradList& grads) const override;

 private:
  mutable std::map<chainer::DType, Tensor> buffers_;
};

}  // namespace chainermn
