#include "nn/optimizers/rmsprop.h"

namespace chainer::optimizers {

RMSprop::RMSprop(double learning_rate, double a, double e, bool inside)
    : lr(learning_rate), alpha(a), eps(e), eps_inside_sqrt(inside) {
  if (!(learning_rate > 0)) throw Error(str("RMSprop: lr must be > 0, got ", learning_rate));
  if (!(a >= 0 && a < 1)) throw Error(str("RMSprop: alpha must be in [0, 1), got ", a));
  if (!(e > 0)) throw Error(str("RMSprop: eps must be > 0, got ", e));
}

void RMSprop::update() {
  require_eps_representable("RMSprop", eps);
  Optimizer::update();
}

UpdateScalars RMSprop::update_scalars(int64_t) const {
  return {.lr = lr, .eps = eps, .alpha = alpha, .eps_inside_sqrt = eps_inside_sqrt};
}

}  // namespace chainer::optimizers
