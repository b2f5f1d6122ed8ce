// Tests of take and scatter_add_ (core/ops/indexing.cpp): numpy.take and numpy.add.at along an
// axis, negative and repeated indices, integer dtypes, the errors.
#include <catch2/catch.hpp>

#include <cstdint>

#include "core/ops/ops.h"
#include "tests/function_inputs.h"

using namespace chainer;
using namespace chainer::testing;

TEST_CASE("take and scatter_add_: numpy.take and numpy.add.at along an axis", "[ops][get_item]") {
  const Tensor a = Tensor::arange(12, DType::Float64).reshape({3, 4});
  const Tensor idx = Tensor::from_vector<int64_t>({3, -4, 3});
  CHECK(values(ops::take(a, idx, 1)) == std::vector<double>{3, 0, 3, 7, 4, 7, 11, 8, 11});
  CHECK(ops::take(a, Tensor::from_vector<int32_t>({2, 0, 1, 1}, {2, 2}), 0).shape() == Shape{2, 2, 4});
  CHECK(values(ops::take(a.transpose(), Tensor::from_vector<int64_t>({1}), 0)) == std::vector<double>{1, 5, 9});
  const Tensor ints = ops::take(Tensor::from_vector<int32_t>({5, 6, 7}), Tensor::from_vector<int64_t>({-1, 0}), 0);
  CHECK(ints.dtype() == DType::Int32);
  CHECK(ints.to_vector<int32_t>() == std::vector<int32_t>{7, 5});
  CHECK(ops::take(a, Tensor::from_vector<int64_t>({}), 1).shape() == Shape{3, 0});

  Tensor acc = Tensor::zeros({3, 4}, DType::Float64);
  ops::scatter_add_(acc, idx, 1, Tensor::ones({3, 3}, DType::Float64));
  CHECK(values(acc) == std::vector<double>{1, 0, 0, 2, 1, 0, 0, 2, 1, 0, 0, 2});
  ops::scatter_add_(acc, Tensor::from_vector<int64_t>({2, 2}), 0, Tensor::ones({2, 4}, DType::Float64));
  CHECK(values(acc) == std::vector<double>{1, 0, 0, 2, 1, 0, 0, 2, 3, 2, 2, 4});

  REQUIRE_THROWS_WITH(ops::take(a, Tensor::from_vector<int64_t>({0, 4}), 1),
                      Catch::Contains("take: index 4 is out of bounds for axis 1 with size 4"));
  REQUIRE_THROWS_WITH(ops::take(a, Tensor::from_vector<int64_t>({-4}), 0),
                      Catch::Contains("take: index -4 is out of bounds for axis 0 with size 3"));
  REQUIRE_THROWS_WITH(ops::take(a, Tensor::from_vector<double>({0}), 0),
                      Catch::Contains("take: indices have dtype float64 (expected an integer dtype)"));
  REQUIRE_THROWS_WITH(ops::take(a, idx, 2), Catch::Contains("take: axis 2 is out of range"));
  REQUIRE_THROWS_WITH(ops::scatter_add_(acc, idx, 1, Tensor::ones({3, 2}, DType::Float64)),
                      Catch::Contains("scatter_add: values have shape (3, 2) (expected (3, 3)"));
  REQUIRE_THROWS_WITH(ops::scatter_add_(acc, Tensor::from_vector<int64_t>({3}), 0, Tensor::ones({1, 4}, DType::Float64)),
                      Catch::Contains("scatter_add: index 3 is out of bounds for axis 0 with size 3"));
  Tensor strided = Tensor::zeros({4, 3}, DType::Float64).transpose();
  REQUIRE_THROWS_WITH(ops::scatter_add_(strided, idx, 1, Tensor::ones({3, 3}, DType::Float64)),
                      Catch::Contains("scatter_add: the destination must be contiguous"));
}
