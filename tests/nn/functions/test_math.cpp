// Tests of the elementwise math (nn/functions/math.h): exp, log, sqrt, square, absolute, clip,
// maximum and minimum against finite differences in float64 kept away from the kinks, their
// values and their gradients at the kinks (abs at 0, clip's bounds, ties), the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <utility>

#include "autograd/function_node.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/math_checks.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Shapes with odd extents, extents of 1 and a 0-d array.
const std::vector<Shape> kShapes = {{3, 4}, {2, 3, 5}, {5}, {1, 3}, {3, 1, 2}, {}};
}  // namespace

TEST_CASE("exp, log, sqrt, square, absolute: gradients", "[functions][math]") {
  Generator gen(1);
  std::vector<Shape> shapes = kShapes;
  for (int trial = 0; trial < 3; ++trial) shapes.push_back({1 + int64_t(gen.below(5)), 1 + int64_t(gen.below(5))});
  uint64_t seed = 10;
  for (const Shape& s : shapes) {
    check([](const Vars& v) { return F::exp(v[0]); }, {uniform(s, ++seed, -2, 2)});
    check([](const Vars& v) { return F::log(v[0]); }, {uniform(s, ++seed, 0.2, 3)});
    check([](const Vars& v) { return F::sqrt(v[0]); }, {uniform(s, ++seed, 0.2, 3)});
    check([](const Vars& v) { return F::square(v[0]); }, {uniform(s, ++seed, -2, 2)});
    check([](const Vars& v) { return F::absolute(v[0]); }, {away_from_zero(s, ++seed)});
    check([](const Vars& v) { return F::abs(v[0]); }, {away_from_zero(s, ++seed)});
  }
}

TEST_CASE("exp, log, sqrt, square, absolute: values, the gradient of abs at 0, errors", "[functions][math]") {
  const Variable x(f64({-2, 0, 0.5, 4}, {2, 2}));
  CHECK_THAT(values(F::exp(x)), near({std::exp(-2.0), 1, std::exp(0.5), std::exp(4.0)}));
  CHECK(F::exp(x).shape() == Shape{2, 2});
  CHECK_THAT(values(F::log(Variable(f64({1, std::exp(2.0), 0.5}, {3})))),
             near({0, 2, std::log(0.5)}));
  CHECK_THAT(values(F::sqrt(Variable(f64({4, 2, 0}, {3})))), near({2, std::sqrt(2.0), 0}));
  CHECK(values(F::square(x)) == std::vector<double>{4, 0, 0.25, 16});
  CHECK(values(F::abs(x)) == std::vector<double>{2, 0, 0.5, 4});
  // sign(x): 0 at 0, as Chainer's AbsoluteGrad.
  CHECK(grad_of([](const Variable& v) { return F::absolute(v); }, f64({-2, 0, 3}, {3}), f64({1, 1, 1}, {3})) ==
        std::vector<double>{-1, 0, 1});
  CHECK(F::exp(Variable(x.data(), true)).creator()->name() == "Exp");
  CHECK(F::abs(Variable(x.data(), true)).creator()->name() == "Absolute");

  const Variable i(Tensor::zeros({2}, DType::Int32));
  REQUIRE_THROWS_WITH(F::exp(i), Catch::Contains("exp: dtype int32 is not supported (expected a floating dtype"));
  REQUIRE_THROWS_WITH(F::log(i), Catch::Contains("log: dtype int32 is not supported"));
  REQUIRE_THROWS_WITH(F::absolute(i), Catch::Contains("abs: dtype int32 is not supported"));
  REQUIRE_THROWS_WITH(F::sqrt(Variable()), Catch::Contains("sqrt: the input is undefined"));
}

TEST_CASE("clip: gradients away from the bounds, one bound absent", "[functions][math]") {
  uint64_t seed = 30;
  for (const Shape& s : kShapes) {
    // Values k/10 + 0.05: never within 0.05 of the bounds below.
    check([](const Vars& v) { return F::clip(v[0], -0.3, 0.2); }, {spaced(s, ++seed, 0.05)});
    check([](const Vars& v) { return F::clip(v[0], std::nullopt, 0.2); }, {spaced(s, ++seed, 0.05)});
    check([](const Vars& v) { return F::clip(v[0], -0.3, std::nullopt); }, {spaced(s, ++seed, 0.05)});
  }
}

TEST_CASE("clip: values, gradient 1 at the bounds, errors", "[functions][math]") {
  const Tensor x = f64({-1, -0.5, 0, 0.5, 1}, {5}), ones = f64({1, 1, 1, 1, 1}, {5});
  CHECK(values(F::clip(Variable(x), -0.5, 0.5)) == std::vector<double>{-0.5, -0.5, 0, 0.5, 0.5});
  CHECK(values(F::clip(Variable(x), std::nullopt, 0.5)) == std::vector<double>{-1, -0.5, 0, 0.5, 0.5});
  CHECK(values(F::clip(Variable(x), 0, std::nullopt)) == std::vector<double>{0, 0, 0, 0.5, 1});
  // Chainer: "Its gradients at x_min and x_max are regarded as 1."
  CHECK(grad_of([](const Variable& v) { return F::clip(v, -0.5, 0.5); }, x, ones) ==
        std::vector<double>{0, 1, 1, 1, 0});
  CHECK(grad_of([](const Variable& v) { return F::clip(v, std::nullopt, 0); }, x, ones) ==
        std::vector<double>{1, 1, 1, 0, 0});
  // float32 with bounds that are not float32 values: clipped to the rounded bound.
  const Variable x32(Tensor::from_vector<float>({-1.0f, 0.05f, 1.0f}));
  CHECK(F::clip(x32, -0.1, 0.1).data().to_vector<float>() == std::vector<float>{-0.1f, 0.05f, 0.1f});

  REQUIRE_THROWS_WITH(F::clip(Variable(x), std::nullopt, std::nullopt),
                      Catch::Contains("clip: x_min and x_max are both absent (give at least one)"));
  REQUIRE_THROWS_WITH(F::clip(Variable(x), 1, 1), Catch::Contains("clip: x_min 1 must be less than x_max 1"));
  REQUIRE_THROWS_WITH(F::clip(Variable(x), 2, -1), Catch::Contains("clip: x_min 2 must be less than x_max -1"));
  REQUIRE_THROWS_WITH(F::clip(Variable(x), kNaN, std::nullopt), Catch::Contains("clip: a bound is NaN"));
  REQUIRE_THROWS_WITH(F::clip(Variable(Tensor::zeros({2}, DType::Int32)), 0, 1),
                      Catch::Contains("clip: dtype int32 is not supported"));
}

TEST_CASE("maximum, minimum: gradients with broadcasting", "[functions][math]") {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{3, 4}, {3, 4}}, {{3, 4}, {4}},       {{4}, {3, 4}},
                                                       {{3, 1}, {1, 5}}, {{2, 3, 5}, {3, 1}}, {{2, 3}, {}},
                                                       {{}, {}},         {{1}, {7}}};
  uint64_t seed = 50;
  for (const auto& s : shapes) {
    // Operands 0.05 or more apart everywhere: no ties within the finite-difference steps.
    const Tensor a = spaced(s.first, ++seed), b = spaced(s.second, ++seed, 0.05);
    check([](const Vars& v) { return F::maximum(v[0], v[1]); }, {a, b});
    check([](const Vars& v) { return F::minimum(v[0], v[1]); }, {a, b});
    check([](const Vars& v) { return F::maximum(v[0], v[1]); }, {a, b}, {.no_grads = {true, false}});
    check([](const Vars& v) { return F::minimum(v[0], v[1]); }, {a, b}, {.no_grads = {false, true}});
  }
}

TEST_CASE("maximum, minimum: values, ties go to x1, errors", "[functions][math]") {
  // Chainer's example.
  const Variable x1(f64({0, 1, 2, 3, 4, 5}, {6})), x2(f64({5, 4, 3, 2, 1, 0}, {6}));
  CHECK(values(F::maximum(x1, x2)) == std::vector<double>{5, 4, 3, 3, 4, 5});
  CHECK(values(F::minimum(x1, x2)) == std::vector<double>{0, 1, 2, 2, 1, 0});
  CHECK(F::maximum(Variable(f64({1, 2, 3}, {3})), Variable(f64({2}, {1, 1}))).shape() == Shape{1, 3});

  // Ties at index 0: maximum sends gy to x1 (x1 >= x2), minimum too (x1 <= x2).
  Variable a(f64({1, 2, 3}, {3}), true), b(f64({1, 5, 0}, {3}), true);
  F::sum(F::maximum(a, b) * Variable(f64({1, 10, 100}, {3}))).backward();
  CHECK(values(a.grad()) == std::vector<double>{1, 0, 100});
  CHECK(values(b.grad()) == std::vector<double>{0, 10, 0});
  Variable c(f64({1, 2, 3}, {3}), true), d(f64({1, 5, 0}, {3}), true);
  F::sum(F::minimum(c, d) * Variable(f64({1, 10, 100}, {3}))).backward();
  CHECK(values(c.grad()) == std::vector<double>{1, 10, 0});
  CHECK(values(d.grad()) == std::vector<double>{0, 0, 100});
  // Broadcast x2 gets its gradients summed.
  Variable e(f64({1, 4, 2, 0}, {2, 2}), true), f(f64({2}, {1}), true);
  F::sum(F::maximum(e, f)).backward();
  CHECK(values(e.grad()) == std::vector<double>{0, 1, 1, 0});  // 2 vs 2: a tie, to x1
  CHECK(values(f.grad()) == std::vector<double>{2});

  REQUIRE_THROWS_WITH(F::maximum(Variable(Tensor::zeros({2, 3})), Variable(Tensor::zeros({4}))),
                      Catch::Contains("maximum: shapes (2, 3) and (4,) cannot be broadcast together"));
  REQUIRE_THROWS_WITH(F::minimum(Variable(Tensor::zeros({2})), Variable(Tensor::zeros({2}, DType::Float64))),
                      Catch::Contains("minimum: dtypes differ (float32 and float64)"));
  const Variable ints(Tensor::zeros({2}, DType::Int32));
  REQUIRE_THROWS_WITH(F::maximum(ints, ints),
                      Catch::Contains("maximum: dtype int32 is not supported (expected float32 or float64)"));
}
