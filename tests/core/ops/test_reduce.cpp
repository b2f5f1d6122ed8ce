// Tests of the reductions of core/ops/reduce.cpp: min, argmin, amax and amin over one and several
// axes against a naive reference, keepdims, a non-contiguous input, the errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/ops/ops.h"
#include "core/util/parallel.h"
#include "tests/function_inputs.h"

using namespace chainer;
using namespace chainer::testing;

TEST_CASE("ops: min, argmin, amax and amin over several axes", "[ops][math][reduction]") {
  const Tensor x = spaced({3, 4, 5}, 1);
  // A naive reference: the extreme over axes 0 and 2 for each index of axis 1.
  std::vector<double> want_max(4, -1e9), want_min(4, 1e9);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 5; ++k) {
        const double v = x.data<double>()[(i * 4 + j) * 5 + k];
        want_max[size_t(j)] = std::max(want_max[size_t(j)], v);
        want_min[size_t(j)] = std::min(want_min[size_t(j)], v);
      }
  CHECK(values(ops::amax(x, {0, 2})) == want_max);
  CHECK(values(ops::amin(x, {-1, 0})) == want_min);
  CHECK(ops::amax(x, {0, 2}, true).shape() == Shape{1, 4, 1});
  CHECK(values(ops::amax(x.transpose(), {2, 0})) == want_max);  // a non-contiguous input
  CHECK(ops::amax(x, {}).item_double() == Approx(2.9));  // every axis: 0.1 * (59 - 30)
  CHECK(ops::amin(x, {}).item_double() == Approx(-3.0));
  CHECK(values(ops::amax(x, {1})) == values(ops::max(x, 1)));

  const Tensor m = f64({3, 1, 1, 2, 0, 5}, {2, 3});
  CHECK(values(ops::min(m, 1)) == std::vector<double>{1, 0});
  CHECK(values(ops::min(m, 0, true)) == std::vector<double>{2, 0, 1});
  CHECK(ops::min(m, 0, true).shape() == Shape{1, 3});
  CHECK(values(ops::argmin(m, 1)) == std::vector<double>{1, 1});  // the first of the tied minima
  CHECK(ops::argmin(m, 1).dtype() == DType::Int32);
  CHECK(values(ops::argmin(m, -2)) == std::vector<double>{1, 1, 0});

  REQUIRE_THROWS_WITH(ops::amax(x, {1, -2}), Catch::Contains("amax: axis -2 appears twice"));
  REQUIRE_THROWS_WITH(ops::amin(x, {3}), Catch::Contains("amin: axis 3 is out of range for an array of 3 dimensions"));
  REQUIRE_THROWS_WITH(ops::amax(Tensor::zeros({2, 0, 3}), {1, 2}),
                      Catch::Contains("amax: cannot reduce an axis of extent 0"));
  REQUIRE_THROWS_WITH(ops::argmin(Tensor::zeros({2, 0}), 1),
                      Catch::Contains("argmin: cannot reduce an axis of extent 0"));
}

TEST_CASE("ops: a sum down to one value is exact on integers and the same for any thread count",
          "[ops][math][reduction]") {
  // 200003 elements: several blocks of the parallel whole sum and a tail of lanes.
  const int64_t n = 200003;
  CHECK(ops::sum(Tensor::arange(n, DType::Float64)).item_double() == double(n) * double(n - 1) / 2);
  // float32's sum is the float64 total rounded to float32 once.
  CHECK(ops::sum(Tensor::arange(n, DType::Float32)).item_double() == double(float(double(n) * double(n - 1) / 2)));
  const Tensor x = uniform({n}, 7, -1, 1, DType::Float32);
  const int threads = num_threads();
  set_num_threads(1);
  const double one = ops::sum(x).item_double();
  set_num_threads(2);
  const double two = ops::sum(x).item_double();
  set_num_threads(threads);
  CHECK(one == two);
  CHECK(float(one) == float(ops::sum(x.astype(DType::Float64)).item_double()));
}
