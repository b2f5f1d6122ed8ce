/// @file
/// MultiNodeBatchNormalization, as chainermn.links.MultiNodeBatchNormalization: batch
/// normalization whose statistics are those of the whole batch spread over the ranks of a
/// communicator. It is chainer::links::BatchNormalization with the communicator's allreduce as
/// the sum over processes: forward sums [sum x, sum x^2, count] per channel (one allreduce),
/// backward sums [sum gy, sum gy x_hat] (one more), so each rank's output and input gradient are
/// what one process with the whole batch would compute for its rows, and local batches may
/// differ in size. The gamma and beta gradients stay each rank's own sums: the multi-node
/// optimizer's averaging makes them the gradient of the mean of the ranks' losses (see
/// nn/functions/batch_normalization.h). avg_mean and avg_var follow the whole batch, identical
/// on every rank. At test time (config train off) no communication happens.
///
/// forward in training is collective: every rank of the communicator calls it (and backward) in
/// the same order. GPU inputs work: the sums are staged through the host by allreduce and moved
/// back to the input's device.
#pragma once
#include <memory>

#include "distributed/communicators/communicator.h"
#include "nn/links/batch_normalization.h"

namespace chainermn::links {

/// Batch normalization with the statistics of the whole batch spread over a communicator's ranks.
class MultiNodeBatchNormalization : public chainer::links::BatchNormalization {
 public:
  /// SIZE channels; the batch is spread over the ranks of COMM.
  MultiNodeBatchNormalization(int64_t size, std::shared_ptr<Communicator> comm,
                              chainer::links::BatchNormalizationLinkOptions options = {});

  const std::shared_ptr<Communicator>& comm() const { return comm_; }  ///< The communicator the sums run on.

 private:
  std::shared_ptr<Communicator> comm_;
};

/// COMM's allreduce as a batch normalization's sum over processes, the result moved back to the
/// input's device: what MultiNodeBatchNormalization and create_mnbn_model give the link. WHO
/// names the caller in the error for a null COMM.
chainer::functions::SumOverProcesses allreduce_sum(std::shared_ptr<Communicator> comm, const char* who);

}  // namespace chainermn::links
