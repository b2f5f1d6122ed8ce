/// @file
/// Simon Funk's SMORMS3, as chainer.optimizers.SMORMS3 (lr 0.001, eps 1e-16): with
/// `r = 1 / (mem + 1)`, `g_ = (1 - r) * g_ + r * g; g2 = (1 - r) * g2 + r * g^2;
/// x = g_^2 / (g2 + eps); w -= g * min(x, lr) / (sqrt(g2) + eps); mem = 1 + mem * (1 - x)`;
/// states "mem" (starting at 1), "g" (g_) and "g2", Chainer's names.
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizers {

/// Simon Funk's SMORMS3 (Chainer's `chainer.optimizers.SMORMS3`): RMSprop whose averaging
/// window per element (`mem`) shrinks where the gradient is noisy.
class SMORMS3 : public Optimizer {
 public:
  /// An SMORMS3 optimizer with Chainer's defaults.
  explicit SMORMS3(double lr = 0.001, double eps = 1e-16);
  double lr;   ///< The largest step, relative to the gradient's scale.
  double eps;  ///< Added to the denominators.

  /// "mem" starts at 1, the other states at 0.
  double initial_state_value(const std::string& key) const override { return key == "mem" ? 1.0 : 0.0; }

 protected:
  /// lr, eps.
  std::vector<Hyperparam> hyperparams() override {
    return {{"lr", &lr}, {"eps", &eps}};
  }
  std::optional<UpdateRule> update_rule() const override { return UpdateRule::SMORMS3; }
  UpdateScalars update_scalars(int64_t param_t) const override;
  std::vector<std::string> state_names() const override { return {"mem", "g", "g2"}; }
};

}  // namespace chainer::optimizers
