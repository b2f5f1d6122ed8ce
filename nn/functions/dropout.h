/// @file
/// Dropout, as chainer.functions.dropout: while chainer::config::train() is true, each element
/// is zeroed with probability RATIO and the rest are scaled by `1 / (1 - ratio)`; otherwise x is
/// returned unchanged. The mask comes from GEN, or the default generator when null: passing a
/// generator reseeded before each call reproduces the mask (gradient checks rely on it).
#pragma once
#include "autograd/variable.h"
#include "core/util/random.h"

namespace chainer::functions {

/// X with elements zeroed with probability RATIO in training, the rest scaled up.
Variable dropout(const Variable& x, double ratio = 0.5, Generator* gen = nullptr);

}  // namespace chainer::functions
