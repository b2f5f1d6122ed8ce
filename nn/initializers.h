// Weight initializers, as chainer.initializers. Fan-in is the product of all axes but the
// first (W of a Linear link is (out, in)). Draws come from GEN, or the default generator.
#pragma once
#include "core/random.h"

namespace chainer::initializers {

Tensor lecun_normal(const Shape& shape, double scale = 1.0, DType dtype = DType::Float32, Generator* gen = nullptr);
Tensor glorot_uniform(const Shape& shape, double scale = 1.0, DType dtype = DType::Float32, Generator* gen = nullptr);
Tensor normal(const Shape& shape, double scale = 0.05, DType dtype = DType::Float32, Generator* gen = nullptr);
Tensor constant(const Shape& shape, double value, DType dtype = DType::Float32);

}  // namespace chainer::initializers
