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

#include "nn/optimizer.h"
#include "training/extension.h"

namespace chainer::training::extensions {

/// Shifts an optimizer hyperparameter polynomially, as Chainer's `extensions.PolynomialShift`.
class PolynomialShift : public Extension {
 public:
  /// Decays ATTR of OPTIMIZER (unset: the updater's "main") from INIT (unset: the value at the
  /// start) with exponent RATE to 0 at call MAX_COUNT (> 0), never past TARGET.
  PolynomialShift(std::string attr, double rate, int64_t max_count, std::optional<double> init = std::nullopt,
                  std::optional<double> target = std::nullopt, std::shared_ptr<Optimizer> optimizer = nullptr);
  void initialize(Trainer& trainer) override;  ///< Sets ATTR to INIT, or to the last value after a resume.
  void operator()(Trainer& trainer) override;  ///< Counts a call and sets ATTR to the value at the new t.
  std::string default_name() const override { return "PolynomialShift"; }
  void serialize(Serializer& s) override;  ///< Saves or restores the call count `_t` and `_last_value`.
  std::optional<double> last_value() const { return last_value_; }  ///< The value set last; unset before.

 private:
  Optimizer& optimizer(Trainer& trainer) const;
  void set(Trainer& trainer, double value);
  std::string attr_;
  double rate_;
  int64_t max_count_;
  std::optional<double> init_, target_;
  std::shared_ptr<Optimizer> optimizer_;
  int64_t t_ = 0;
  std::optional<double> last_value_;
};

}  // namespace chainer::training::extensions
