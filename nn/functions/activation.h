// Elementwise activations, as chainer.functions.relu / sigmoid / tanh. Their backward needs only
// the output, so that is all the graph keeps.
#pragma once
#include "autograd/variable.h"

namespace chainer::functions {

Variable relu(const Variable& x);
Variable sigmoid(const Variable& x);
Variable tanh(const Variable& x);

}  // namespace chainer::functions
