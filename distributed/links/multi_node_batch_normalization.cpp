#include "distributed/links/multi_node_batch_normalization.h"

namespace chainermn::links {

namespace {
// COMM's allreduce as a sum over processes: the result comes back to the input's device.
chainer::functions::SumOverProcesses allreduce_of(const std::shared_ptr<Communicator>& comm) {
  if (!comm) throw chainer::Error("MultiNodeBatchNormalization: the communicator is null");
  return [comm](const Tensor& local) { return comm->allreduce(local).to(local.device()); };
}
}  // namespace

MultiNodeBatchNormalization::MultiNodeBatchNormalization(int64_t size, std::shared_ptr<Communicator> comm,
                                                         chainer::links::BatchNormalizationLinkOptions options)
    : BatchNormalization(chainer::Shape{size}, options, allreduce_of(comm)), comm_(std::move(comm)) {}

}  // namespace chainermn::links
