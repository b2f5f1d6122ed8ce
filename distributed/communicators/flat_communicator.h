/// @file
/// The "flat" communicator, as ChainerMN's FlatCommunicator: packs every gradient into one
/// contiguous buffer (one per dtype), averages it with a single MPI_Allreduce and unpacks,
/// scaling by 1/size on the way out. One latency for the whole model instead of one per
/// parameter. The buffer is kept and reused across calls (it grows when a model needs more).
#pragma once
#include <utility>
#include <map>

#include "distributed/communicators/communicator.h"

namespace chainermn {

/// The "flat" communicator: averages every gradient in one packed buffer per dtype.
class FlatCommunicator : public Communicator {
 public:
  /// A flat communicator over a duplicate of COMM.
  explicit FlatCommunicator(MPI_Comm comm = MPI_COMM_WORLD, CommunicatorOptions options = {})
      : Communicator("flat", comm, std::move(options)) {}

  /// The packing buffer for DTYPE (undefined before the first call that needed it).
  Tensor buffer(chainer::DType dtype) const;

 protected:
  void mean_grads(const GradList& grads) const override;

 private:
  mutable std::map<chainer::DType, Tensor> buffers_;
};

}  // namespace chainermn
