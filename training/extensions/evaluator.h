/// @file
/// Evaluator, as chainer.training.extensions.Evaluator: runs the target over a whole
/// (non-repeating) iterator with backprop off and config.train false, and reports the mean of
/// the per-batch reports under `"<name>/"` ("validation/main/loss"). Batches go to DEVICE (unset:
/// the target's device); on a GPU the per-batch values are summed there and read once. A repeating iterator, which
/// would never end, raises an error at its first epoch end. evaluate() is virtual, and
/// the last run's example count is kept, so a multi-node evaluator can weight ranks by it.
/// With a converter (Chainer's `converter=`), each batch is taken as its examples (next()) and
/// converted on the device into a dataset::ConvertedBatch, which the eval function reads: how
/// ragged data (sequences of different lengths) is evaluated.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "datasets/converter.h"
#include "datasets/iterators/iterator.h"
#include "nn/link.h"
#include "nn/reporter.h"
#include "training/extension.h"

namespace chainer::training::extensions {

/// Reports the mean of the target's reports over a whole validation iterator.
class Evaluator : public Extension {
 public:
  /// Evaluates one batch's arrays, reporting what it measures; unset, the target's forward_args does.
  using EvalFunction = std::function<void(const std::vector<Variable>& arrays)>;
  /// Evaluates TARGET over ITERATOR, reporting under NAME, with batches on DEVICE (unset: the target's).
  Evaluator(std::shared_ptr<iterators::Iterator> iterator, std::shared_ptr<Link> target, EvalFunction eval_func = {},
            std::string name = "validation", std::optional<Device> device = std::nullopt);
  /// Evaluates a converter's output (the converter path).
  using ConvertedEvalFunction = std::function<void(const dataset::ConvertedBatch& batch)>;
  /// Evaluates TARGET over ITERATOR's examples converted by CONVERTER (called with the examples and
  /// the device), reporting what EVAL_FUNC reports; a null EVAL_FUNC calls the target's
  /// forward_args with the result's fields, which must then all be tensors.
  Evaluator(std::shared_ptr<iterators::Iterator> iterator, std::shared_ptr<Link> target, dataset::Converter converter,
            ConvertedEvalFunction eval_func, std::string name = "validation",
            std::optional<Device> device = std::nullopt);

  void operator()(Trainer& trainer) override;  ///< Reports evaluate()'s means into the trainer's observation.
  std::string default_name() const override { return name_; }  ///< name(), "validation" by default.
  Trigger default_trigger() const override { return IntervalTrigger(1, Unit::Epoch); }  ///< Every epoch.
  int priority() const override { return PRIORITY_WRITER; }  ///< PRIORITY_WRITER: before the readers.

  /// Evaluates the whole iterator; keys are prefixed with `"<name>/"`.
  virtual Observation evaluate();
  int64_t last_example_count() const { return example_count_; }  ///< Examples the last evaluate() saw.
  iterators::Iterator& iterator() { return *iterator_; }  ///< The iterator evaluated over.
  Link& target() { return *target_; }  ///< The link evaluated.
  const std::string& name() const { return name_; }  ///< The prefix of the reported keys.
  /// The converter given at construction; null on the default path (stacked arrays).
  const dataset::Converter& converter() const { return converter_; }

 private:
  std::shared_ptr<iterators::Iterator> iterator_;
  std::shared_ptr<Link> target_;
  EvalFunction eval_func_;
  dataset::Converter converter_;
  ConvertedEvalFunction converted_eval_func_;
  std::string name_;
  std::optional<Device> device_;
  int64_t example_count_ = 0;
};

}  // namespace chainer::training::extensions
