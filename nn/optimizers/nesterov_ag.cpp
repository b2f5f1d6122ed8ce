#include "nn/optimizers/nesterov_ag.h"

namespace chainer::optimizers {

NesterovAG::NesterovAG(double learning_rate, double m) : lr(learning_rate), momentum(m) {
  if (!(learning_rate > 0)) throw Error(str("NesterovAG: lr must be > 0, got ", learning_rate));
  if (!(m >= 0 && m < 1)) throw Error(str("NesterovAG: momentum must be in [0, 1), got ", m));
}

UpdateScalars NesterovAG::update_scalars(int64_t) const { return {.lr = lr, .momentum = momentum}; }

}  // namespace chainer::optimizers
