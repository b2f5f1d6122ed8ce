#include "training/extensions/polynomial_shift.h"

#include <algorithm>
#include <cmath>

#include "training/trainer.h"

namespace chainer::training::extensions {

PolynomialShift::PolynomialShift(std::string attr, double rate, int64_t max_count, std::optional<double> init,
                                 std::optional<double> target, std::shared_ptr<Optimizer> optimizer)
    : HyperparameterShift(std::move(attr), init, std::move(optimizer)),
      rate_(rate), max_count_(max_count), target_(target) {
  if (max_count <= 0)
    throw Error(str("PolynomialShift: max_count must be a positive number of calls, got ", max_count));
}

double PolynomialShift::value_at(int64_t t, double init) const {
  const double decay = std::max(1.0 - double(t) / double(max_count_), 0.0);
  double value = init * std::pow(decay, rate_);
  // The value falls towards 0 (rate > 0): clamped from below, on the ratio as Chainer's.
  if (target_) {
    const double ratio = *target_ / value;  // +-inf at a value of 0
    if (rate_ > 0 ? ratio > 1 : ratio < 1) value = *target_;
  }
  return value;
}

}  // namespace chainer::training::extensions
