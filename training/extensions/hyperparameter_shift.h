/// @file
/// HyperparameterShift: what the schedules whose value is a function of the call count and the
/// starting value share (ExponentialShift, StepShift, PolynomialShift, InverseShift,
/// CosineShift): the optimizer they act on (the updater's "main" unless given), the starting
/// value (the hyperparameter's value at the start unless given), setting it when training
/// starts (or the last value after a resume), counting calls, and their snapshot entries `_t`
/// and `_last_value` (Chainer's names). A schedule says only what its value is after t calls.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "nn/optimizer.h"
#include "training/extension.h"

namespace chainer::training::extensions {

/// The base of the schedules computed from the call count; see the file comment.
class HyperparameterShift : public Extension {
 public:
  void initialize(Trainer& trainer) override;  ///< Sets ATTR to INIT, or to the last value after a resume.
  void operator()(Trainer& trainer) override;  ///< Counts a call and sets ATTR to value_at(t, init).
  void serialize(Serializer& s) override;  ///< Saves or restores the call count `_t` and `_last_value`.
  std::optional<double> last_value() const { return last_value_; }  ///< The value set last; unset before.

 protected:
  /// Shifts ATTR of OPTIMIZER (unset: the updater's "main") from INIT (unset: the value at the start).
  HyperparameterShift(std::string attr, std::optional<double> init, std::shared_ptr<Optimizer> optimizer);
  /// The value after T calls, starting from INIT (clamped at the schedule's target, if any).
  virtual double value_at(int64_t t, double init) const = 0;

 private:
  Optimizer& optimizer(Trainer& trainer) const;
  void set(Trainer& trainer, double value);
  std::string attr_;
  std::optional<double> init_;
  std::shared_ptr<Optimizer> optimizer_;
  int64_t t_ = 0;
  std::optional<double> last_value_;
};

}  // namespace chainer::training::extensions
