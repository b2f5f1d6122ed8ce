/// @file
/// Matrix product of 2-D variables, as chainer.functions.matmul: `op(a) @ op(b)`, where op
/// transposes when TRANSA / TRANSB is set.
#pragma once
#include "autograd/variable.h"

namespace chainer::functions {

/// `op(a) @ op(b)`, op transposing when TRANSA / TRANSB is set.
Variable matmul(const Variable& a, const Variable& b, bool transa = false, bool transb = false);

}  // namespace chainer::functions
