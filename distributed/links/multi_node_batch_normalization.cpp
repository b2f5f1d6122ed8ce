#include "distributed/links/multi_node_batch_normalization.h"

namespace chainermn::links {

chainer::functions::SumOverProcesses allreduce_sum(std::shared_ptr<Communicator> comm, const char* who) {
  if (!comm) throw chainer::Error(chainer::str(who, ": the communicator is null"));
  return [comm](const Tensor& local) { return comm->allreduce(local).to(local.device()); };
}

MultiNodeBatchNormalization::MultiNodeBatchNormalization(int64_t size, std::shared_ptr<Communicator> comm,
                                                         chainer::links::BatchNormalizationLinkOptions options)
    : BatchNormalization(chainer::Shape{size}, options, allreduce_sum(comm, "MultiNodeBatchNormalization")),
      comm_(std::move(comm)) {}

}  // namespace chainermn::links
