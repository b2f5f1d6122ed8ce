#include "training/extensions/step_shift.h"

#include <cmath>

#include "training/trainer.h"

namespace chainer::training::extensions {

StepShift::StepShift(std::string attr, double gamma, int64_t step, std::optional<double> init,
                     std::optional<double> target, std::shared_ptr<Optimizer> optimizer)
    : HyperparameterShift(std::move(attr), init, std::move(optimizer)), gamma_(gamma), step_(step), target_(target) {
  if (step <= 0) throw Error(str("StepShift: step must be a positive number of calls, got ", step));
}

double StepShift::value_at(int64_t t, double init) const {
  double value = init * std::pow(gamma_, double(t / step_));
  // Clamped on the side the shift moves towards; the ratio, as Chainer's, also works for
  // negative values.
  if (target_) {
    if (gamma_ > 1 ? value / *target_ > 1 : value / *target_ < 1) value = *target_;
  }
  return value;
}

}  // namespace chainer::training::extensions
