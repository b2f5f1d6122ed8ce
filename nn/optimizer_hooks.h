// Optimizer hooks, as chainer.optimizer_hooks: they edit gradients before each update.
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizer_hooks {

// g += rate * w for every parameter (L2 regularization).
class WeightDecay : public OptimizerHook {
 public:
  explicit WeightDecay(double rate);
  std::string name() const override { return "WeightDecay"; }
  void operator()(Optimizer& optimizer) override;
  double rate;
};

// Scales all gradients by threshold / norm when their global L2 norm exceeds THRESHOLD.
class GradientClipping : public OptimizerHook {
 public:
  explicit GradientClipping(double threshold);
  std::string name() const override { return "GradientClipping"; }
  void operator()(Optimizer& optimizer) override;
  double threshold;
};

}  // namespace chainer::optimizer_hooks
