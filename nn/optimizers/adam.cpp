#include "nn/optimizers/adam.h"

#include <cmath>

#include "core/ops/update_ops.h"

namespace chainer::optimizers {

Adam::Adam(double a, double b1, double b2, double e, double et, double wd, bool ams)
    : alpha(a), beta1(b1), beta2(b2), eps(e), eta(et), weight_decay_rate(wd), amsgrad(ams) {
  if (!(a > 0)) throw Error(str("Adam: alpha must be > 0, got ", a));
  if (!(b1 >= 0 && b1 < 1)) throw Error(str("Adam: beta1 must be in [0, 1), got ", b1));
  if (!(b2 >= 0 && b2 < 1)) throw Error(str("Adam: beta2 must be in [0, 1), got ", b2));
  if (!(e > 0)) throw Error(str("Adam: eps must be > 0, got ", e));
  if (!(wd >= 0)) throw Error(str("Adam: weight_decay_rate must be >= 0, got ", wd));
}

void Adam::update() {
  require_eps_representable("Adam", eps);
  Optimizer::update();
}

double Adam::lr() const { return lr_at(Optimizer::t()); }

double Adam::lr_at(int64_t steps) const {
  const double t = double(std::max<int64_t>(steps, 1));
  return alpha * std::sqrt(1.0 - std::pow(beta2, t)) / (1.0 - std::pow(beta1, t));
}

UpdateScalars Adam::update_scalars(int64_t param_t) const {
  return {.lr = lr_at(param_t), .beta1 = beta1, .beta2 = beta2, .eps = eps, .eta = eta,
          .weight_decay_rate = weight_decay_rate};
}

}  // namespace chainer::optimizers
