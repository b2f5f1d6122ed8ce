/// @file
/// Nesterov's accelerated gradient, as chainer.optimizers.NesterovAG (lr 0.01, momentum 0.9):
/// `v = momentum * v - lr * g; w += momentum^2 * v - (1 + momentum) * lr * g`, state "v".
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizers {

/// Nesterov's accelerated gradient (Chainer's `chainer.optimizers.NesterovAG`): momentum SGD that
/// takes the gradient at the point the momentum is about to reach.
class NesterovAG : public Optimizer {
 public:
  /// A NesterovAG optimizer with Chainer's defaults.
  explicit NesterovAG(double lr = 0.01, double momentum = 0.9);
  double lr;        ///< The learning rate.
  double momentum;  ///< The momentum coefficient: the fraction of the previous velocity kept in `v`.

 protected:
  /// lr, momentum.
  std::vector<Hyperparam> hyperparams() override {
    return {{"lr", &lr}, {"momentum", &momentum}};
  }
  std::optional<UpdateRule> update_rule() const override { return UpdateRule::NesterovAG; }
  UpdateScalars update_scalars(int64_t param_t) const override;
  std::vector<std::string> state_names() const override { return {"v"}; }
};

}  // namespace chainer::optimizers
