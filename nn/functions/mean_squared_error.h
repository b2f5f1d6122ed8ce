/// @file
/// Mean squared error, as chainer.functions.mean_squared_error: `mean((x0 - x1)^2)` over all
/// elements of two arrays of the same shape; both inputs are differentiable.
#pragma once
#include "autograd/variable.h"

namespace chainer::functions {

/// `mean((x0 - x1)^2)` over all elements.
Variable mean_squared_error(const Variable& x0, const Variable& x1);

}  // namespace chainer::functions
