/// @file
/// Reductions, as chainer.functions.sum / mean / average: over all elements when AXIS is empty,
/// else over one axis (negative counts from the end); KEEPDIMS keeps the reduced axis with extent 1.
#pragma once
#include <cstdint>
#include <optional>

#include "autograd/variable.h"

namespace chainer::functions {

/// The sum of X over AXIS, or over all elements.
Variable sum(const Variable& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
/// The mean of X over AXIS, or over all elements.
Variable mean(const Variable& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
/// Weighted mean: `sum(x * weights, axis) / sum(weights)`. With AXIS, WEIGHTS is 1-D with
/// `x.shape[axis]` entries; without, it has x's shape. Undefined WEIGHTS gives `mean(x, axis)`.
/// The weights are differentiable too.
Variable average(const Variable& x, std::optional<int64_t> axis = std::nullopt, const Variable& weights = Variable(),
                 bool keepdims = false);

}  // namespace chainer::functions
