/// @file
/// LinearShift, as chainer.training.extensions.LinearShift: moves an optimizer's hyperparameter
/// (Optimizer::set_hyperparam) linearly with its call count t: VALUE_RANGE.first up to call
/// TIME_RANGE.first, then linearly to VALUE_RANGE.second at call TIME_RANGE.second, and that
/// value after. It also sets the value when training starts (the value at t = 0, or the last
/// value after a resume). Runs every iteration unless given a trigger.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "nn/optimizer.h"
#include "training/extension.h"

namespace chainer::training::extensions {

/// Shifts an optimizer hyperparameter linearly, as Chainer's `extensions.LinearShift`.
class LinearShift : public Extension {
 public:
  /// Moves ATTR of OPTIMIZER (unset: the updater's "main") from VALUE_RANGE.first to
  /// VALUE_RANGE.second between calls TIME_RANGE.first and TIME_RANGE.second.
  LinearShift(std::string attr, std::pair<double, double> value_range, std::pair<int64_t, int64_t> time_range,
              std::shared_ptr<Optimizer> optimizer = nullptr);
  void initialize(Trainer& trainer) override;  ///< Sets ATTR to the value at t (0), or to the last value after a resume.
  void operator()(Trainer& trainer) override;  ///< Counts a call and sets ATTR to the value at the new t.
  std::string default_name() const override { return "LinearShift"; }
  void serialize(Serializer& s) override;  ///< Saves or restores the call count `_t` and `_last_value`.
  std::optional<double> last_value() const { return last_value_; }  ///< The value set last; unset before.

 private:
  double value_at(int64_t t) const;
  void set(Trainer& trainer, double value);
  std::string attr_;
  std::pair<double, double> value_range_;
  std::pair<int64_t, int64_t> time_range_;
  std::shared_ptr<Optimizer> optimizer_;
  int64_t t_ = 0;
  std::optional<double> last_value_;
};

}  // namespace chainer::training::extensions
