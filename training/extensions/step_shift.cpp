#include "training/extensions/step_shift.h"

#include <cmath>

#include "training/trainer.h"

namespace chainer::training::extensions {

StepShift::StepShift(std::string attr, double gamma, int64_t step, std::optional<double> init,
                     std::optional<double> target, std::shared_ptr<Optimizer> optimizer)
    : attr_(std::move(attr)), gamma_(gamma), step_(step), init_(init), target_(target),
      optimizer_(std::move(optimizer)) {
  if (step <= 0) throw Error(str("StepShift: step must be a positive number of calls, got ", step));
}

Optimizer& StepShift::optimizer(Trainer& trainer) const {
  return optimizer_ ? *optimizer_ : trainer.updater().get_optimizer("main");
}

void StepShift::set(Trainer& trainer, double value) {
  optimizer(trainer).set_hyperparam(attr_, value);
  last_value_ = value;
}

void StepShift::initialize(Trainer& trainer) {
  if (!init_) init_ = optimizer(trainer).hyperparam(attr_);
  set(trainer, last_value_ ? *last_value_ : *init_);
}

void StepShift::operator()(Trainer& trainer) {
  ++t_;
  if (!init_) init_ = optimizer(trainer).hyperparam(attr_);  // called without initialize()
  double value = *init_ * std::pow(gamma_, double(t_ / step_));
  // Clamped on the side the shift moves towards; the ratio, as Chainer's, also works for
  // negative values.
  if (target_) {
    if (gamma_ > 1 ? value / *target_ > 1 : value / *target_ < 1) value = *target_;
  }
  set(trainer, value);
}

void StepShift::serialize(Serializer& s) {
  s.value("_t", t_);
  s.value("_last_value", last_value_);  // no entry while unset: Chainer's None
}

}  // namespace chainer::training::extensions
