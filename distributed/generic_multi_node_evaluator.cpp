#include "distributed/generic_multi_node_evaluator.h"

#include <map>
#include <utility>

#include "core/config.h"
#include "distributed/object_serialization.h"

namespace chainermn {

using chainer::Error;
using chainer::Observation;

GenericMultiNodeEvaluator::GenericMultiNodeEvaluator(std::shared_ptr<Communicator> comm,
                                                     std::shared_ptr<chainer::iterators::Iterator> iterator,
                                                     std::shared_ptr<chainer::Link> target, int root, std::string name)
    : comm_(std::move(comm)), iterator_(std::move(iterator)), target_(std::move(target)), root_(root),
      name_(std::move(name)) {
  if (!comm_) throw Error("GenericMultiNodeEvaluator: the communicator is null");
  if (!iterator_) throw Error("GenericMultiNodeEvaluator: the iterator is null");
  if (!target_) throw Error("GenericMultiNodeEvaluator: the target link is null");
  if (root_ < 0 || root_ >= comm_->size())
    throw Error(chainer::str("GenericMultiNodeEvaluator: root ", root_, " is not a rank of a communicator of size ",
                             comm_->size()));
}

void GenericMultiNodeEvaluator::operator()(chainer::training::Trainer&) { chainer::report(evaluate()); }

Observation GenericMultiNodeEvaluator::calc_local(const std::vector<chainer::Variable>& arrays) {
  chainer::Reporter reporter;
  const std::string prefix = name_ + "/main";
  reporter.add_observer(prefix, target_.get());
  reporter.add_observers(prefix, target_->namedlinks(true));
  Observation observation;
  {
    chainer::Reporter::Scope scope(reporter, observation);
    target_->forward_args(arrays);
  }
  return observation;
}

Observation GenericMultiNodeEvaluator::aggregate(const std::vector<Observation>& results) {
  chainer::DictSummary summary;
  for (const Observation& r : results) summary.add(r);
  return summary.compute_mean();
}

Observation GenericMultiNodeEvaluator::evaluate() {
  // (an error message, or empty; the results), to the root; (error; aggregate) back.
  using Local = std::pair<std::string, std::vector<Observation>>;
  using Result = std::pair<std::string, Observation>;
  Local local;
  local_batches_ = 0;
  try {
    iterator_->reset();
    chainer::NoBackpropMode no_backprop;
    chainer::config::TrainScope eval_mode(false);
    while (iterator_->has_next()) {
      std::vector<chainer::Tensor> arrays = iterator_->next_batch();
      std::vector<chainer::Variable> inputs;
      inputs.reserve(arrays.size());
      for (chainer::Tensor& a : arrays) inputs.emplace_back(std::move(a));
      local.second.push_back(calc_local(inputs));
      ++local_batches_;
      if (iterator_->is_new_epoch() && iterator_->has_next())
        throw Error(chainer::str("GenericMultiNodeEvaluator '", name_,
                                 "': the iterator repeats, so the evaluation would never end; give it an iterator "
                                 "with repeat=false"));
    }
  } catch (const std::exception& e) {
    local.first = e.what();
    local.second.clear();
  }
  const std::vector<std::string> all = comm_->gather_bytes(serialize_object(local), root_);
  std::string result_bytes;
  if (comm_->rank() == root_) {
    Result result;
    std::vector<Observation> results;
    for (size_t r = 0; r < all.size(); ++r) {
      Local part = deserialize_object<Local>(all[r]);
      if (!part.first.empty() && result.first.empty()) result.first = chainer::str("rank ", r, ": ", part.first);
      for (Observation& o : part.second) results.push_back(std::move(o));
    }
    if (result.first.empty()) {
      try {
        result.second = aggregate(results);
      } catch (const std::exception& e) {
        result.first = chainer::str("aggregate on rank ", root_, ": ", e.what());
      }
    }
    result_bytes = serialize_object(result);
  }
  const Result result = deserialize_object<Result>(comm_->bcast_bytes(result_bytes, root_));
  if (!local.first.empty()) throw Error(local.first);
  if (!result.first.empty()) throw Error(chainer::str("GenericMultiNodeEvaluator: the evaluation failed on ", result.first));
  return result.second;
}

}  // namespace chainermn
