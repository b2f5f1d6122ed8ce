/// @file
/// Weight initializers, as chainer.initializers. Fan-in is the product of all axes but the
/// first (W of a Linear link is (out, in)). Draws come from GEN, or the default generator.
#pragma once
#include "core/random.h"

namespace chainer::initializers {

/// LeCunNormal: normal draws with standard deviation `scale * sqrt(1 / fan_in)`.
Tensor lecun_normal(const Shape& shape, double scale = 1.0, DType dtype = DType::Float32, Generator* gen = nullptr);
/// GlorotUniform: uniform draws in `[-s, s)`, `s = scale * sqrt(6 / (fan_in + fan_out))`.
Tensor glorot_uniform(const Shape& shape, double scale = 1.0, DType dtype = DType::Float32, Generator* gen = nullptr);
/// Normal: draws with mean 0 and standard deviation SCALE.
Tensor normal(const Shape& shape, double scale = 0.05, DType dtype = DType::Float32, Generator* gen = nullptr);
/// Constant: every element is VALUE.
Tensor constant(const Shape& shape, double value, DType dtype = DType::Float32);

}  // namespace chainer::initializers
