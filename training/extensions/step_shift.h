/// @file
/// StepShift, as chainer.training.extensions.StepShift: multiplies an optimizer's hyperparameter
/// (Optimizer::set_hyperparam, "lr" typically) by GAMMA every STEP calls: after t calls the value
/// is `init * gamma^floor(t / step)`, clamped at TARGET. It also sets the value when training
/// starts (init, or the last value after a resume). Runs every iteration unless given a trigger.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "training/extensions/hyperparameter_shift.h"

namespace chainer::training::extensions {

/// Shifts an optimizer hyperparameter in steps, as Chainer's `extensions.StepShift`.
class StepShift : public HyperparameterShift {
 public:
  /// Multiplies ATTR of OPTIMIZER (unset: the updater's "main") by GAMMA every STEP (> 0) calls,
  /// from INIT (unset: the value at the start), never past TARGET.
  StepShift(std::string attr, double gamma, int64_t step, std::optional<double> init = std::nullopt,
            std::optional<double> target = std::nullopt, std::shared_ptr<Optimizer> optimizer = nullptr);
  std::string default_name() const override { return "StepShift"; }

 private:
  double value_at(int64_t t, double init) const override;
  double gamma_;
  int64_t step_;
  std::optional<double> target_;
};

}  // namespace chainer::training::extensions
