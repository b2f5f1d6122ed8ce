/// @file
/// PolynomialShift, as chainer.training.extensions.PolynomialShift: decays an optimizer's
/// hyperparameter polynomially over MAX_COUNT calls: after t calls the value is
/// `init * max(1 - t / max_count, 0)^rate`, clamped at TARGET. It also sets the value when
/// training starts (init, or the last value after a resume). Where Chainer divides by a value
/// of 0 (its clamp reads `target / value`), this one takes IEEE's infinity: the value reaching 0
/// with a positive target is clamped to the target.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "training/extensions/hyperparameter_shift.h"

namespace chainer::training::extensions {

/// Shifts an optimizer hyperparameter polynomially, as Chainer's `extensions.PolynomialShift`.
class PolynomialShift : public HyperparameterShift {
 public:
  /// Decays ATTR of OPTIMIZER (unset: the updater's "main") from INIT (unset: the value at the
  /// start) with exponent RATE to 0 at call MAX_COUNT (> 0), never past TARGET.
  PolynomialShift(std::string attr, double rate, int64_t max_count, std::optional<double> init = std::nullopt,
                  std::optional<double> target = std::nullopt, std::shared_ptr<Optimizer> optimizer = nullptr);
  std::string default_name() const override { return "PolynomialShift"; }

 private:
  double value_at(int64_t t, double init) const override;
  double rate_;
  int64_t max_count_;
  std::optional<double> target_;
};

}  // namespace chainer::training::extensions
