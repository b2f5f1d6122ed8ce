/// @file
/// Alex Graves's RMSprop, as chainer.optimizers.RMSpropGraves (lr 1e-4, alpha 0.95, momentum 0.9,
/// eps 1e-4): `n = alpha * n + (1 - alpha) * g^2; g_ = alpha * g_ + (1 - alpha) * g;
/// delta = momentum * delta - lr * g / sqrt(n - g_^2 + eps); w += delta`, states "n", "g" (g_)
/// and "delta", Chainer's names.
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizers {

/// Alex Graves's RMSprop (Chainer's `chainer.optimizers.RMSpropGraves`): the gradient divided by
/// a running estimate of its standard deviation, with momentum.
class RMSpropGraves : public Optimizer {
 public:
  /// An RMSpropGraves optimizer with Chainer's defaults.
  explicit RMSpropGraves(double lr = 1e-4, double alpha = 0.95, double momentum = 0.9, double eps = 1e-4);
  double lr;        ///< The learning rate.
  double alpha;     ///< The decay rate of the running means of the gradient and its square.
  double momentum;  ///< The fraction of the previous step kept in `delta`.
  double eps;       ///< Added to the variance estimate inside the root.

 protected:
  /// lr, alpha, momentum, eps.
  std::vector<Hyperparam> hyperparams() override {
    return {{"lr", &lr}, {"alpha", &alpha}, {"momentum", &momentum}, {"eps", &eps}};
  }
  std::optional<UpdateRule> update_rule() const override { return UpdateRule::RMSpropGraves; }
  UpdateScalars update_scalars(int64_t param_t) const override;
  std::vector<std::string> state_names() const override { return {"n", "g", "delta"}; }
};

}  // namespace chainer::optimizers
