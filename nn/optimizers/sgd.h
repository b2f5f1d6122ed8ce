// Plain stochastic gradient descent: w -= lr * g.
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizers {

class SGD : public Optimizer {
 public:
  explicit SGD(double lr = 0.01);
  double lr;

 protected:
  std::optional<UpdateRule> update_rule() const override { return UpdateRule::SGD; }
  UpdateScalars update_scalars(int64_t param_t) const override;
  std::vector<std::string> state_names() const override { return {}; }
};

}  // namespace chainer::optimizers
