/// @file
/// Fully connected layers, as chainer.functions.linear: `y = x W^T + b` with x (N, in) -- or
/// (N, ...) flattened to (N, in), like Chainer's n_batch_axes=1 -- W (out, in) and b (out) or
/// undefined. `linear_relu(x, W, b)` is `relu(linear(x, W, b))` fused: the bias and the ReLU are
/// one pass over the output, and backward masks the gradient once. Results are identical.
#pragma once
#include "autograd/variable.h"

namespace chainer::functions {

/// `x W^T + b`; an undefined B adds no bias.
Variable linear(const Variable& x, const Variable& W, const Variable& b = Variable());
/// `relu(x W^T + b)`, fused.
Variable linear_relu(const Variable& x, const Variable& W, const Variable& b = Variable());

}  // namespace chainer::functions
