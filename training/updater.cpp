#include "training/updater.h"

#include "core/ops/ops.h"

namespace chainer::training {

namespace {

// N examples in K consecutive parts as numpy.array_split sizes them (the first N % K one longer),
// empty ones left out (an empty batch is one empty part, as without accumulation): (start,
// count) pairs.
std::vector<std::pair<int64_t, int64_t>> split_batch(int64_t n, int k) {
  if (n == 0) return {{0, 0}};
  std::vector<std::pair<int64_t, int64_t>> parts;
  int64_t start = 0;
  for (int i = 0; i < k; ++i) {
    const int64_t count = n / k + (i < n % k ? 1 : 0);
    if (count > 0) parts.emplace_back(start, count);
    start += count;
  }
  return parts;
}

// Each key's mean over the PARTS that reported it, weighted by WEIGHTS (renormalized over those
// parts). Device values stay on the device (a step may be captured into a CUDA graph, whose
// replays then rewrite the mean); a key with host values is averaged on the host.
Observation weighted_mean(const std::vector<Observation>& parts, const std::vector<double>& weights) {
  std::map<std::string, std::vector<std::pair<const ReportValue*, double>>> by_key;
  for (size_t i = 0; i < parts.size(); ++i)
    for (const auto& [key, value] : parts[i]) by_key[key].emplace_back(&value, weights[i]);
  Observation mean;
  for (const auto& [key, values] : by_key) {
    double total = 0;
    bool on_device = true;
    for (const auto& [value, w] : values) {
      total += w;
      on_device = on_device && value->tensor().defined();
    }
    if (on_device) {
      Tensor sum;
      for (const auto& [value, w] : values) {
        Tensor term = ops::mul_scalar(value->tensor(), w / total);
        sum = sum.defined() ? ops::add(sum, term) : std::move(term);
      }
      mean[key] = ReportValue(sum);
    } else {
      double sum = 0;
      for (const auto& [value, w] : values) sum += value->value() * (w / total);
      mean[key] = sum;
    }
  }
  return mean;
}

}  // namespace

StandardUpdater::StandardUpdater(std::shared_ptr<iterators::Iterator> iterator, std::shared_ptr<Optimizer> optimizer,
                                 LossFunction loss_func, UpdaterOptions options)
    : StandardUpdater(std::map<std::string, std::shared_ptr<iterators::Iterator>>{{"main", std::move(iterator)}},
                      std::map<std::string, std::shared_ptr<Optimizer>>{{"main", std::move(optimizer)}},
                      std::move(loss_func), std::move(options)) {}

StandardUpdater::StandardUpdater(std::shared_ptr<iterators::Iterator> iterator, std::shared_ptr<Optimizer> optimizer,
                                 dataset::Converter converter, ConvertedLossFunction loss_func, UpdaterOptions options)
    : StandardUpdater(std::map<std::string, std::shared_ptr<iterators::Iterator>>{{"main", std::move(iterator)}},
                      std::map<std::string, std::shared_ptr<Optimizer>>{{"main", std::move(optimizer)}},
                      std::move(converter), std::move(loss_func), std::move(options)) {}

StandardUpdater::StandardUpdater(std::map<std::string, std::shared_ptr<iterators::Iterator>> iterators,
                                 std::map<std::string, std::shared_ptr<Optimizer>> optimizers,
                                 dataset::Converter converter, ConvertedLossFunction loss_func, UpdaterOptions options)
    : StandardUpdater(std::move(iterators), std::move(optimizers), LossFunction{}, std::move(options)) {
  if (!converter) throw Error("StandardUpdater: the converter is null (leave it out for the default concat_examples)");
  converter_ = std::move(converter);
  converted_loss_func_ = std::move(loss_func);
}

StandardUpdater::StandardUpdater(std::map<std::string, std::shared_ptr<iterators::Iterator>> iterators,
                                 std::map<std::string, std::shared_ptr<Optimizer>> optimizers, LossFunction loss_func,
                                 UpdaterOptions options)
    : iterators_(std::move(iterators)), optimizers_(std::move(optimizers)), loss_func_(std::move(loss_func)),
      options_(std::move(options)) {
  if (options_.micro_batches < 1)
    throw Error(str("StandardUpdater: micro_batches must be at least 1 (the micro-batches each batch is split into), got ",
                    options_.micro_batches));
  // The "main" iterator counts the epochs; a "main" optimizer is needed only by the default
  // update_core (a GAN's updater overrides it and names its optimizers "gen" and "dis").
  if (!iterators_.count("main") || !iterators_.at("main")) throw Error("StandardUpdater: a 'main' iterator is required");
  if (optimizers_.empty()) throw Error("StandardUpdater: no optimizer is registered");
  for (auto& [name, opt] : optimizers_) {
    if (!opt) throw Error(str("StandardUpdater: optimizer '", name, "' is null"));
    if (!opt->target_ptr()) throw Error(str("StandardUpdater: optimizer '", name, "' has no target; call setup(model) first"));
  }
}

void StandardUpdater::update() {
  update_core();
  ++iteration_;
}

Optimizer& StandardUpdater::main_optimizer(const char* what) const {
  auto it = optimizers_.find("main");
  if (it != optimizers_.end()) return *it->second;
  std::string names;
  for (const auto& [name, opt] : optimizers_) names += (names.empty() ? "" : ", ") + name;
  throw Error(str("StandardUpdater: ", what, " needs an optimizer registered as 'main', and there is none (registered: ",
                  names, "); override update_core, or register one as 'main'"));
}

Device StandardUpdater::device() const {
  return options_.device ? *options_.device : main_optimizer("the batch's device").target().device();
}

void StandardUpdater::accumulate(Optimizer& opt, int64_t n,
                                 const std::function<Variable(size_t, int64_t, int64_t)>& loss_of) const {
  const auto parts = split_batch(n, options_.micro_batches);
  Reporter* reporter = current_reporter();
  std::vector<Observation> reported(parts.size());
  std::vector<double> weights;
  opt.target().cleargrads();
  // Every backward but the last accumulates locally (a multi-node optimizer starts nothing).
  std::optional<Optimizer::NoSync> local;
  if (parts.size() > 1) local.emplace(opt.no_sync());
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto [start, count] = parts[i];
    weights.push_back(n > 0 ? double(count) / double(n) : 1.0);
    Variable loss;
    {
      // What the model reports goes to a part's own observation, averaged below.
      std::optional<Reporter::Scope> scope;
      if (reporter) scope.emplace(*reporter, reported[i]);
      loss = loss_of(i, start, count);
    }
    // d(loss * w)/dx = w * d(loss)/dx: the weight enters as the initial gradient, no extra node;
    // so does the optimizer's loss scale (Optimizer::loss_scaling), as in update(lossfun).
    loss.set_grad(Tensor::full(loss.shape(), weights.back() * opt.loss_scale(), loss.dtype(), loss.data().device()));
    if (i + 1 == parts.size()) local.reset();
    loss.backward();
  }
  if (reporter) report(weighted_mean(reported, weights));
  opt.update();
}

void StandardUpdater::update_core() {
  Optimizer& opt = main_optimizer("the default update_core");  // before a batch is taken
  iterators::Iterator& it = *iterators_.at("main");
  if (converter_ && options_.micro_batches > 1) {
    const std::vector<datasets::Example> examples = it.next();
    const Device dev = device();
    accumulate(opt, int64_t(examples.size()), [&](size_t, int64_t start, int64_t count) {
      const std::vector<datasets::Example> part(examples.begin() + start, examples.begin() + start + count);
      const dataset::ConvertedBatch in = converter_(part, dev);
      if (converted_loss_func_) return converted_loss_func_(in);
      std::vector<Variable> inputs;
      for (const Tensor& t : in.tensors("StandardUpdater")) inputs.emplace_back(t);
      return opt.target().forward_args(inputs).at(0);
    });
    if (it.is_new_epoch()) opt.new_epoch();
    return;
  }
  if (converter_) {
    // Eager: the converter's output may differ in shape (and in number of tensors) every step,
    // which a captured graph cannot follow.
    const dataset::ConvertedBatch in = converter_(it.next(), device());
    opt.update([&] {
      if (converted_loss_func_) return converted_loss_func_(in);
      std::vector<Variable> inputs;
      for (const Tensor& t : in.tensors("StandardUpdater")) inputs.emplace_back(t);
      return opt.target().forward_args(inputs).at(0);
    }, /*retain_graph=*/false);  // nothing backpropagates this graph again: free it as backward goes
    if (it.is_new_epoch()) opt.new_epoch();
    return;
  }
  const std::vector<Tensor> arrays = it.next_batch();
  const auto loss_of = [&](const std::vector<Variable>& inputs) {
    return loss_func_ ? loss_func_(inputs) : opt.target().forward_args(inputs).at(0);
  };
  // Nothing backpropagates the step's graph again: it is freed as backward goes.
  const auto plain = [&](const std::vector<Variable>& inputs) {
    opt.update([&] { return loss_of(inputs); }, /*retain_graph=*/false);
  };
  // Accumulation: micro-batches are views of the batch's arrays along the first axis, so a
  // captured graph reads them from its input buffers like the plain step.
  const auto accumulated = [&](const std::vector<Variable>& inputs) {
    if (inputs.empty()) throw Error("StandardUpdater: micro_batches splits the arrays of a batch, and this one has none");
    const int64_t n = inputs[0].shape().empty() ? -1 : inputs[0].shape()[0];
    for (size_t j = 0; j < inputs.size(); ++j)
      if (n < 0 || inputs[j].shape().empty() || inputs[j].shape()[0] != n)
        throw Error(str("StandardUpdater: micro_batches splits every array of a batch along its first axis, but array ",
                        j, " has shape ", shape_str(inputs[j].shape()), " and array 0 has shape ",
                        shape_str(inputs[0].shape())));
    accumulate(opt, n, [&](size_t, int64_t start, int64_t count) {
      std::vector<Variable> part;
      for (const Variable& x : inputs) part.emplace_back(x.data().narrow(0, start, count));
      return loss_of(part);
    });
  };
  const CudaGraphStep::Step step =
      options_.micro_batches > 1 ? CudaGraphStep::Step(accumulated) : CudaGraphStep::Step(plain);
  if (options_.cuda_graph) graph_step_.run(opt, device(), arrays, step);  // eager off CUDA devices
  else CudaGraphStep::eager(device(), arrays, step);
  if (it.is_new_epoch()) opt.new_epoch();
}

int64_t StandardUpdater::epoch() const { return iterators_.at("main")->epoch(); }
double StandardUpdater::epoch_detail() const { return iterators_.at("main")->epoch_detail(); }
bool StandardUpdater::is_new_epoch() const { return iterators_.at("main")->is_new_epoch(); }

Optimizer& StandardUpdater::get_optimizer(const std::string& name) {
  auto it = optimizers_.find(name);
  if (it == optimizers_.end()) throw Error(str("StandardUpdater: no optimizer named '", name, "'"));
  return *it->second;
}

std::map<std::string, Optimizer*> StandardUpdater::get_all_optimizers() {
  std::map<std::string, Optimizer*> out;
  for (auto& [name, opt] : optimizers_) out[name] = opt.get();
  return out;
}

iterators::Iterator& StandardUpdater::get_iterator(const std::string& name) {
  auto it = iterators_.find(name);
  if (it == iterators_.end()) throw Error(str("StandardUpdater: no iterator named '", name, "'"));
  return *it->second;
}

void StandardUpdater::serialize(Serializer& s) {
  for (auto& [name, it] : iterators_) {
    Serializer sub = s["iterator:" + name];
    it->serialize(sub);
  }
  for (auto& [name, opt] : optimizers_) {
    Serializer sub = s["optimizer:" + name];
    opt->serialize(sub);
    Serializer model = s["model:" + name];
    opt->target().serialize(model);
  }
  s.value("iteration", iteration_);
}

void StandardUpdater::finalize() {
  for (auto& [name, it] : iterators_) it->finalize();
}

}  // namespace chainer::training
