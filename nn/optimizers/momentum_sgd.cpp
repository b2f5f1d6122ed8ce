#include "nn/optimizers/momentum_sgd.h"

#include "core/update_ops.h"

namespace chainer::optimizers {

MomentumSGD::MomentumSGD(double learning_rate, double m) : lr(learning_rate), momentum(m) {
  if (!(learning_rate > 0)) throw Error(str("MomentumSGD: lr must be > 0, got ", learning_rate));
  if (!(m >= 0 && m < 1)) throw Error(str("MomentumSGD: momentum must be in [0, 1), got ", m));
}

void MomentumSGD::update_one(Variable& param, TensorMap& state) {
  auto [it, fresh] = state.try_emplace("v");
  if (fresh) it->second = Tensor::zeros(param.shape(), param.dtype());
  ops::momentum_sgd_update_(param.data(), param.grad(), it->second, lr, momentum);
}

}  // namespace chainer::optimizers
