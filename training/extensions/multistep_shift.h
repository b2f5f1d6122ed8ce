/// @file
/// MultistepShift, as chainer.training.extensions.MultistepShift: multiplies an optimizer's
/// hyperparameter by GAMMA at each of the calls listed in STEP_VALUE: `init` before the first,
/// `init * gamma` from the first, `init * gamma^2` from the second, and so on. As Chainer's, the
/// step count advances by at most one per call (list increasing values), and training's start
/// sets INIT (when given). Unlike Chainer's, whose resumed run trains at INIT until the next call,
/// a resumed run starts at the value of its restored step.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/optimizer.h"
#include "training/extension.h"

namespace chainer::training::extensions {

/// Shifts an optimizer hyperparameter at listed calls, as Chainer's `extensions.MultistepShift`.
class MultistepShift : public Extension {
 public:
  /// Multiplies ATTR of OPTIMIZER (unset: the updater's "main") by GAMMA at each call of
  /// STEP_VALUE, from INIT (unset: the value at the start).
  MultistepShift(std::string attr, double gamma, std::vector<int64_t> step_value, std::optional<double> init,
                 std::shared_ptr<Optimizer> optimizer = nullptr);
  /// Sets ATTR to INIT (reads INIT instead when unset); after a resume, to `init * gamma^step`.
  void initialize(Trainer& trainer) override;
  /// Counts a call, moves to the next step when the count reaches it, and sets `init * gamma^step`.
  void operator()(Trainer& trainer) override;
  std::string default_name() const override { return "MultistepShift"; }
  void serialize(Serializer& s) override;  ///< Saves or restores the call count `_t` and `_current_step`.
  int64_t current_step() const { return current_step_; }  ///< How many listed calls have passed.

 private:
  Optimizer& optimizer(Trainer& trainer) const;
  std::string attr_;
  double gamma_;
  std::vector<int64_t> step_value_;
  std::optional<double> init_;
  std::shared_ptr<Optimizer> optimizer_;
  int64_t t_ = 0;
  int64_t current_step_ = 0;
};

}  // namespace chainer::training::extensions
