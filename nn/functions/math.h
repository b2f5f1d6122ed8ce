/// @file
/// Elementwise math, as chainer.functions.exp / log / sqrt / square / absolute / clip / maximum /
/// minimum. As in Chainer, the inputs must be float32 or float64; maximum and minimum broadcast
/// their operands (numpy rules) and take one dtype. Each keeps for backward only what its
/// gradient reads (the output for exp and sqrt, the input for log, square and absolute).
#pragma once
#include <optional>

#include "autograd/variable.h"

namespace chainer::functions {

/// `e^x`, elementwise.
Variable exp(const Variable& x);
/// The natural logarithm, elementwise.
Variable log(const Variable& x);
/// The square root, elementwise.
Variable sqrt(const Variable& x);
/// `x * x`, elementwise.
Variable square(const Variable& x);
/// `|x|`, elementwise; its gradient is `sign(x)`, so 0 at 0 (Chainer's AbsoluteGrad).
Variable absolute(const Variable& x);
/// absolute(x): what Python's `abs(x)` gives for a Chainer Variable.
Variable abs(const Variable& x);
/// X clipped to [X_MIN, X_MAX]; one bound may be absent (std::nullopt: that side is not
/// clipped), not both, and X_MIN < X_MAX. The gradient passes where `x_min <= x <= x_max`, so
/// it is 1 at the bounds themselves (Chainer's ClipGrad).
Variable clip(const Variable& x, std::optional<double> x_min, std::optional<double> x_max);
/// The larger of X1 and X2, elementwise and broadcast. On ties the gradient goes to X1 only
/// (Chainer: `x1 >= x2` picks x1).
Variable maximum(const Variable& x1, const Variable& x2);
/// The smaller of X1 and X2, elementwise and broadcast. On ties the gradient goes to X1 only
/// (Chainer: `x1 <= x2` picks x1).
Variable minimum(const Variable& x1, const Variable& x2);

}  // namespace chainer::functions
