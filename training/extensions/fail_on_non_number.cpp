#include "training/extensions/fail_on_non_number.h"

#include "nn/loss_scaler.h"
#include "training/trainer.h"

namespace chainer::training::extensions {

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
