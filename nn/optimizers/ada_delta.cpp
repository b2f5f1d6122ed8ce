#include "nn/optimizers/ada_delta.h"

namespace chainer::optimizers {

AdaDelta::AdaDelta(double r, double e) : rho(r), eps(e) {
  if (!(r >= 0 && r < 1)) throw Error(str("AdaDelta: rho must be in [0, 1), got ", r));
  if (!(e > 0)) throw Error(str("AdaDelta: eps must be > 0, got ", e));
}

UpdateScalars AdaDelta::update_scalars(int64_t) const { return {.eps = eps, .rho = rho}; }

}  // namespace chainer::optimizers
