// Plain stochastic gradient descent: w -= lr * g.
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizers {

class SGD : public Optimizer {
 public:
  explicit SGD(double lr = 0.01);
  double lr;

 protected:
  void update_one(Variable& param, TensorMap& state) override;
  std::vector<std::string> state_names() const override { return {}; }
  bool elementwise() const override { return true; }
};

}  // namespace chainer::optimizers
