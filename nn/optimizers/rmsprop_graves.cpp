#include "nn/optimizers/rmsprop_graves.h"

namespace chainer::optimizers {

RMSpropGraves::RMSpropGraves(double learning_rate, double a, double m, double e)
    : lr(learning_rate), alpha(a), momentum(m), eps(e) {
  if (!(learning_rate > 0)) throw Error(str("RMSpropGraves: lr must be > 0, got ", learning_rate));
  if (!(a >= 0 && a < 1)) throw Error(str("RMSpropGraves: alpha must be in [0, 1), got ", a));
  if (!(m >= 0 && m < 1)) throw Error(str("RMSpropGraves: momentum must be in [0, 1), got ", m));
  if (!(e > 0)) throw Error(str("RMSpropGraves: eps must be > 0, got ", e));
}

UpdateScalars RMSpropGraves::update_scalars(int64_t) const {
  return {.lr = lr, .eps = eps, .momentum = momentum, .alpha = alpha};
}

}  // namespace chainer::optimizers
