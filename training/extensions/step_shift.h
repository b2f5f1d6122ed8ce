/// @file
/// StepShift, as chainer.training.extensions.StepShift: multiplies an optimizer's hyperparameter
/// (Optimizer::set_hyperparam, "lr" typically) by GAMMA every STEP calls: after t calls the value
/// is `init * gamma^floor(t / step)`, clamped at TARGET. It also sets the value when training
/// starts (init, or the last value after a resume). Runs every iteration unless given a trigger.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "nn/optimizer.h"
#include "training/extension.h"

namespace chainer::training::extensions {

/// Shifts an optimizer hyperparameter in steps, as Chainer's `extensions.StepShift`.
class StepShift : public Extension {
 public:
  /// Multiplies ATTR of OPTIMIZER (unset: the updater's "main") by GAMMA every STEP (> 0) calls,
  /// from INIT (unset: the value at the start), never past TARGET.
  StepShift(std::string attr, double gamma, int64_t step, std::optional<double> init = std::nullopt,
            std::optional<double> target = std::nullopt, std::shared_ptr<Optimizer> optimizer = nullptr);
  void initialize(Trainer& trainer) override;  ///< Sets ATTR to INIT, or to the last value after a resume.
  void operator()(Trainer& trainer) override;  ///< Counts a call and sets ATTR to `init * gamma^floor(t / step)`.
  std::string default_name() const override { return "StepShift"; }
  void serialize(Serializer& s) override;  ///< Saves or restores the call count `_t` and `_last_value`.
  std::optional<double> last_value() const { return last_value_; }  ///< The value set last; unset before.

 private:
  Optimizer& optimizer(Trainer& trainer) const;
  void set(Trainer& trainer, double value);
  std::string attr_;
  double gamma_;
  int64_t step_;
  std::optional<double> init_, target_;
  std::shared_ptr<Optimizer> optimizer_;
  int64_t t_ = 0;
  std::optional<double> last_value_;
};

}  // namespace chainer::training::extensions
