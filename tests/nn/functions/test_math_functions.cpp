// Tests of the elementwise math, the reductions over Chainer's axis argument, where and the
// sigmoid cross entropy and Huber losses of chainer::functions, with the ops behind them
// (comparison masks, where, maximum/minimum, clip, amax/amin): finite differences in float64
// (check_backward) over shapes with odd and size-1 extents, negative and several axes and
// keepdims, kept away from kinks (abs at 0, clip's bounds, ties of max); the behaviour at the
// kinks on exact values; forward values against hand-computed numbers; the error messages.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>

#include "autograd/function_node.h"
#include "autograd/gradient_check.h"
#include "core/ops/ops.h"
#include "core/util/parallel.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;
using Fn = std::function<Variable(const Vars&)>;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();


Tensor f64(const std::vector<double>& values, const Shape& shape) { return Tensor::from_vector(values, shape); }
Tensor mask(const std::vector<uint8_t>& values, const Shape& shape) { return Tensor::from_vector(values, shape); }


// Elementwise within Catch's Approx margin (the matcher refers to WANT: use it in one statement).
auto near(const std::vector<double>& want) { return Catch::Matchers::Approx(want); }


// The gradient of sum(F(x) * w) with respect to x, for a fixed output weighting W.
std::vector<double> grad_of(const std::function<Variable(const Variable&)>& f, const Tensor& x, const Tensor& w) {
  Variable v(x, true);
  F::sum(f(v) * Variable(w)).backward();
  return values(v.grad());
}

// Shapes with odd extents, extents of 1 and a 0-d array.
const std::vector<Shape> kShapes = {{3, 4}, {2, 3, 5}, {5}, {1, 3}, {3, 1, 2}, {}};
}  // namespace

// ---- the ops behind the functions ----

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
                      Catch::Contains("abs: dtype int32 is not supported (expected float32 or float64)"));
}

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

// ---- elementwise functions ----

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
  REQUIRE_THROWS_WITH(F::exp(i), Catch::Contains("exp: dtype int32 is not supported (expected float32 or float64)"));
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

// ---- reductions ----

TEST_CASE("max, min: gradients over no, one and several axes, keepdims", "[functions][reduction]") {
  const std::vector<F::Axes> axes_list = {F::Axes(), F::Axes(0), F::Axes(-1), F::Axes({0, 2}), F::Axes({-1, 1}),
                                       F::Axes({2, 0, 1}), F::Axes(std::vector<int64_t>{})};
  uint64_t seed = 70;
  for (const F::Axes& axes : axes_list)
    for (bool keep : {false, true}) {
      INFO("axis " << axes.str() << " keepdims " << keep);
      check([=](const Vars& v) { return F::max(v[0], axes, keep); }, {spaced({2, 3, 5}, ++seed)});
      check([=](const Vars& v) { return F::min(v[0], axes, keep); }, {spaced({3, 1, 4}, ++seed)});
    }
  // Random shapes (rank 0 to 4) and random sets of axes, negative ones included.
  Generator gen(71);
  for (int trial = 0; trial < 8; ++trial) {
    Shape s(gen.below(5));
    for (int64_t& d : s) d = 1 + int64_t(gen.below(4));
    const int64_t nd = int64_t(s.size());
    F::Axes axes;
    if (gen.below(4) != 0) {
      std::vector<int64_t> list;
      for (int64_t d = 0; d < nd; ++d)
        if (gen.below(2)) list.push_back(gen.below(2) ? d : d - nd);
      axes = list;
    }
    const bool keep = gen.below(2) == 1;
    INFO("trial " << trial << " shape " << shape_str(s) << " axis " << axes.str() << " keepdims " << keep);
    check([=](const Vars& v) { return F::max(v[0], axes, keep); }, {spaced(s, 80 + uint64_t(trial))});
    check([=](const Vars& v) { return F::min(v[0], axes, keep); }, {spaced(s, 90 + uint64_t(trial))});
  }
}

TEST_CASE("max, min: values, shapes, every tie gets the whole gradient", "[functions][reduction]") {
  const Variable x(f64({1, 3, 3, 2, 2, 0}, {2, 3}));
  CHECK(F::max(x).item() == 3);
  CHECK(F::max(x).shape() == Shape{});
  CHECK(values(F::max(x, 1)) == std::vector<double>{3, 2});
  CHECK(values(F::max(x, -2)) == std::vector<double>{2, 3, 3});
  CHECK(F::max(x, 1, true).shape() == Shape{2, 1});
  CHECK(F::max(x, std::nullopt, true).shape() == Shape{1, 1});
  CHECK(values(F::min(x, {0, 1})) == std::vector<double>{0});
  CHECK(values(F::min(x, 0)) == std::vector<double>{1, 2, 0});
  CHECK(values(F::max(x, std::vector<int64_t>{})) == values(x));  // axis=(): nothing reduced
  CHECK(F::max(Variable(Tensor::full({}, 4.5, DType::Float64))).item() == 4.5);

  // Chainer's SelectorBase: gy * (x == y), so tied maxima each receive all of gy.
  const Tensor w = f64({1, 10}, {2});
  CHECK(grad_of([](const Variable& v) { return F::max(v, 1); }, x.data(), w) ==
        std::vector<double>{0, 1, 1, 10, 10, 0});
  CHECK(grad_of([](const Variable& v) { return F::max(v); }, x.data(), f64({1}, {})) ==
        std::vector<double>{0, 1, 1, 0, 0, 0});
  CHECK(grad_of([](const Variable& v) { return F::min(v, 1, true); }, f64({1, 1, 3, 0, 2, 0}, {2, 3}),
                f64({1, 10}, {2, 1})) == std::vector<double>{1, 1, 0, 10, 0, 10});
  Variable xv(x.data(), true);
  CHECK(F::max(xv, 1).creator()->name() == "Max");
  CHECK(F::min(xv, {0, 1}).creator()->name() == "Min");
}

TEST_CASE("sum and mean over several axes", "[functions][reduction]") {
  const Tensor x = uniform({2, 3, 4}, 100);
  const std::vector<double> v = values(x);
  std::vector<double> want(3, 0.0);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) want[size_t(j)] += v[size_t((i * 3 + j) * 4 + k)];
  CHECK_THAT(values(F::sum(Variable(x), {0, 2})), near(want));
  CHECK_THAT(values(F::mean(Variable(x), {-1, 0})), near({want[0] / 8, want[1] / 8, want[2] / 8}));
  CHECK(F::sum(Variable(x), {0, 2}, true).shape() == Shape{1, 3, 1});
  CHECK(values(F::sum(Variable(x), std::vector<int64_t>{})) == v);  // axis=(): nothing summed
  for (bool keep : {false, true}) {
    check([=](const Vars& vs) { return F::sum(vs[0], {0, 2}, keep); }, {uniform({2, 3, 4}, 101)});
    check([=](const Vars& vs) { return F::mean(vs[0], {-1, 1}, keep); }, {uniform({3, 1, 5}, 102)});
    check([=](const Vars& vs) { return F::sum(vs[0], std::vector<int64_t>{}, keep); }, {uniform({2, 3}, 103)});
  }
  REQUIRE_THROWS_WITH(F::sum(Variable(x), {0, -3}), Catch::Contains("sum: axes (0, -3) name axis 0 twice"));
  REQUIRE_THROWS_WITH(F::mean(Variable(x), {1, 3}),
                      Catch::Contains("mean: axis 3 is out of range for an array of 3 dimensions"));
}

TEST_CASE("sum over every set of axes equals a plain loop, at any thread count, float32 bit for bit",
          "[functions][reduction]") {
  // A size-1 axis among them, and shapes large enough that the sums split over threads.
  for (const Shape& shape : {Shape{2, 3, 1, 5}, Shape{6, 64, 7, 9}, Shape{3, 40, 20, 33}}) {
    const Tensor x = uniform(shape, 104);
    const Tensor x32 = x.astype(DType::Float32);
    const std::vector<double> v = values(x);
    for (int mask = 0; mask < 16; ++mask) {
      std::vector<int64_t> axes;
      Shape kept;
      for (int64_t d = 0; d < 4; ++d) (mask >> d & 1 ? axes.push_back(d) : kept.push_back(shape[size_t(d)]));
      if (axes.empty()) continue;  // axis=(): nothing summed (above)
      std::vector<double> want(size_t(shape_numel(kept)), 0.0);
      int64_t flat = 0;
      for (int64_t a = 0; a < shape[0]; ++a)
        for (int64_t b = 0; b < shape[1]; ++b)
          for (int64_t c = 0; c < shape[2]; ++c)
            for (int64_t d = 0; d < shape[3]; ++d, ++flat) {
              const int64_t index[4] = {a, b, c, d};
              int64_t o = 0;
              for (int64_t k = 0; k < 4; ++k)
                if (!(mask >> k & 1)) o = o * shape[size_t(k)] + index[k];
              want[size_t(o)] += v[size_t(flat)];
            }
      INFO("shape " << shape_str(shape) << ", axes mask " << mask);
      const Tensor got = ops::sum(x, axes);
      CHECK(got.shape() == kept);
      CHECK_THAT(values(got), near(want));
      const int saved = num_threads();
      set_num_threads(1);
      const std::vector<double> one = values(ops::sum(x32, axes));
      set_num_threads(2);
      CHECK(values(ops::sum(x32, axes)) == one);
      set_num_threads(saved);
    }
  }
}

TEST_CASE("argmax, argmin: int32 indices, flat without an axis, first on ties, no graph", "[functions][reduction]") {
  Variable x(f64({1, 3, 3, 2, 5, 0}, {2, 3}), true);
  const Variable i = F::argmax(x, 1);
  CHECK(i.dtype() == DType::Int32);
  CHECK(values(i) == std::vector<double>{1, 1});
  CHECK(i.creator() == nullptr);
  CHECK_FALSE(i.requires_grad());
  CHECK(values(F::argmax(x, 0)) == std::vector<double>{1, 1, 0});
  CHECK(values(F::argmax(x, -1)) == std::vector<double>{1, 1});
  CHECK(F::argmax(x).shape() == Shape{});
  CHECK(F::argmax(x).item() == 4);  // in the flattened array
  CHECK(values(F::argmin(x, 1)) == std::vector<double>{0, 2});
  CHECK(F::argmin(x).item() == 5);
  CHECK(F::argmin(Variable(x.data().transpose())).item() == 5);  // flattened in the transposed order
  CHECK(F::argmax(Variable(Tensor::full({}, 2.0, DType::Float64))).item() == 0);

  REQUIRE_THROWS_WITH(F::argmax(x, 2), Catch::Contains("argmax: axis 2 is out of range for an array of 2 dimensions"));
  REQUIRE_THROWS_WITH(F::argmin(Variable(Tensor::zeros({3}, DType::Int32))),
                      Catch::Contains("argmin: dtype int32 is not supported (expected float32 or float64)"));
  REQUIRE_THROWS_WITH(F::argmax(Variable(Tensor::zeros({0}))),
                      Catch::Contains("argmax: cannot reduce axis 0 of extent 0 (shape (0,))"));
}

TEST_CASE("logsumexp: gradients over axes, large values, values", "[functions][reduction]") {
  const std::vector<F::Axes> axes_list = {F::Axes(), F::Axes(1), F::Axes(-1), F::Axes({0, 2}), F::Axes({-1, -2})};
  uint64_t seed = 110;
  for (const F::Axes& axes : axes_list) {
    INFO("axis " << axes.str());
    check([=](const Vars& v) { return F::logsumexp(v[0], axes); }, {uniform({2, 3, 5}, ++seed, -2, 2)});
    check([=](const Vars& v) { return F::logsumexp(v[0], axes); }, {uniform({3, 1, 2}, ++seed, -2, 2)});
  }
  check([](const Vars& v) { return F::logsumexp(v[0]); }, {uniform({}, 120)});
  check([](const Vars& v) { return F::logsumexp(v[0], 0); }, {uniform({7}, 121, 50, 60)});  // large values

  const Variable x(f64({0, std::log(3.0), 1000, 1000, -1000, -1000}, {3, 2}));
  CHECK_THAT(values(F::logsumexp(x, 1)), near({std::log(4.0), 1000 + std::log(2.0),
                                                                      -1000 + std::log(2.0)}));
  CHECK(F::logsumexp(x, 1).shape() == Shape{3});
  CHECK(F::logsumexp(x).item() == Approx(1000 + std::log(2.0)));
  const Variable f32(Tensor::from_vector<float>({1000, 999, 1000}));  // no overflow in float32 either
  CHECK(F::logsumexp(f32).item() == Approx(1000 + std::log(2 + std::exp(-1.0))));
  CHECK(F::logsumexp(Variable(x.data(), true), 0).creator()->name() == "LogSumExp");
  REQUIRE_THROWS_WITH(F::logsumexp(x, {1, 1}), Catch::Contains("logsumexp: axes (1, 1) name axis 1 twice"));
  REQUIRE_THROWS_WITH(F::logsumexp(Variable(Tensor::zeros({0, 3})), 0),
                      Catch::Contains("logsumexp: cannot reduce axis 0 of extent 0 (shape (0, 3))"));
}

TEST_CASE("max, min: errors name the op and the values", "[functions][reduction][errors]") {
  const Variable x(Tensor::zeros({2, 3}));
  REQUIRE_THROWS_WITH(F::max(x, 2), Catch::Contains("max: axis 2 is out of range for an array of 2 dimensions"));
  REQUIRE_THROWS_WITH(F::min(x, -3), Catch::Contains("min: axis -3 is out of range for an array of 2 dimensions"));
  REQUIRE_THROWS_WITH(F::max(x, {1, -1}), Catch::Contains("max: axes (1, -1) name axis 1 twice"));
  REQUIRE_THROWS_WITH(F::max(Variable(Tensor::zeros({2}, DType::Int32))),
                      Catch::Contains("max: dtype int32 is not supported (expected float32 or float64)"));
  REQUIRE_THROWS_WITH(F::min(Variable(Tensor::zeros({2, 0})), 1),
                      Catch::Contains("min: cannot reduce axis 1 of extent 0 (shape (2, 0))"));
}

// ---- where ----

TEST_CASE("where: gradients with broadcasting, values, errors", "[functions][where]") {
  struct Case {
    Shape c, x, y;
  };
  const std::vector<Case> cases = {{{3, 4}, {3, 4}, {3, 4}}, {{3, 4}, {4}, {3, 1}}, {{4}, {3, 4}, {}},
                                   {{2, 1, 3}, {5, 1}, {2, 5, 3}}, {{}, {2, 3}, {2, 3}}, {{1}, {1}, {1}}};
  Generator gen(130);
  uint64_t seed = 130;
  for (const Case& c : cases) {
    std::vector<uint8_t> m(size_t(shape_numel(c.c)));
    for (uint8_t& b : m) b = uint8_t(gen.below(3));  // 0, 1 and 2: any nonzero byte is true
    const Tensor cond = mask(m, c.c);
    check([=](const Vars& v) { return F::where(Variable(cond), v[0], v[1]); }, {uniform(c.x, ++seed),
                                                                                uniform(c.y, ++seed)});
    check([=](const Vars& v) { return F::where(Variable(cond), v[0], v[1]); },
          {uniform(c.x, ++seed), uniform(c.y, ++seed)}, {.no_grads = {false, true}});
  }
  // Chainer's example.
  const Variable cond(mask({1, 0, 0, 1}, {2, 2}));
  const Variable x(Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2})), y(Tensor::zeros({2, 2}));
  CHECK(values(F::where(cond, x, y)) == std::vector<double>{1, 0, 0, 4});
  // The masks of the comparison ops are conditions.
  const Variable z = F::where(Variable(ops::greater(x.data(), Tensor::full({}, 2.5))), x, F::neg(x));
  CHECK(values(z) == std::vector<double>{-1, -2, 3, 4});
  Variable a(f64({1, 2}, {2}), true), b(f64({5}, {1}), true);
  F::sum(F::where(Variable(mask({0, 1}, {2})), a, b)).backward();
  CHECK(values(a.grad()) == std::vector<double>{0, 1});
  CHECK(values(b.grad()) == std::vector<double>{1});

  REQUIRE_THROWS_WITH(F::where(x, x, y), Catch::Contains("where: the condition has dtype float32 (expected uint8"));
  REQUIRE_THROWS_WITH(F::where(cond, x, Variable(Tensor::zeros({2, 2}, DType::Float64))),
                      Catch::Contains("where: dtypes differ (float32 and float64)"));
  REQUIRE_THROWS_WITH(F::where(cond, x, Variable(Tensor::zeros({3}))),
                      Catch::Contains("where: shapes (2, 2) and (3,) cannot be broadcast together"));
}

// ---- losses ----

namespace {
// The loss of one element by the plain formula, -(t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))).
double sce(double x, int t) { return std::log(1 + std::exp(x)) - t * x; }
}  // namespace

TEST_CASE("sigmoid_cross_entropy: values with ignored labels and both normalizations", "[functions][loss]") {
  // Chainer's example: 5 labels counted, one ignored.
  const Variable x(Tensor::from_vector<float>({-2.0f, 3.0f, 0.5f, 5.0f, 2.0f, -0.5f}, {2, 3}));
  const Variable t(labels({0, 1, 0, 1, 1, -1}, {2, 3}));
  const std::vector<double> per = {sce(-2, 0), sce(3, 1), sce(0.5, 0), sce(5, 1), sce(2, 1), 0};
  double total = 0;
  for (double p : per) total += p;
  const Variable mean = F::sigmoid_cross_entropy(x, t);
  CHECK(mean.shape() == Shape{});
  CHECK(mean.dtype() == DType::Float32);
  CHECK(mean.item() == Approx(total / 5));
  CHECK(mean.item() == Approx(0.25664714));
  CHECK(F::sigmoid_cross_entropy(x, t, false).item() == Approx(total / 2));  // over the batch size N = 2
  CHECK(F::sigmoid_cross_entropy(x, t, false).item() == Approx(0.64161783));
  const Variable no = F::sigmoid_cross_entropy(x, t, true, "no");
  CHECK(no.shape() == Shape{2, 3});
  CHECK_THAT(values(no), near(per).epsilon(1e-6));
  CHECK_THAT(values(F::sigmoid_cross_entropy(x, t, false, "no")), near(per).epsilon(1e-6));

  // Every label ignored: 0 (divided by 1, not by 0).
  const Variable none(labels({-1, -1, -1, -1, -1, -1}, {2, 3}));
  CHECK(F::sigmoid_cross_entropy(x, none).item() == 0.0);
  // Large logits stay finite.
  const Variable big(f64({1000, -1000, 1000, -1000}, {4}));
  CHECK_THAT(values(F::sigmoid_cross_entropy(big, Variable(labels({1, 0, 0, 1}, {4})), true, "no")),
             near({0, 0, 1000, 1000}));
  CHECK(F::sigmoid_cross_entropy(Variable(x.data(), true), t).creator()->name() == "SigmoidCrossEntropy");
}

TEST_CASE("sigmoid_cross_entropy: gradients", "[functions][loss]") {
  auto f = [](bool normalize, std::string reduce) -> Fn {
    return [=](const Vars& v) { return F::sigmoid_cross_entropy(v[0], v[1], normalize, reduce); };
  };
  const Tensor t23 = labels({0, 1, -1, 1, -1, 0}, {2, 3});
  for (bool normalize : {true, false})
    for (const char* reduce : {"mean", "no"}) {
      INFO("normalize " << normalize << " reduce " << reduce);
      check(f(normalize, reduce), {uniform({2, 3}, 140, -3, 3), t23});
      check(f(normalize, reduce), {uniform({4}, 141, -3, 3), labels({1, 1, 0, -1}, {4})});
      check(f(normalize, reduce), {uniform({2, 1, 3}, 142, -3, 3), labels({1, -1, 0, 0, 1, 1}, {2, 1, 3})});
      check(f(normalize, reduce), {uniform({2, 2}, 143, -3, 3), labels({-1, -1, -1, -1}, {2, 2})});
    }
  // Random shapes and labels, some ignored.
  Generator gen(144);
  for (int trial = 0; trial < 4; ++trial) {
    const Shape s{1 + int64_t(gen.below(5)), 1 + int64_t(gen.below(5))};
    std::vector<int32_t> t(size_t(shape_numel(s)));
    for (int32_t& l : t) l = int32_t(gen.below(3)) - 1;
    check(f(gen.below(2) == 1, "mean"), {uniform(s, 150 + uint64_t(trial), -3, 3), labels(t, s)});
  }
  // The gradient by hand: (sigmoid(x) - t) / count, 0 where ignored.
  Variable x(f64({0, std::log(3.0), 1}, {3}), true);
  F::sigmoid_cross_entropy(x, Variable(labels({1, 0, -1}, {3}))).backward();
  CHECK_THAT(values(x.grad()), near({(0.5 - 1) / 2, 0.75 / 2, 0}));
}

TEST_CASE("sigmoid_cross_entropy: errors", "[functions][loss][errors]") {
  const Variable x(Tensor::zeros({2, 3}));
  REQUIRE_THROWS_WITH(F::sigmoid_cross_entropy(x, Variable(Tensor::zeros({2, 3}))),
                      Catch::Contains("sigmoid_cross_entropy: labels have dtype float32 (expected int32)"));
  REQUIRE_THROWS_WITH(F::sigmoid_cross_entropy(x, Variable(labels({0, 1, 1}, {3}))),
                      Catch::Contains("sigmoid_cross_entropy: labels have shape (3,) but x has shape (2, 3)"));
  REQUIRE_THROWS_WITH(F::sigmoid_cross_entropy(Variable(labels({0}, {1})), Variable(labels({0}, {1}))),
                      Catch::Contains("sigmoid_cross_entropy: dtype int32 is not supported"));
  REQUIRE_THROWS_WITH(F::sigmoid_cross_entropy(x, Variable(labels({0, 1, 1, 0, 0, 0}, {2, 3})), true, "sum"),
                      Catch::Contains("sigmoid_cross_entropy: reduce must be \"mean\" or \"no\", got \"sum\""));
}

TEST_CASE("huber_loss: values on both branches, gradients, errors", "[functions][loss]") {
  // Chainer's example, delta 1: |d| = 0.5 on the square branch, 5 on the linear one.
  const Variable x(Tensor::from_vector<float>({-2.0f, 3.0f, 0.5f, 5.0f, 2.0f, -0.5f}, {2, 3}));
  const Variable t(Tensor::from_vector<float>({-2.0f, 3.0f, 0.0f, 10.0f, 2.0f, -0.5f}, {2, 3}));
  const Variable no = F::huber_loss(x, t, 1.0, "no");
  CHECK(no.shape() == Shape{2, 3});
  CHECK(values(no) == std::vector<double>{0, 0, 0.125, 4.5, 0, 0});
  const Variable summed = F::huber_loss(x, t, 1.0);
  CHECK(summed.shape() == Shape{2});
  CHECK(values(summed) == std::vector<double>{0.125, 4.5});
  // delta 2: 0.5 d^2 up to |d| = 2, then 2 (|d| - 1); summed along axis 1 of a 3-D input.
  const Variable a(f64({0, 1, -1.5, 3, -5, 2}, {1, 3, 2})), zero(Tensor::zeros({1, 3, 2}, DType::Float64));
  CHECK(values(F::huber_loss(a, zero, 2.0, "no")) == std::vector<double>{0, 0.5, 1.125, 4, 8, 2});
  CHECK(values(F::huber_loss(a, zero, 2.0)) == std::vector<double>{0 + 1.125 + 8, 0.5 + 4 + 2});
  CHECK(F::huber_loss(Variable(a.data(), true), zero, 2.0).creator()->name() == "HuberLoss");

  // Differences k/10 + 0.05 against delta 0.5 and 0.3: both branches, never within 0.05 of a kink.
  uint64_t seed = 160;
  for (const Shape& s : {Shape{3, 4}, Shape{2, 3, 2}, Shape{5, 1}, Shape{1, 7}})
    for (double delta : {0.5, 0.3})
      for (const char* reduce : {"sum_along_second_axis", "no"}) {
        INFO("shape " << shape_str(s) << " delta " << delta << " reduce " << reduce);
        const Tensor tt = uniform(s, ++seed);
        const Tensor xx = ops::add(tt, spaced(s, ++seed, 0.05));
        check([=](const Vars& v) { return F::huber_loss(v[0], v[1], delta, reduce); }, {xx, tt});
        check([=](const Vars& v) { return F::huber_loss(v[0], v[1], delta, reduce); }, {xx, tt},
              {.no_grads = {true, false}});
      }
  check([](const Vars& v) { return F::huber_loss(v[0], v[1], 0.5, "no"); },
        {f64({0.2}, {}), f64({1.0}, {})});  // 0-d, on the linear branch

  REQUIRE_THROWS_WITH(F::huber_loss(x, t, 1.0, "mean"),
                      Catch::Contains("huber_loss: reduce must be \"sum_along_second_axis\" or \"no\", got \"mean\""));
  REQUIRE_THROWS_WITH(F::huber_loss(x, Variable(Tensor::zeros({3, 2})), 1.0),
                      Catch::Contains("huber_loss: x has shape (2, 3) but t has shape (3, 2)"));
  REQUIRE_THROWS_WITH(F::huber_loss(x, Variable(Tensor::zeros({2, 3}, DType::Float64)), 1.0),
                      Catch::Contains("huber_loss: x has dtype float32 but t has dtype float64"));
  REQUIRE_THROWS_WITH(F::huber_loss(x, t, 0.0),
                      Catch::Contains("huber_loss: delta must be positive and finite, got 0"));
  REQUIRE_THROWS_WITH(F::huber_loss(Variable(Tensor::zeros({4})), Variable(Tensor::zeros({4})), 1.0),
                      Catch::Contains("huber_loss: reduce \"sum_along_second_axis\" needs x with at least 2 "
                                      "dimensions, got shape (4,)"));
  REQUIRE_THROWS_WITH(
      F::huber_loss(Variable(Tensor::zeros({4}, DType::Int32)), Variable(Tensor::zeros({4}, DType::Int32)), 1.0, "no"),
      Catch::Contains("huber_loss: dtype int32 is not supported"));
}
