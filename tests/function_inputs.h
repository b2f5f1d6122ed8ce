// What the tests of differentiable functions share: float64 inputs made to keep finite
// differences away from kinks and ties or written out, masks, labels, values read back, and
// check_backward as a test assertion. Header-only: included by each test binary that checks
// functions (and by the tests of the ops under them).
#pragma once
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/gradient_check.h"
#include "core/util/random.h"
#include "core/tensor/tensor.h"

namespace chainer::testing {

/// Uniform values in [LO, HI) of DTYPE (float64 by default: check_backward converts anyway).
inline Tensor uniform(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0,
                      DType dtype = DType::Float64) {
  Generator gen(seed);
  return random::uniform(shape, lo, hi, dtype, &gen);
}

/// Float64 values with |x| in [0.1, 1): kinks at 0 (ReLU, abs) stay far from the
/// finite-difference steps and from float32 rounding.
inline Tensor away_from_zero(const Shape& shape, uint64_t seed) {
  Tensor t = uniform(shape, seed);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = (p[i] < 0 ? -0.1 : 0.1) + 0.9 * p[i];
  return t;
}

/// Distinct float64 values 0.1 apart in a random order, shifted by OFFSET: maxima without ties,
/// and (with offsets 0 and 0.05) clip bounds, Huber kinks and a second array 0.05 or more away.
inline Tensor spaced(const Shape& shape, uint64_t seed, double offset = 0.0) {
  Generator gen(seed);
  const int64_t n = shape_numel(shape);
  std::vector<double> v;
  for (int64_t k : gen.permutation(n)) v.push_back(0.1 * double(k - n / 2) + offset);
  return Tensor::from_vector(v, shape);
}

/// Int32 labels, 1-D or of SHAPE.
inline Tensor labels(const std::vector<int32_t>& values, const Shape& shape = {}) {
  return shape.empty() ? Tensor::from_vector(values) : Tensor::from_vector(values, shape);
}

/// Float64 VALUES in SHAPE, as written.
inline Tensor f64(const std::vector<double>& values, const Shape& shape) { return Tensor::from_vector(values, shape); }

/// A uint8 mask (a condition of where, as the comparison ops make them) of VALUES in SHAPE.
inline Tensor mask(const std::vector<uint8_t>& values, const Shape& shape) { return Tensor::from_vector(values, shape); }

/// The values of T (or of V's data), as doubles in row-major order.
inline std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
inline std::vector<double> values(const Variable& v) { return values(v.data()); }

/// Runs check_backward and turns its exception into a test failure with the message and the
/// input shapes.
inline void check(const std::function<Variable(const std::vector<Variable>&)>& f, const std::vector<Tensor>& inputs,
                  GradientCheckOptions options = {}) {
  INFO("input shapes: " << [&] {
    std::string s;
    for (const Tensor& t : inputs) s += shape_str(t.shape()) + " ";
    return s;
  }());
  REQUIRE_NOTHROW(check_backward(f, inputs, options));
}

}  // namespace chainer::testing
