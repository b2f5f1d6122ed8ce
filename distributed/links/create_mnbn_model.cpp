#include "distributed/links/create_mnbn_model.h"

#include "distributed/links/multi_node_batch_normalization.h"
#include "nn/links/batch_normalization.h"

namespace chainermn::links {

int convert_batch_normalizations(chainer::Link& link, const std::shared_ptr<Communicator>& comm) {
  // Checked before any link changes, so a refusal leaves the model as it was.
  const chainer::functions::SumOverProcesses sum = allreduce_sum(comm, "create_mnbn_model");
  int converted = 0;
  // namedlinks() walks chains and Sequentials alike; a link registered under two names appears
  // twice, and the second visit finds it converted.
  for (const auto& [name, child] : link.namedlinks()) {
    auto* bn = dynamic_cast<chainer::links::BatchNormalization*>(child);
    if (!bn || bn->sums_over_processes()) continue;
    bn->set_sum_over_processes(sum);
    ++converted;
  }
  return converted;
}

}  // namespace chainermn::links
