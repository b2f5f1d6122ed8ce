#include "training/extensions/evaluator.h"

#include "core/util/config.h"

namespace chainer::training::extensions {

Evaluator::Evaluator(std::shared_ptr<iterators::Iterator> iterator, std::shared_ptr<Link> target, EvalFunction eval_func,
                     std::string name, std::optional<Device> device)
    : iterator_(std::move(iterator)), target_(std::move(target)), eval_func_(std::move(eval_func)), name_(std::move(name)),
      device_(device) {
  if (!iterator_) throw Error("Evaluator: the iterator is null");
  if (!target_) throw Error("Evaluator: the target link is null");
}

Evaluator::Evaluator(std::shared_ptr<iterators::Iterator> iterator, std::shared_ptr<Link> target,
                     dataset::Converter converter, ConvertedEvalFunction eval_func, std::string name,
                     std::optional<Device> device)
    : Evaluator(std::move(iterator), std::move(target), EvalFunction{}, std::move(name), device) {
  if (!converter) throw Error("Evaluator: the converter is null (leave it out for the default concat_examples)");
  converter_ = std::move(converter);
  converted_eval_func_ = std::move(eval_func);
}

void Evaluator::operator()(Trainer&) { report(evaluate()); }

Observation Evaluator::evaluate() {
  Reporter reporter;
  const std::string prefix = name_ + "/main";
  reporter.add_observer(prefix, target_.get());
  reporter.add_observers(prefix, target_->namedlinks(true));
  DictSummary summary;
  iterator_->reset();
  example_count_ = 0;
  NoBackpropMode no_backprop;
  config::TrainScope eval_mode(false);
  const Device device = device_.value_or(target_->device());
  while (iterator_->has_next()) {
    Observation observation;
    if (converter_) {
      const std::vector<iterators::Example> examples = iterator_->next();
      example_count_ += int64_t(examples.size());
      const dataset::ConvertedBatch in = converter_(examples, device);
      Reporter::Scope scope(reporter, observation);
      if (converted_eval_func_) {
        converted_eval_func_(in);
      } else {
        std::vector<Variable> inputs;
        for (const Tensor& t : in.tensors(str("Evaluator '", name_, "'"))) inputs.emplace_back(t);
        target_->forward_args(inputs);
      }
    } else {
      std::vector<Tensor> arrays = iterator_->next_batch();
      if (!arrays.empty() && arrays[0].ndim() > 0) example_count_ += arrays[0].size(0);
      std::vector<Variable> inputs;
      for (Tensor& a : arrays) inputs.emplace_back(a.to(device));
      Reporter::Scope scope(reporter, observation);
      if (eval_func_) eval_func_(inputs);
      else target_->forward_args(inputs);
    }
    summary.add(observation);
    // A non-repeating iterator has no batch left once its epoch ends; a repeating one would
    // keep the loop going forever.
    if (iterator_->is_new_epoch() && iterator_->has_next())
      throw Error(str("Evaluator '", name_, "': the iterator repeats (it has batches after the end of epoch ",
                      iterator_->epoch(), "), so the evaluation would never end; give it an iterator with repeat=false"));
  }
  return summary.compute_mean();
}

}  // namespace chainer::training::extensions
