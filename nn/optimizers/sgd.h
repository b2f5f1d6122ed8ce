/// @file
/// Plain stochastic gradient descent: `w -= lr * g`.
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizers {

/// Plain stochastic gradient descent (Chainer's `chainer.optimizers.SGD`).
class SGD : public Optimizer {
 public:
  /// An SGD optimizer with learning rate LR.
  explicit SGD(double lr = 0.01);
  double lr;  ///< The learning rate.

 protected:
  /// lr.
  std::vector<Hyperparam> hyperparams() override {
    return {{"lr", &lr}};
  }
  std::optional<UpdateRule> update_rule() const override { return UpdateRule::SGD; }
  UpdateScalars update_scalars(int64_t param_t) const override;
  std::vector<std::string> state_names() const override { return {}; }
};

}  // namespace chainer::optimizers
