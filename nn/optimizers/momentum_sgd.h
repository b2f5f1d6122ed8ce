// SGD with momentum, as chainer.optimizers.MomentumSGD: v = momentum * v - lr * g; w += v.
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizers {

class MomentumSGD : public Optimizer {
 public:
  explicit MomentumSGD(double lr = 0.01, double momentum = 0.9);
  double lr, momentum;

 protected:
  std::optional<UpdateRule> update_rule() const override { return UpdateRule::MomentumSGD; }
  UpdateScalars update_scalars(int64_t param_t) const override;
  std::vector<std::string> state_names() const override { return {"v"}; }
};

}  // namespace chainer::optimizers
