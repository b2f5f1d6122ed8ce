// Array manipulation, as chainer.functions.reshape / transpose / concat / stack. Outputs are
// contiguous; reshape of a contiguous input shares its memory, as numpy's.
#pragma once
#include <cstdint>
#include <vector>

#include "autograd/variable.h"

namespace chainer::functions {

Variable reshape(const Variable& x, const Shape& shape);  // one extent may be -1
Variable transpose(const Variable& x, const std::vector<int64_t>& axes = {});  // default reverses the axes
Variable concat(const std::vector<Variable>& xs, int64_t axis = 1);  // Chainer's default axis is 1
Variable stack(const std::vector<Variable>& xs, int64_t axis = 0);   // joins along a new axis

}  // namespace chainer::functions
