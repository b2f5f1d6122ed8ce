#include "nn/optimizers/sgd.h"

namespace chainer::optimizers {

SGD::SGD(double learning_rate) : lr(learning_rate) {
  if (!(learning_rate > 0)) throw Error(str("SGD: lr must be > 0, got ", learning_rate));
}

UpdateScalars SGD::update_scalars(int64_t) const { return {.lr = lr}; }

}  // namespace chainer::optimizers
