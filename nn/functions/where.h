/// @file
/// Elementwise choice, as chainer.functions.where: `condition ? x : y`. CONDITION plays numpy's
/// bool array; here that is a uint8 mask (nonzero is true), which the comparison ops of
/// core/ops/ops.h (ops::greater and the others) return. X and Y share a dtype; the three broadcast
/// together (numpy rules). X and Y are differentiable, CONDITION is data.
#pragma once
#include "autograd/variable.h"

namespace chainer::functions {

/// Elements of X where CONDITION (uint8) is nonzero, of Y elsewhere.
Variable where(const Variable& condition, const Variable& x, const Variable& y);

}  // namespace chainer::functions
