/// @file
/// InverseShift, as chainer.training.extensions.InverseShift (Caffe's "inv" policy): after t
/// calls an optimizer's hyperparameter is `init * (1 + gamma * t)^(-power)`, clamped at TARGET.
/// It also sets the value when training starts (init, or the last value after a resume).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "nn/optimizer.h"
#include "training/extension.h"

namespace chainer::training::extensions {

/// Shifts an optimizer hyperparameter as Caffe's "inv" policy, as Chainer's `extensions.InverseShift`.
class InverseShift : public Extension {
 public:
  /// Sets ATTR of OPTIMIZER (unset: the updater's "main") to `init * (1 + gamma * t)^(-power)`,
  /// GAMMA >= 0, from INIT (unset: the value at the start), never past TARGET.
  InverseShift(std::string attr, double gamma, double power, std::optional<double> init = std::nullopt,
               std::optional<double> target = std::nullopt, std::shared_ptr<Optimizer> optimizer = nullptr);
  void initialize(Trainer& trainer) override;  ///< Sets ATTR to INIT, or to the last value after a resume.
  void operator()(Trainer& trainer) override;  ///< Counts a call and sets ATTR to the value at the new t.
  std::string default_name() const override { return "InverseShift"; }
  void serialize(Serializer& s) override;  ///< Saves or restores the call count `_t` and `_last_value`.
  std::optional<double> last_value() const { return last_value_; }  ///< The value set last; unset before.

 private:
  Optimizer& optimizer(Trainer& trainer) const;
  void set(Trainer& trainer, double value);
  std::string attr_;
  double gamma_, power_;
  std::optional<double> init_, target_;
  std::shared_ptr<Optimizer> optimizer_;
  int64_t t_ = 0;
  std::optional<double> last_value_;
};

}  // namespace chainer::training::extensions
