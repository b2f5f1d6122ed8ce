/// @file
/// ExponentialShift, as chainer.training.extensions.ExponentialShift: multiplies an optimizer's
/// hyperparameter (Optimizer::set_hyperparam, "lr" typically) by RATE at each call, from INIT,
/// stopping at TARGET: after t calls the value is `init * rate^t`, clamped at target. It also
/// sets the value when training starts (init, or the last value after a resume). Runs every
/// iteration unless given a trigger: `trainer.extend(exponential_shift, "", {1, Unit::Epoch})`.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "training/extensions/hyperparameter_shift.h"

namespace chainer::training::extensions {

/// Shifts an optimizer hyperparameter exponentially, as Chainer's `extensions.ExponentialShift`.
class ExponentialShift : public HyperparameterShift {
 public:
  /// Multiplies ATTR of OPTIMIZER (unset: the updater's "main") by RATE (>= 0) per call, from INIT
  /// (unset: the value at the start), never past TARGET.
  ExponentialShift(std::string attr, double rate, std::optional<double> init = std::nullopt,
                   std::optional<double> target = std::nullopt, std::shared_ptr<Optimizer> optimizer = nullptr);
  std::string default_name() const override { return "ExponentialShift"; }

 private:
  double value_at(int64_t t, double init) const override;
  double rate_;
  std::optional<double> target_;
};

}  // namespace chainer::training::extensions
