#include "training/extensions/exponential_shift.h"

#include <cmath>

#include "training/trainer.h"

namespace chainer::training::extensions {

ExponentialShift::ExponentialShift(std::string attr, double rate, std::optional<double> init,
                                   std::optional<double> target, std::shared_ptr<Optimizer> optimizer)
    : attr_(std::move(attr)), rate_(rate), init_(init), target_(target), optimizer_(std::move(optimizer)) {
  if (!(rate >= 0)) throw Error(str("ExponentialShift: rate must be >= 0, got ", rate));
}

Optimizer& ExponentialShift::optimizer(Trainer& trainer) const {
  return optimizer_ ? *optimizer_ : trainer.updater().get_optimizer("main");
}

void ExponentialShift::set(Trainer& trainer, double value) {
  optimizer(trainer).set_hyperparam(attr_, value);
  last_value_ = value;
}

void ExponentialShift::initialize(Trainer& trainer) {
  if (!init_) init_ = optimizer(trainer).hyperparam(attr_);
  set(trainer, last_value_ ? *last_value_ : *init_);
}

void ExponentialShift::operator()(Trainer& trainer) {
  ++t_;
  if (!init_) init_ = optimizer(trainer).hyperparam(attr_);  // called without initialize()
  double value = *init_ * std::pow(rate_, double(t_));
  // Clamped at the target on the side the shift moves towards; the ratio, as Chainer's, also
  // works for negative values.
  if (target_) {
    if (rate_ > 1 ? value / *target_ > 1 : value / *target_ < 1) value = *target_;
  }
  set(trainer, value);
}

void ExponentialShift::serialize(Serializer& s) {
  s.value("_t", t_);
  s.value("_last_value", last_value_);  // no entry while unset: Chainer's None
}

}  // namespace chainer::training::extensions
