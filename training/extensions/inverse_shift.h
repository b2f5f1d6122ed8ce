/// @file
/// InverseShift, as chainer.training.extensions.InverseShift (Caffe's "inv" policy): after t
/// calls an optimizer's hyperparameter is `init * (1 + gamma * t)^(-power)`, clamped at TARGET.
/// It also sets the value when training starts (init, or the last value after a resume).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "training/extensions/hyperparameter_shift.h"

namespace chainer::training::extensions {

/// Shifts an optimizer hyperparameter as Caffe's "inv" policy, as Chainer's `extensions.InverseShift`.
class InverseShift : public HyperparameterShift {
 public:
  /// Sets ATTR of OPTIMIZER (unset: the updater's "main") to `init * (1 + gamma * t)^(-power)`,
  /// GAMMA >= 0, from INIT (unset: the value at the start), never past TARGET.
  InverseShift(std::string attr, double gamma, double power, std::optional<double> init = std::nullopt,
               std::optional<double> target = std::nullopt, std::shared_ptr<Optimizer> optimizer = nullptr);
  std::string default_name() const override { return "InverseShift"; }

 private:
  double value_at(int64_t t, double init) const override;
  double gamma_, power_;
  std::optional<double> target_;
};

}  // namespace chainer::training::extensions
