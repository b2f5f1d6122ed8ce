/// @file
/// Softmax and log-softmax along an axis (default 1, the class axis), as Chainer's. Both are
/// computed stably (the maximum is subtracted first); backward needs only the output.
#pragma once
#include <cstdint>

#include "autograd/variable.h"

namespace chainer::functions {

/// `exp(x) / sum(exp(x))` along AXIS.
Variable softmax(const Variable& x, int64_t axis = 1);
/// `log(softmax(x))` along AXIS, without forming the softmax.
Variable log_softmax(const Variable& x, int64_t axis = 1);

}  // namespace chainer::functions
