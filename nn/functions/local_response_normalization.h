/// @file
/// Local response normalization across channels, as chainer.functions.local_response_normalization
/// (AlexNet's): `y = x / (k + alpha * sum of x^2 over the channels [c - n/2, c + n/2])^beta`, the
/// channels on axis 1 of x (N, C, ...), the window clipped at the first and last channel. The
/// window is Chainer's CPU one: n + 1 channels wide for an even n (its GPU kernel takes n).
#pragma once
#include <cstdint>

#include "autograd/variable.h"

namespace chainer::functions {

/// Normalizes X (float32 or float64, at least 2-D) by the sum of squares of its N neighbouring
/// channels; N at least 1.
Variable local_response_normalization(const Variable& x, int64_t n = 5, double k = 2, double alpha = 1e-4,
                                      double beta = 0.75);

}  // namespace chainer::functions
