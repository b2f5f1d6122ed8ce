/// @file
/// AdaDelta, as chainer.optimizers.AdaDelta (rho 0.95, eps 1e-6): Zeiler's ADADELTA, with no
/// learning rate: `msg = rho * msg + (1 - rho) * g^2; dx = sqrt((msdx + eps) / (msg + eps)) * g;
/// msdx = rho * msdx + (1 - rho) * dx^2; w -= dx`, states "msg" and "msdx".
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizers {

/// Zeiler's ADADELTA (Chainer's `chainer.optimizers.AdaDelta`): the step is the gradient scaled by
/// the ratio of the running root mean squares of past steps and of gradients.
class AdaDelta : public Optimizer {
 public:
  /// An AdaDelta optimizer with Chainer's defaults.
  explicit AdaDelta(double rho = 0.95, double eps = 1e-6);
  double rho;  ///< The decay rate of both running mean squares.
  double eps;  ///< Added to both mean squares inside the root.

 protected:
  /// rho, eps.
  std::vector<Hyperparam> hyperparams() override {
    return {{"rho", &rho}, {"eps", &eps}};
  }
  std::optional<UpdateRule> update_rule() const override { return UpdateRule::AdaDelta; }
  UpdateScalars update_scalars(int64_t param_t) const override;
  std::vector<std::string> state_names() const override { return {"msg", "msdx"}; }
};

}  // namespace chainer::optimizers
