/// @file
/// Huber loss, as chainer.functions.huber_loss: with `d = x - t`, `0.5 d^2` where `|d| <= delta`
/// and `delta (|d| - 0.5 delta)` elsewhere, elementwise over x and t of one shape and float
/// dtype. REDUCE "sum_along_second_axis" sums over axis 1 (x needs at least 2 dimensions);
/// "no" returns the elementwise losses. The gradient is `clip(d, -delta, delta)` for x and its
/// negation for t. DELTA must be positive (Chainer fails on others in backward, clipping to an
/// empty interval).
#pragma once
#include <string>

#include "autograd/variable.h"

namespace chainer::functions {

/// The Huber loss of X against T with threshold DELTA, reduced as REDUCE says.
Variable huber_loss(const Variable& x, const Variable& t, double delta,
                    const std::string& reduce = "sum_along_second_axis");

}  // namespace chainer::functions
