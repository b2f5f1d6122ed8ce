/// @file
/// The multi-node evaluator, as chainermn.create_multi_node_evaluator: wraps an ordinary
/// Evaluator; each rank evaluates its own (scattered) data, and evaluate() returns, on every
/// rank, the mean over all workers.
///
/// Unlike ChainerMN, the mean is WEIGHTED by the number of examples each rank evaluated
/// (Evaluator::last_example_count()): for every key, sum_r n_r * mean_r / sum_r n_r over the ranks
/// that reported the key. ChainerMN averages the ranks' means without weights
/// (allreduce_obj(value) / size), which is wrong when the ranks hold different numbers of
/// examples (scatter_dataset with force_equal_length = false, or hand-made splits), and it
/// deadlocks when the ranks report different keys; here a rank that evaluated nothing simply
/// does not contribute. Within a rank the Evaluator's own convention is kept (its value is the
/// mean of its per-batch reports). The per-rank loops are independent: only the final exchange
/// (one gather to rank 0 and one broadcast) is collective, so every rank must call evaluate()
/// the same number of times, but the ranks may have any numbers of batches.
#pragma once
#include <memory>

#include "distributed/communicators/communicator.h"
#include "training/extensions/evaluator.h"

namespace chainermn {

/// An Evaluator wrapper whose result is the example-weighted mean over every rank.
class MultiNodeEvaluator : public chainer::training::Extension {
 public:
  /// Wraps EVALUATOR, which evaluates this rank's data; the ranks of COMM average the results.
  MultiNodeEvaluator(std::shared_ptr<chainer::training::extensions::Evaluator> evaluator,
                     std::shared_ptr<Communicator> comm);

  /// Reports evaluate() (every rank reports the same global values).
  void operator()(chainer::training::Trainer& trainer) override;
  /// The wrapped evaluator's.
  std::string default_name() const override { return evaluator_->default_name(); }
  /// The wrapped evaluator's.
  chainer::training::Trigger default_trigger() const override { return evaluator_->default_trigger(); }
  int priority() const override { return evaluator_->priority(); }  ///< The wrapped evaluator's.
  /// Initializes the wrapped evaluator.
  void initialize(chainer::training::Trainer& trainer) override { evaluator_->initialize(trainer); }
  void finalize() override { evaluator_->finalize(); }  ///< Finalizes the wrapped evaluator.
  void serialize(chainer::Serializer& s) override { evaluator_->serialize(s); }  ///< Serializes the wrapped evaluator.

  /// Collective: the local evaluation, then the example-weighted mean over all ranks.
  chainer::Observation evaluate();
  /// Examples evaluated by all ranks together in the last evaluate().
  int64_t last_example_count() const { return total_examples_; }

  chainer::training::extensions::Evaluator& evaluator() { return *evaluator_; }  ///< The wrapped evaluator.
  Communicator& communicator() { return *comm_; }  ///< The communicator the results travel on.

 private:
  std::shared_ptr<chainer::training::extensions::Evaluator> evaluator_;
  std::shared_ptr<Communicator> comm_;
  int64_t total_examples_ = 0;
};

/// As chainermn.create_multi_node_evaluator(actual_evaluator, communicator).
std::shared_ptr<MultiNodeEvaluator> create_multi_node_evaluator(
    std::shared_ptr<chainer::training::extensions::Evaluator> evaluator, std::shared_ptr<Communicator> comm);

}  // namespace chainermn
