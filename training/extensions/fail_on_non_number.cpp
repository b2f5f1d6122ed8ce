#include "training/extensions/fail_on_non_number.h"

#include <cmath>

#include "core/ops/ops.h"
#include "training/trainer.h"

namespace chainer::training::extensions {

namespace {
// 0 * x is NaN exactly where x is NaN or infinite, so the sum is finite exactly when every
// element is: one reduction on the parameter's device and one number read back.
bool all_finite(const Tensor& t) {
  if (t.numel() == 0) return true;
  return std::isfinite(ops::sum(ops::mul_scalar(t, 0.0)).item_double());
}
}  // namespace

void FailOnNonNumber::operator()(Trainer& trainer) {
  for (const auto& [name, optimizer] : trainer.updater().get_all_optimizers()) {
    for (const auto& [param_name, param] : optimizer->target().namedparams()) {
      if (!param.data().defined() || all_finite(param.data())) continue;
      throw Error(str("FailOnNonNumber: parameters in optimizer '", name, "' diverge: ", param_name,
                      " holds NaN or infinity at iteration ", trainer.updater().iteration(),
                      "; training stopped (lower the learning rate, or clip the gradients)"));
    }
  }
}

}  // namespace chainer::training::extensions
