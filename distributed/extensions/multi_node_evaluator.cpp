#include "distributed/extensions/multi_node_evaluator.h"

#include <utility>
#include <vector>

#include "distributed/runtime/object_serialization.h"
#include "nn/reporter.h"

namespace chainermn {

using chainer::Error;
using chainer::Observation;

MultiNodeEvaluator::MultiNodeEvaluator(std::shared_ptr<chainer::training::extensions::Evaluator> evaluator,
                                       std::shared_ptr<Communicator> comm)
    : evaluator_(std::move(evaluator)), comm_(std::move(comm)) {
  if (!evaluator_) throw Error("create_multi_node_evaluator: the evaluator is null");
  if (!comm_) throw Error("create_multi_node_evaluator: the communicator is null");
}

void MultiNodeEvaluator::operator()(chainer::training::Trainer&) { chainer::report(evaluate()); }

Observation MultiNodeEvaluator::evaluate() {
  // (an error message, or empty; (examples, means)), sent to rank 0 and back.
  using Message = std::pair<std::string, std::pair<int64_t, Observation>>;
  Message local;
  try {
    local.second.second = evaluator_->evaluate();
    local.second.first = evaluator_->last_example_count();
  } catch (const std::exception& e) {
    // Still take part in the exchange, so the other ranks are not left waiting; every rank
    // then throws.
    local.first = e.what();
  }
  const std::vector<std::string> all = comm_->gather_bytes(serialize_object(local), 0);
  std::string result_bytes;
  if (comm_->rank() == 0) {
    struct Acc {
      double weighted = 0, weight = 0, plain = 0;
      int64_t ranks = 0;
    };
    std::map<std::string, Acc> acc;
    Message out;
    for (size_t r = 0; r < all.size(); ++r) {
      const Message part = deserialize_object<Message>(all[r]);
      if (!part.first.empty()) {
        if (out.first.empty()) out.first = chainer::str("rank ", r, ": ", part.first);
        continue;
      }
      const auto& [count, means] = part.second;
      out.second.first += count;
      for (const auto& [key, value] : means) {
        Acc& a = acc[key];
        a.weighted += double(count) * value;
        a.weight += double(count);
        a.plain += value;
        ++a.ranks;
      }
    }
    // A key only ranks without examples reported (not expected) falls back to the plain mean.
    for (const auto& [key, a] : acc)
      out.second.second[key] = a.weight > 0 ? a.weighted / a.weight : a.plain / double(a.ranks);
    result_bytes = serialize_object(out);
  }
  const Message out = deserialize_object<Message>(comm_->bcast_bytes(result_bytes, 0));
  if (!local.first.empty()) throw Error(local.first);
  if (!out.first.empty()) throw Error(chainer::str("MultiNodeEvaluator: the evaluation failed on ", out.first));
  total_examples_ = out.second.first;
  return out.second.second;
}

std::shared_ptr<MultiNodeEvaluator> create_multi_node_evaluator(
    std::shared_ptr<chainer::training::extensions::Evaluator> evaluator, std::shared_ptr<Communicator> comm) {
  return std::make_shared<MultiNodeEvaluator>(std::move(evaluator), std::move(comm));
}

}  // namespace chainermn
