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

#include "nn/optimizer.h"
#include "training/extension.h"

namespace chainer::training::extensions {

/// Shifts an optimizer hyperparameter exponentially, as Chainer's `extensions.ExponentialShift`.
class ExponentialShift : public Extension {
 public:
  /// Multiplies ATTR of OPTIMIZER (unset: the updater's "main") by RATE (>= 0) per call, from INIT
  /// (unset: the value at the start), never past TARGET.
  ExponentialShift(std::string attr, double rate, std::optional<double> init = std::nullopt,
                   std::optional<double> target = std::nullopt, std::shared_ptr<Optimizer> optimizer = nullptr);
  void initialize(Trainer& trainer) override;  ///< Sets ATTR to INIT, or to the last value after a resume.
  void operator()(Trainer& trainer) override;  ///< Counts a call and sets ATTR to `init * rate^t` (clamped).
  std::string default_name() const override { return "ExponentialShift"; }
  void serialize(Serializer& s) override;  ///< Saves or restores the call count `_t` and `_last_value`.
  std::optional<double> last_value() const { return last_value_; }  ///< The value set last; unset before.

 private:
  Optimizer& optimizer(Trainer& trainer) const;
  void set(Trainer& trainer, double value);
  std::string attr_;
  double rate_;
  std::optional<double> init_, target_;
  std::shared_ptr<Optimizer> optimizer_;
  int64_t t_ = 0;
  std::optional<double> last_value_;
};

}  // namespace chainer::training::extensions
