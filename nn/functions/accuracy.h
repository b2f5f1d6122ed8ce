/// @file
/// Classification accuracy, as chainer.functions.accuracy: the fraction of examples whose
/// argmax over axis 1 of Y equals the label in T (int32, y's shape without axis 1), ignoring
/// examples labelled IGNORE_LABEL. Not differentiable: the result has no creator.
#pragma once
#include <cstdint>

#include "autograd/variable.h"

namespace chainer::functions {

/// The fraction of examples of Y (N, C, ...) whose argmax over axis 1 is their label in T.
Variable accuracy(const Variable& y, const Variable& t, int64_t ignore_label = -1);

}  // namespace chainer::functions
