/// @file
/// chainer.functions.cast: X converted to another dtype, differentiable (the gradient is
/// converted back to X's dtype). What mixed precision moves values between float32 and half with
/// (nn/autocast.h).
#pragma once
#include "autograd/variable.h"

namespace chainer::functions {

/// X as DTYPE (a floating dtype), rounded to nearest even; X itself when it has DTYPE already.
Variable cast(const Variable& x, DType dtype);

}  // namespace chainer::functions
