/// @file
/// Array manipulation, as chainer.functions.reshape / transpose / concat / stack. Outputs are
/// contiguous; reshape of a contiguous input shares its memory, as numpy's.
#pragma once
#include <cstdint>
#include <vector>

#include "autograd/variable.h"

namespace chainer::functions {

/// X with SHAPE, of the same number of elements; one extent may be -1.
Variable reshape(const Variable& x, const Shape& shape);
/// X with its axes permuted by AXES; the default reverses the axes.
Variable transpose(const Variable& x, const std::vector<int64_t>& axes = {});
/// XS joined along the existing AXIS; Chainer's default axis is 1.
Variable concat(const std::vector<Variable>& xs, int64_t axis = 1);
/// XS, of one shape, joined along a new axis AXIS.
Variable stack(const std::vector<Variable>& xs, int64_t axis = 0);

}  // namespace chainer::functions
