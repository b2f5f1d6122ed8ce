#include "distributed/functions/delegate_variable.h"

namespace chainermn::functions::detail {

// No kernel ever reads a placeholder, so it lives on the CPU whatever the device of the rest.
chainer::Variable placeholder() { return chainer::Variable(chainer::Tensor::zeros({}), true, "placeholder"); }

chainer::Tensor delegate_value(chainer::Device device) { return chainer::Tensor::zeros({}, chainer::DType::Float32, device); }

}  // namespace chainermn::functions::detail
