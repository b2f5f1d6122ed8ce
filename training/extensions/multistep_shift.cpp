#include "training/extensions/multistep_shift.h"

#include <cmath>

#include "training/trainer.h"

namespace chainer::training::extensions {

MultistepShift::MultistepShift(std::string attr, double gamma, std::vector<int64_t> step_value,
                               std::optional<double> init, std::shared_ptr<Optimizer> optimizer)
    : attr_(std::move(attr)), gamma_(gamma), step_value_(std::move(step_value)), init_(init),
      optimizer_(std::move(optimizer)) {}

Optimizer& MultistepShift::optimizer(Trainer& trainer) const {
  return optimizer_ ? *optimizer_ : trainer.updater().get_optimizer("main");
}

void MultistepShift::initialize(Trainer& trainer) {
  Optimizer& opt = optimizer(trainer);
  if (!init_) {
    init_ = opt.hyperparam(attr_);
    // Chainer leaves the value alone here; a restored step must still apply to it.
    if (current_step_ > 0) opt.set_hyperparam(attr_, *init_ * std::pow(gamma_, double(current_step_)));
  } else {
    opt.set_hyperparam(attr_, *init_ * std::pow(gamma_, double(current_step_)));
  }
}

void MultistepShift::operator()(Trainer& trainer) {
  ++t_;
  Optimizer& opt = optimizer(trainer);
  if (!init_) init_ = opt.hyperparam(attr_);  // called without initialize()
  if (current_step_ < int64_t(step_value_.size()) && t_ >= step_value_[size_t(current_step_)]) ++current_step_;
  opt.set_hyperparam(attr_, *init_ * std::pow(gamma_, double(current_step_)));
}

void MultistepShift::serialize(Serializer& s) {
  s.value("_t", t_);
  s.value("_current_step", current_step_);
}

}  // namespace chainer::training::extensions
