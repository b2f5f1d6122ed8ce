#include "core/kernels.h"

#include "core/cuda/runtime.h"

namespace chainer {

const Kernels& kernels_for(Device device) {
  if (device.is_cpu()) return cpu::kernel_table();
  return cuda::detail::runtime(device.index).kernels();
}

int update_rule_states(UpdateRule rule) {
  switch (rule) {
    case UpdateRule::SGD: return 0;
    case UpdateRule::MomentumSGD:
    case UpdateRule::AdaGrad:
    case UpdateRule::RMSprop:
    case UpdateRule::NesterovAG: return 1;
    case UpdateRule::Adam:
    case UpdateRule::AdaDelta: return 2;
    case UpdateRule::AMSGrad:
    case UpdateRule::RMSpropGraves:
    case UpdateRule::SMORMS3: return 3;
  }
  return 0;
}

const char* update_rule_name(UpdateRule rule) {
  switch (rule) {
    case UpdateRule::SGD: return "sgd";
    case UpdateRule::MomentumSGD: return "momentum_sgd";
    case UpdateRule::Adam: return "adam";
    case UpdateRule::AMSGrad: return "ams_grad";
    case UpdateRule::AdaGrad: return "ada_grad";
    case UpdateRule::RMSprop: return "rmsprop";
    case UpdateRule::AdaDelta: return "ada_delta";
    case UpdateRule::NesterovAG: return "nesterov_ag";
    case UpdateRule::RMSpropGraves: return "rmsprop_graves";
    case UpdateRule::SMORMS3: return "smorms3";
  }
  return "?";
}

}  // namespace chainer
