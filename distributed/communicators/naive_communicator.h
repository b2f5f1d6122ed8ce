/// @file
/// The "naive" communicator, as ChainerMN's NaiveCommunicator: averages gradients with one
/// MPI_Allreduce per parameter, in place on each gradient, then scales by 1/size. Simplest, and
/// best when parameters are few and large; many small parameters pay one latency each.
#pragma once
#include <utility>
#include "distributed/communicators/communicator.h"

namespace chainermn {

/// The "naive" communicator: averages gradients with one MPI_Allreduce per parameter.
class NaiveCommunicator : public Communicator {
 public:
  /// A naive communicator over a duplicate of COMM.
  explicit NaiveCommunicator(MPI_Comm comm = MPI_COMM_WORLD, CommunicatorOptions options = {})
      : Communicator("naive", comm, std::move(options)) {}

 protected:
  void mean_grads(const GradList& grads) const override;
};

}  // namespace chainermn
