// Tests of the elementwise ops of core/ops/elementwise.cpp on exact values: the comparison masks
// and where broadcast as numpy; maximum, minimum, abs, sign and clip, NaN included; the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/ops/ops.h"
#include "tests/function_inputs.h"

using namespace chainer;
using namespace chainer::testing;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

TEST_CASE("ops: comparison masks and where broadcast as numpy", "[ops][math]") {
  const Tensor a = f64({1, 2, 3, 4, 5, 6}, {2, 3}), b = f64({2, 5, 3}, {3});
  CHECK(ops::equal(a, b).dtype() == DType::UInt8);
  CHECK(values(ops::equal(a, b)) == std::vector<double>{0, 0, 1, 0, 1, 0});
  CHECK(values(ops::not_equal(a, b)) == std::vector<double>{1, 1, 0, 1, 0, 1});
  CHECK(values(ops::less(a, b)) == std::vector<double>{1, 1, 0, 0, 0, 0});
  CHECK(values(ops::less_equal(a, b)) == std::vector<double>{1, 1, 1, 0, 1, 0});
  CHECK(values(ops::greater(a, b)) == std::vector<double>{0, 0, 0, 1, 0, 1});
  CHECK(values(ops::greater_equal(a, b)) == std::vector<double>{0, 0, 1, 1, 1, 1});
  CHECK(values(ops::less(Tensor::from_vector<int32_t>({-3, 7}), Tensor::full({}, 0, DType::Int32))) ==
        std::vector<double>{1, 0});
  CHECK(values(ops::equal(f64({kNaN}, {1}), f64({kNaN}, {1}))) == std::vector<double>{0});

  // Condition (2, 1), x (3,), y 0-d: all three broadcast to (2, 3); any nonzero byte is true.
  const Tensor w = ops::where(mask({7, 0}, {2, 1}), f64({1, 2, 3}, {3}), Tensor::full({}, -1, DType::Float64));
  CHECK(w.shape() == Shape{2, 3});
  CHECK(values(w) == std::vector<double>{1, 2, 3, -1, -1, -1});
  // Non-contiguous operands.
  const Tensor wt = ops::where(ops::greater(a.transpose(), Tensor::full({}, 2.5, DType::Float64)), a.transpose(),
                               ops::neg(a).transpose());
  CHECK(values(wt) == std::vector<double>{-1, 4, -2, 5, 3, 6});

  REQUIRE_THROWS_WITH(ops::where(a, a, a),
                      Catch::Contains("where: the condition has dtype float64 (expected uint8, the boolean dtype"));
  REQUIRE_THROWS_WITH(ops::where(mask({1}, {1}), a, Tensor::zeros({2, 3})),
                      Catch::Contains("where: dtypes differ (float64 and float32)"));
  REQUIRE_THROWS_WITH(ops::where(mask({1, 0}, {2}), a, a),
                      Catch::Contains("where: shapes (2,) and (2, 3) cannot be broadcast together"));
  REQUIRE_THROWS_WITH(ops::greater(a, Tensor::zeros({3})), Catch::Contains("greater: dtypes differ"));
  REQUIRE_THROWS_WITH(ops::equal(a, f64({1, 2}, {2})),
                      Catch::Contains("equal: shapes (2, 3) and (2,) cannot be broadcast together"));
}

TEST_CASE("ops: maximum, minimum, abs, sign and clip, NaN included", "[ops][math]") {
  const Tensor a = f64({1, -2, kNaN, 4, 0}, {5}), b = f64({3, -5, 1, kNaN, 0}, {5});
  const std::vector<double> mx = values(ops::maximum(a, b)), mn = values(ops::minimum(a, b));
  CHECK(mx[0] == 3);
  CHECK(mx[1] == -2);
  CHECK(std::isnan(mx[2]));  // NaN in either operand gives NaN, as numpy.maximum
  CHECK(std::isnan(mx[3]));
  CHECK(mn[0] == 1);
  CHECK(mn[1] == -5);
  CHECK(std::isnan(mn[2]));
  CHECK(std::isnan(mn[3]));
  CHECK(values(ops::maximum(Tensor::from_vector<int32_t>({1, 7}, {2, 1}), Tensor::from_vector<int32_t>({3, 5}))) ==
        std::vector<double>{3, 5, 7, 7});
  CHECK(values(ops::abs(f64({-2, 0, 3.5}, {3}))) == std::vector<double>{2, 0, 3.5});
  const std::vector<double> s = values(ops::sign(f64({-2, 0, 3.5, kNaN}, {4})));
  CHECK(std::vector<double>(s.begin(), s.begin() + 3) == std::vector<double>{-1, 0, 1});
  CHECK(std::isnan(s[3]));
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> c = values(ops::clip(f64({-3, -1, 0, 2, kNaN}, {5}), -1, 1));
  CHECK(std::vector<double>(c.begin(), c.begin() + 4) == std::vector<double>{-1, -1, 0, 1});
  CHECK(std::isnan(c[4]));
  CHECK(values(ops::clip(f64({-3, 5}, {2}), -inf, 1)) == std::vector<double>{-3, 1});
  REQUIRE_THROWS_WITH(ops::clip(a, 1, 0), Catch::Contains("clip: the lower bound 1 is above the upper bound 0"));
  REQUIRE_THROWS_WITH(ops::abs(Tensor::zeros({2}, DType::Int32)),
                      Catch::Contains("abs: dtype int32 is not supported (expected a floating dtype"));
}
