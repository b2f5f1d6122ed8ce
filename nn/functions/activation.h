/// @file
/// Elementwise activations, as chainer.functions.relu / sigmoid / tanh / leaky_relu / elu /
/// softplus. The backward of the first three needs only the output, so that is all the graph
/// keeps; that of the last three, with their parameter, keeps the input.
#pragma once
#include "autograd/variable.h"

namespace chainer::functions {

/// `max(x, 0)`, elementwise.
Variable relu(const Variable& x);
/// `1 / (1 + exp(-x))`, elementwise.
Variable sigmoid(const Variable& x);
/// The hyperbolic tangent, elementwise.
Variable tanh(const Variable& x);
/// `x >= 0 ? x : slope x`, elementwise (Chainer's leaky_relu, slope 0.2 by default).
Variable leaky_relu(const Variable& x, double slope = 0.2);
/// `x >= 0 ? x : alpha (exp(x) - 1)`, elementwise (Chainer's elu). The gradient at 0 is Chainer's,
/// alpha (its backward takes `x <= 0` as the negative side).
Variable elu(const Variable& x, double alpha = 1.0);
/// `log(1 + exp(beta x)) / beta`, elementwise (Chainer's softplus), computed as
/// `(max(beta x, 0) + log1p(exp(-|beta x|))) / beta` so that no exp overflows; BETA must not be 0.
Variable softplus(const Variable& x, double beta = 1.0);

}  // namespace chainer::functions
