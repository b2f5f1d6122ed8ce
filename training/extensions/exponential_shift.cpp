#include "training/extensions/exponential_shift.h"

#include <cmath>

#include "training/trainer.h"

namespace chainer::training::extensions {

ExponentialShift::ExponentialShift(std::string attr, double rate, std::optional<double> init,
                                   std::optional<double> target, std::shared_ptr<Optimizer> optimizer)
    : HyperparameterShift(std::move(attr), init, std::move(optimizer)), rate_(rate), target_(target) {
  if (!(rate >= 0)) throw Error(str("ExponentialShift: rate must be >= 0, got ", rate));
}

double ExponentialShift::value_at(int64_t t, double init) const {
  double value = init * std::pow(rate_, double(t));
  // Clamped at the target on the side the shift moves towards; the ratio, as Chainer's, also
  // works for negative values.
  if (target_) {
    if (rate_ > 1 ? value / *target_ > 1 : value / *target_ < 1) value = *target_;
  }
  return value;
}

}  // namespace chainer::training::extensions
