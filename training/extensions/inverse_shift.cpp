#include "training/extensions/inverse_shift.h"

#include <cmath>

#include "training/trainer.h"

namespace chainer::training::extensions {

InverseShift::InverseShift(std::string attr, double gamma, double power, std::optional<double> init,
                           std::optional<double> target, std::shared_ptr<Optimizer> optimizer)
    : HyperparameterShift(std::move(attr), init, std::move(optimizer)), gamma_(gamma), power_(power), target_(target) {
  if (!(gamma >= 0)) throw Error(str("InverseShift: gamma must be >= 0, got ", gamma));
}

double InverseShift::value_at(int64_t t, double init) const {
  double value = init * std::pow(1 + gamma_ * double(t), -power_);
  // A positive power decays (clamped from below), a negative one grows (clamped from above).
  if (target_) {
    if (power_ < 0 ? value / *target_ > 1 : value / *target_ < 1) value = *target_;
  }
  return value;
}

}  // namespace chainer::training::extensions
