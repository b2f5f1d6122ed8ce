/// @file
/// Optimizer hooks, as chainer.optimizer_hooks: they edit gradients before each update.
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizer_hooks {

/// `g += rate * w` for every parameter (L2 regularization).
class WeightDecay : public OptimizerHook {
 public:
  /// A hook with decay RATE (at least 0).
  explicit WeightDecay(double rate);
  std::string name() const override { return "WeightDecay"; }
  void operator()(Optimizer& optimizer) override;
  double rate;  ///< The coefficient of the weights added to their gradients.
};

/// Scales all gradients by `threshold / norm` when their global L2 norm exceeds THRESHOLD.
class GradientClipping : public OptimizerHook {
 public:
  /// A hook with norm THRESHOLD (greater than 0).
  explicit GradientClipping(double threshold);
  std::string name() const override { return "GradientClipping"; }
  void operator()(Optimizer& optimizer) override;
  double threshold;  ///< The largest global L2 norm the gradients keep.
};

}  // namespace chainer::optimizer_hooks
