/// @file
/// AdaGrad, as chainer.optimizers.AdaGrad (lr 0.001, eps 1e-8): `h += g^2;
/// w -= lr * g / (sqrt(h) + eps)`, state "h".
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizers {

/// AdaGrad (Chainer's `chainer.optimizers.AdaGrad`): each element's step shrinks with the sum of
/// its squared gradients so far.
class AdaGrad : public Optimizer {
 public:
  /// An AdaGrad optimizer with Chainer's defaults.
  explicit AdaGrad(double lr = 0.001, double eps = 1e-8);
  double lr;   ///< The learning rate.
  double eps;  ///< Added to `sqrt(h)` in the denominator.

 protected:
  /// lr, eps.
  std::vector<Hyperparam> hyperparams() override {
    return {{"lr", &lr}, {"eps", &eps}};
  }
  std::optional<UpdateRule> update_rule() const override { return UpdateRule::AdaGrad; }
  UpdateScalars update_scalars(int64_t param_t) const override;
  std::vector<std::string> state_names() const override { return {"h"}; }
};

}  // namespace chainer::optimizers
