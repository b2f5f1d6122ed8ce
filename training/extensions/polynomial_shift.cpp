#include "training/extensions/polynomial_shift.h"

#include <algorithm>
#include <cmath>

#include "training/trainer.h"

namespace chainer::training::extensions {

PolynomialShift::PolynomialShift(std::string attr, double rate, int64_t max_count, std::optional<double> init,
                                 std::optional<double> target, std::shared_ptr<Optimizer> optimizer)
    : attr_(std::move(attr)), rate_(rate), max_count_(max_count), init_(init), target_(target),
      optimizer_(std::move(optimizer)) {
  if (max_count <= 0)
    throw Error(str("PolynomialShift: max_count must be a positive number of calls, got ", max_count));
}

Optimizer& PolynomialShift::optimizer(Trainer& trainer) const {
  return optimizer_ ? *optimizer_ : trainer.updater().get_optimizer("main");
}

void PolynomialShift::set(Trainer& trainer, double value) {
  optimizer(trainer).set_hyperparam(attr_, value);
  last_value_ = value;
}

void PolynomialShift::initialize(Trainer& trainer) {
  if (!init_) init_ = optimizer(trainer).hyperparam(attr_);
  set(trainer, last_value_ ? *last_value_ : *init_);
}

void PolynomialShift::operator()(Trainer& trainer) {
  ++t_;
  if (!init_) init_ = optimizer(trainer).hyperparam(attr_);  // called without initialize()
  const double decay = std::max(1.0 - double(t_) / double(max_count_), 0.0);
  double value = *init_ * std::pow(decay, rate_);
  // The value falls towards 0 (rate > 0): clamped from below, on the ratio as Chainer's.
  if (target_) {
    const double ratio = *target_ / value;  // +-inf at a value of 0
    if (rate_ > 0 ? ratio > 1 : ratio < 1) value = *target_;
  }
  set(trainer, value);
}

void PolynomialShift::serialize(Serializer& s) {
  s.value("_t", t_);
  s.value("_last_value", last_value_);  // no entry while unset: Chainer's None
}

}  // namespace chainer::training::extensions
