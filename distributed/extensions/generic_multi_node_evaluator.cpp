#include "distributed/extensions/generic_multi_node_evaluator.h"

#include <map>
#include <utility>

#include "core/util/config.h"
#include "core/ops/ops.h"
#include "distributed/runtime/object_serialization.h"

namespace chainermn {

using chainer::Error;
using chainer::Observation;
using BatchResult = GenericMultiNodeEvaluator::BatchResult;

// A BatchResult on the wire: values, then arrays (only this file encodes one).
template <>
struct Codec<BatchResult> {
  static void write(ByteWriter& w, const BatchResult& b) {
    Codec<Observation>::write(w, b.values);
    Codec<std::map<std::string, chainer::Tensor>>::write(w, b.arrays);
  }
  static BatchResult read(ByteReader& r) {
    BatchResult b;
    b.values = Codec<Observation>::read(r);
    b.arrays = Codec<std::map<std::string, chainer::Tensor>>::read(r);
    return b;
  }
};

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

BatchResult GenericMultiNodeEvaluator::calc_local(const std::vector<chainer::Variable>& arrays) {
  chainer::Reporter reporter;
  const std::string prefix = name_ + "/main";
  reporter.add_observer(prefix, target_.get());
  reporter.add_observers(prefix, target_->namedlinks(true));
  BatchResult result;
  {
    chainer::Reporter::Scope scope(reporter, result.values);
    target_->forward_args(arrays);
  }
  return result;
}

Observation GenericMultiNodeEvaluator::aggregate(const std::vector<BatchResult>& results) {
  chainer::DictSummary summary;
  for (const BatchResult& r : results) summary.add(r.values);
  return summary.compute_mean();
}

chainer::Tensor GenericMultiNodeEvaluator::concat_arrays(const std::vector<BatchResult>& results,
                                                         const std::string& key) {
  std::vector<chainer::Tensor> parts;
  for (const BatchResult& r : results) {
    auto it = r.arrays.find(key);
    if (it != r.arrays.end()) parts.push_back(it->second);
  }
  if (parts.empty()) return {};
  return chainer::ops::concat(parts, 0);
}

Observation GenericMultiNodeEvaluator::evaluate() {
  // (an error message, or empty; the encoded results), to the root; (error; aggregate) back.
  // Each result is encoded as soon as calc_local returns it: its arrays are copied out then, so
  // later batches cannot overwrite them and they do not keep larger buffers alive.
  using Local = std::pair<std::string, std::vector<std::string>>;
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
      local.second.push_back(serialize_object(calc_local(inputs)));
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
    std::vector<BatchResult> results;
    for (size_t r = 0; r < all.size() && result.first.empty(); ++r) {
      try {
        const Local part = deserialize_object<Local>(all[r]);
        if (!part.first.empty()) result.first = chainer::str("rank ", r, ": ", part.first);
        for (const std::string& bytes : part.second) results.push_back(deserialize_object<BatchResult>(bytes));
      } catch (const std::exception& e) {
        result.first = chainer::str("rank ", root_, ", decoding the results of rank ", r, ": ", e.what());
      }
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
