/// @file
/// GenericMultiNodeEvaluator, as chainermn.extensions.GenericMultiNodeEvaluator: for
/// evaluations that are not a mean of per-batch numbers (precision or recall over the whole set,
/// a median, AUC). Each rank runs calc_local() on every batch of its own non-repeating iterator
/// (backprop off, train false) and keeps what it returns: a BatchResult of numbers and of
/// per-example arrays (predictions, labels, losses), where ChainerMN's calc_local returns any
/// picklable object. The results of all ranks are gathered on ROOT, where aggregate() turns them
/// into one Observation, which every rank then gets back (ChainerMN returns it on the root only).
/// For example, precision over the whole set:
///
/// ```
///   BatchResult calc_local(const std::vector<chainer::Variable>& arrays) override {  // (x, t)
///     const chainer::Tensor scores = target().forward(arrays[0]).data();  // target: the predictor
///     return {{}, {{"pred", chainer::ops::argmax(scores, 1)}, {"label", arrays[1].data()}}};
///   }
///   chainer::Observation aggregate(const std::vector<BatchResult>& results) override {
///     const auto pred = concat_arrays(results, "pred").to_vector<int32_t>();
///     const auto label = concat_arrays(results, "label").to_vector<int32_t>();
///     ...  // count true and false positives over every example of every rank
///   }
/// ```
///
/// The local loops are independent, so the ranks may have different numbers of batches (even
/// none) without deadlock: only the gather of the results and the broadcast of the aggregate are
/// collective. aggregate() receives the results in rank order (all of rank 0's batches, then rank
/// 1's, ...), whereas ChainerMN interleaves them in rounds of 8 batches. Each result is copied
/// (encoded) as soon as calc_local returns it, so its arrays may be views of buffers that later
/// batches reuse; all of them travel to the root, so keep them small (per example, not per
/// activation). An exception on one rank (in calc_local, the iterator, or aggregate on the root)
/// is carried through the exchange, so every rank throws.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "datasets/iterators/iterator.h"
#include "distributed/communicators/communicator.h"
#include "nn/link.h"
#include "nn/reporter.h"
#include "training/extension.h"

namespace chainermn {

/// An evaluator whose result is computed on the root from every rank's per-batch results, as
/// chainermn.extensions.GenericMultiNodeEvaluator; subclass it and override calc_local and aggregate.
class GenericMultiNodeEvaluator : public chainer::training::Extension {
 public:
  /// What calc_local() returns for one batch: named numbers (what the default aggregate
  /// averages), and named arrays, typically one row per example (predicted class, label, loss).
  struct BatchResult {
    chainer::Observation values;                    ///< Named numbers.
    std::map<std::string, chainer::Tensor> arrays;  ///< Named arrays, typically one row per example.
  };

  /// Evaluates TARGET on ITERATOR's batches on every rank of COMM, aggregating on ROOT; NAME is
  /// the extension's name and prefixes the default calc_local's keys.
  GenericMultiNodeEvaluator(std::shared_ptr<Communicator> comm, std::shared_ptr<chainer::iterators::Iterator> iterator,
                            std::shared_ptr<chainer::Link> target, int root = 0, std::string name = "validation");

  /// Reports evaluate().
  void operator()(chainer::training::Trainer& trainer) override;
  /// The name given at construction ("validation" by default).
  std::string default_name() const override { return name_; }
  /// Once per epoch, as Chainer's Evaluator.
  chainer::training::Trigger default_trigger() const override {
    return chainer::training::IntervalTrigger(1, chainer::training::Unit::Epoch);
  }
  /// PRIORITY_WRITER, as Chainer's Evaluator.
  int priority() const override { return chainer::training::PRIORITY_WRITER; }

  /// Collective: resets the iterator, runs calc_local on every local batch, aggregates on the root.
  chainer::Observation evaluate();
  /// Batches this rank evaluated in the last evaluate().
  int64_t last_local_batches() const { return local_batches_; }

  chainer::iterators::Iterator& iterator() { return *iterator_; }  ///< This rank's iterator.
  chainer::Link& target() { return *target_; }  ///< The link evaluated.
  Communicator& communicator() { return *comm_; }  ///< The communicator the results travel on.
  int root() const { return root_; }  ///< The rank that aggregates.
  const std::string& name() const { return name_; }  ///< The name given at construction.

 protected:
  /// One batch's result. The default runs `target.forward_args(arrays)` and returns what it
  /// reported in values, under `"<name>/main/..."` ("validation/main/loss"), as Evaluator does,
  /// and no arrays.
  virtual BatchResult calc_local(const std::vector<chainer::Variable>& arrays);
  /// Called on the root only, once, with the results of every batch of every rank, in rank order.
  /// The default is the mean of each key of values over the results that have it; it ignores
  /// arrays.
  virtual chainer::Observation aggregate(const std::vector<BatchResult>& results);

  /// The arrays under KEY of the results that have one, concatenated along the first axis in
  /// order (chainer::ops::concat); an undefined Tensor when none has.
  static chainer::Tensor concat_arrays(const std::vector<BatchResult>& results, const std::string& key);

 private:
  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<chainer::iterators::Iterator> iterator_;
  std::shared_ptr<chainer::Link> target_;
  int root_;
  std::string name_;
  int64_t local_batches_ = 0;
};

}  // namespace chainermn
