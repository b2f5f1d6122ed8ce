/// @file
/// RMSprop, as chainer.optimizers.RMSprop (lr 0.01, alpha 0.99, eps 1e-8, eps_inside_sqrt
/// false): `ms = alpha * ms + (1 - alpha) * g^2; w -= lr * g / (sqrt(ms) + eps)`, or
/// `/ sqrt(ms + eps)` with eps_inside_sqrt (as some other frameworks do); state "ms".
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizers {

/// RMSprop (Chainer's `chainer.optimizers.RMSprop`): the step divided by the root of a running
/// mean of the squared gradients.
class RMSprop : public Optimizer {
 public:
  /// An RMSprop optimizer with Chainer's defaults.
  explicit RMSprop(double lr = 0.01, double alpha = 0.99, double eps = 1e-8, bool eps_inside_sqrt = false);
  double lr;             ///< The learning rate.
  double alpha;          ///< The decay rate of the mean square `ms`.
  double eps;            ///< Added to the denominator, outside or inside the root.
  bool eps_inside_sqrt;  ///< Divide by `sqrt(ms + eps)` instead of `sqrt(ms) + eps`.

  /// One step, as Optimizer::update(); throws first when eps rounds to 0 in a parameter's dtype.
  void update() override;
  using Optimizer::update;

 protected:
  /// lr, alpha, eps.
  std::vector<Hyperparam> hyperparams() override {
    return {{"lr", &lr}, {"alpha", &alpha}, {"eps", &eps}};
  }
  std::optional<UpdateRule> update_rule() const override { return UpdateRule::RMSprop; }
  UpdateScalars update_scalars(int64_t param_t) const override;
  std::vector<std::string> state_names() const override { return {"ms"}; }
};

}  // namespace chainer::optimizers
