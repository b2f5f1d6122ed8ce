#include "nn/optimizers/momentum_sgd.h"

namespace chainer::optimizers {

MomentumSGD::MomentumSGD(double learning_rate, double m) : lr(learning_rate), momentum(m) {
  if (!(learning_rate > 0)) throw Error(str("MomentumSGD: lr must be > 0, got ", learning_rate));
  if (!(m >= 0 && m < 1)) throw Error(str("MomentumSGD: momentum must be in [0, 1), got ", m));
}

UpdateScalars MomentumSGD::update_scalars(int64_t) const { return {.lr = lr, .momentum = momentum}; }

}  // namespace chainer::optimizers
