#include "training/updater.h"

namespace chainer::training {

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

void StandardUpdater::update_core() {
  Optimizer& opt = main_optimizer("the default update_core");  // before a batch is taken
  iterators::Iterator& it = *iterators_.at("main");
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
  const auto step = [&](const std::vector<Variable>& inputs) {
    opt.update([&] { return loss_func_ ? loss_func_(inputs) : opt.target().forward_args(inputs).at(0); },
               /*retain_graph=*/false);
  };
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
