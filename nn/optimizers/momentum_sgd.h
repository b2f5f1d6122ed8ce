/// @file
/// SGD with momentum, as chainer.optimizers.MomentumSGD: `v = momentum * v - lr * g; w += v`.
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizers {

/// Stochastic gradient descent with momentum (Chainer's `chainer.optimizers.MomentumSGD`).
class MomentumSGD : public Optimizer {
 public:
  /// A MomentumSGD optimizer with Chainer's defaults.
  explicit MomentumSGD(double lr = 0.01, double momentum = 0.9);
  double lr;        ///< The learning rate.
  double momentum;  ///< The momentum coefficient: the fraction of the previous step kept in `v`.

 protected:
  /// lr, momentum.
  std::vector<Hyperparam> hyperparams() override {
    return {{"lr", &lr}, {"momentum", &momentum}};
  }
  std::optional<UpdateRule> update_rule() const override { return UpdateRule::MomentumSGD; }
  UpdateScalars update_scalars(int64_t param_t) const override;
  std::vector<std::string> state_names() const override { return {"v"}; }
};

}  // namespace chainer::optimizers
