// What the tests of the array functions and get_item share: iota, an array whose values are the
// elements' positions (so a result names the elements it took), and expect, a result's shape and
// values against numpy's. Header-only.
#pragma once
#include <catch2/catch.hpp>

#include <vector>

#include "autograd/variable.h"
#include "tests/function_inputs.h"

namespace chainer::testing {

/// 0, 1, ..., n-1 in SHAPE, float64: an element's value is its flat position, so a result names
/// the elements it took.
inline Variable iota(const Shape& shape) {
  return Variable(Tensor::arange(shape_numel(shape), DType::Float64).reshape(shape));
}

/// Shape and values of F(x) for x = iota(SHAPE).
inline void expect(const Variable& y, const Shape& shape, const std::vector<double>& want) {
  CHECK(shape_str(y.shape()) == shape_str(shape));
  CHECK(values(y) == want);
}

}  // namespace chainer::testing
