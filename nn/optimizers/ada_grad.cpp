#include "nn/optimizers/ada_grad.h"

namespace chainer::optimizers {

AdaGrad::AdaGrad(double learning_rate, double e) : lr(learning_rate), eps(e) {
  if (!(learning_rate > 0)) throw Error(str("AdaGrad: lr must be > 0, got ", learning_rate));
  if (!(e > 0)) throw Error(str("AdaGrad: eps must be > 0, got ", e));
}

UpdateScalars AdaGrad::update_scalars(int64_t) const { return {.lr = lr, .eps = eps}; }

}  // namespace chainer::optimizers
