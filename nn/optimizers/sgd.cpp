#include "nn/optimizers/sgd.h"

#include "core/ops.h"

namespace chainer::optimizers {

SGD::SGD(double learning_rate) : lr(learning_rate) {
  if (!(learning_rate > 0)) throw Error(str("SGD: lr must be > 0, got ", learning_rate));
}

void SGD::update_one(Variable& param, TensorMap&) { ops::axpy_(param.data(), -lr, param.grad()); }

}  // namespace chainer::optimizers
