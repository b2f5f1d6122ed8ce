#include "training/extensions/inverse_shift.h"

#include <cmath>

#include "training/trainer.h"

namespace chainer::training::extensions {

InverseShift::InverseShift(std::string attr, double gamma, double power, std::optional<double> init,
                           std::optional<double> target, std::shared_ptr<Optimizer> optimizer)
    : attr_(std::move(attr)), gamma_(gamma), power_(power), init_(init), target_(target),
      optimizer_(std::move(optimizer)) {
  if (!(gamma >= 0)) throw Error(str("InverseShift: gamma must be >= 0, got ", gamma));
}

Optimizer& InverseShift::optimizer(Trainer& trainer) const {
  return optimizer_ ? *optimizer_ : trainer.updater().get_optimizer("main");
}

void InverseShift::set(Trainer& trainer, double value) {
  optimizer(trainer).set_hyperparam(attr_, value);
  last_value_ = value;
}

void InverseShift::initialize(Trainer& trainer) {
  if (!init_) init_ = optimizer(trainer).hyperparam(attr_);
  set(trainer, last_value_ ? *last_value_ : *init_);
}

void InverseShift::operator()(Trainer& trainer) {
  ++t_;
  if (!init_) init_ = optimizer(trainer).hyperparam(attr_);  // called without initialize()
  double value = *init_ * std::pow(1 + gamma_ * double(t_), -power_);
  // A positive power decays (clamped from below), a negative one grows (clamped from above).
  if (target_) {
    if (power_ < 0 ? value / *target_ > 1 : value / *target_ < 1) value = *target_;
  }
  set(trainer, value);
}

void InverseShift::serialize(Serializer& s) {
  s.value("_t", t_);
  s.value("_last_value", last_value_);  // no entry while unset: Chainer's None
}

}  // namespace chainer::training::extensions
