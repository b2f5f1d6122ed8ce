/// @file
/// Elementwise activations, as chainer.functions.relu / sigmoid / tanh. Their backward needs only
/// the output, so that is all the graph keeps.
#pragma once
#include "autograd/variable.h"

namespace chainer::functions {

/// `max(x, 0)`, elementwise.
Variable relu(const Variable& x);
/// `1 / (1 + exp(-x))`, elementwise.
Variable sigmoid(const Variable& x);
/// The hyperbolic tangent, elementwise.
Variable tanh(const Variable& x);

}  // namespace chainer::functions
