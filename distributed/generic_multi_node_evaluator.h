// GenericMultiNodeEvaluator, as chainermn.extensions.GenericMultiNodeEvaluator: for
// evaluations that are not a plain mean (precision over a whole set, a median, ...). Each rank
// runs calc_local() on every batch of its own non-repeating iterator (backprop off, train
// false); the results of all ranks are gathered on ROOT, where aggregate() turns them into one
// Observation, which every rank then gets back (ChainerMN returns it on the root only).
//
// The local loops are independent, so the ranks may have different numbers of batches (even
// none) without deadlock: only the gather of the results and the broadcast of the aggregate are
// collective. aggregate() receives the results in rank order (all of rank 0's batches, then rank
// 1's, ...), whereas ChainerMN interleaves them in rounds of 8 batches. An exception on one rank
// (in calc_local or the iterator) is carried through the exchange, so every rank throws.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "datasets/iterator.h"
#include "distributed/communicator.h"
#include "nn/link.h"
#include "nn/reporter.h"
#include "training/extension.h"

namespace chainermn {

class GenericMultiNodeEvaluator : public chainer::training::Extension {
 public:
  GenericMultiNodeEvaluator(std::shared_ptr<Communicator> comm, std::shared_ptr<chainer::iterators::Iterator> iterator,
                            std::shared_ptr<chainer::Link> target, int root = 0, std::string name = "validation");

  // Reports evaluate().
  void operator()(chainer::training::Trainer& trainer) override;
  std::string default_name() const override { return name_; }
  chainer::training::IntervalTrigger default_trigger() const override {
    return chainer::training::IntervalTrigger(1, chainer::training::Unit::Epoch);
  }
  int priority() const override { return chainer::training::PRIORITY_WRITER; }

  // Collective: resets the iterator, runs calc_local on every local batch, aggregates on the root.
  chainer::Observation evaluate();
  // Batches this rank evaluated in the last evaluate().
  int64_t last_local_batches() const { return local_batches_; }

  chainer::iterators::Iterator& iterator() { return *iterator_; }
  chainer::Link& target() { return *target_; }
  Communicator& communicator() { return *comm_; }
  int root() const { return root_; }
  const std::string& name() const { return name_; }

 protected:
  // One batch's result. The default runs target.forward_args(arrays) and returns what it
  // reported, under "<name>/main/..." ("validation/main/loss"), as Evaluator does.
  virtual chainer::Observation calc_local(const std::vector<chainer::Variable>& arrays);
  // Called on the root only, once, with the results of every batch of every rank. The default
  // is the mean of each key over the results that have it.
  virtual chainer::Observation aggregate(const std::vector<chainer::Observation>& results);

 private:
  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<chainer::iterators::Iterator> iterator_;
  std::shared_ptr<chainer::Link> target_;
  int root_;
  std::string name_;
  int64_t local_batches_ = 0;
};

}  // namespace chainermn
