#include "core/ops/kernels.h"

#include "core/cuda/runtime.h"

namespace chainer {

const Kernels& kernels_for(Device device) {
  if (device.is_cpu()) return cpu::kernel_table();
  return cuda::detail::runtime(device.index).kernels();
}

int update_rule_states(UpdateRule rule) {
  switch (rule) {
#define CHAINER_UPDATE_RULE_STATES(RULE, NAME, STATES) \
  case UpdateRule::RULE: return STATES;
    CHAINER_UPDATE_RULES(CHAINER_UPDATE_RULE_STATES)
#undef CHAINER_UPDATE_RULE_STATES
  }
  return 0;
}

const char* update_rule_name(UpdateRule rule) {
  switch (rule) {
#define CHAINER_UPDATE_RULE_NAME(RULE, NAME, STATES) \
  case UpdateRule::RULE: return NAME;
    CHAINER_UPDATE_RULES(CHAINER_UPDATE_RULE_NAME)
#undef CHAINER_UPDATE_RULE_NAME
  }
  return "?";
}

}  // namespace chainer
