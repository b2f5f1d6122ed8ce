#include "nn/optimizers/smorms3.h"

namespace chainer::optimizers {

SMORMS3::SMORMS3(double learning_rate, double e) : lr(learning_rate), eps(e) {
  if (!(learning_rate > 0)) throw Error(str("SMORMS3: lr must be > 0, got ", learning_rate));
  if (!(e > 0)) throw Error(str("SMORMS3: eps must be > 0, got ", e));
}

UpdateScalars SMORMS3::update_scalars(int64_t) const { return {.lr = lr, .eps = eps}; }

}  // namespace chainer::optimizers
