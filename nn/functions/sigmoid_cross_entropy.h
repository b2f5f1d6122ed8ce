/// @file
/// Sigmoid cross entropy, as chainer.functions.sigmoid_cross_entropy: x holds logits, t int32
/// labels of x's shape, each 0 or 1, or -1 to ignore that element (labels are not checked
/// otherwise, as in Chainer). Stable: `log1p(exp(-|x|)) - x * (t - (x >= 0))` per element.
/// REDUCE "mean" sums the elements' losses and divides by the number not ignored (at least 1)
/// when NORMALIZE, else by the batch size `x.shape[0]` (at least 1); "no" returns the
/// elementwise losses (0 where ignored) and ignores NORMALIZE. Differentiable in x only.
#pragma once
#include <string>

#include "autograd/variable.h"

namespace chainer::functions {

/// The cross entropy of `sigmoid(x)` against binary labels T, reduced as REDUCE says.
Variable sigmoid_cross_entropy(const Variable& x, const Variable& t, bool normalize = true,
                               const std::string& reduce = "mean");

}  // namespace chainer::functions
