// Tests of chainer::functions: every differentiable function against finite differences
// (check_backward runs in float64) over several shapes, forward values against hand-computed
// numbers, and the error messages. The checks every function gets (float32 against float64, no
// graph under NoBackpropMode) run over the registry of function cases (tests/nn/functions/).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "autograd/function_node.h"
#include "autograd/gradient_check.h"
#include "core/util/config.h"
#include "core/ops/ops.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;
using Fn = std::function<Variable(const Vars&)>;

namespace {

// A random extent in [1, 5] for tests over random shapes.
int64_t dim(Generator& gen) { return 1 + int64_t(gen.below(5)); }

// A random shape of rank in [LO, HI] with extents from dim (so extent 1 comes up often).
Shape random_shape(Generator& gen, int LO, int HI) {
  Shape s(size_t(LO + int(gen.below(uint64_t(HI - LO + 1)))));
  for (int64_t& d : s) d = dim(gen);
  return s;
}

// A random axis in [-ndim, ndim): negative ones count from the end.
int64_t random_axis(Generator& gen, int64_t ndim) { return int64_t(gen.below(uint64_t(2 * ndim))) - ndim; }

// A random shape with as many elements as S (its prime factors spread over a random rank in
// [1, 4]), one extent sometimes left as -1 for reshape to infer.
Shape random_reshape(Generator& gen, const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  Shape t(size_t(1 + gen.below(4)), 1);
  for (int64_t p = 2; n > 1; ++p)
    for (; n % p == 0; n /= p) t[size_t(gen.below(t.size()))] *= p;
  if (gen.below(2)) t[size_t(gen.below(t.size()))] = -1;
  return t;
}
}  // namespace

TEST_CASE("linear: gradients with and without bias, flattened input", "[functions][linear]") {
  check([](const Vars& v) { return F::linear(v[0], v[1], v[2]); },
        {uniform({3, 4}, 1), uniform({5, 4}, 2), uniform({5}, 3)});
  check([](const Vars& v) { return F::linear(v[0], v[1]); }, {uniform({2, 3}, 4), uniform({1, 3}, 5)});
  check([](const Vars& v) { return F::linear(v[0], v[1], v[2]); },
        {uniform({2, 3, 2}, 6), uniform({4, 6}, 7), uniform({4}, 8)});
  // The input as data (no gradient): only W and b are checked.
  check([](const Vars& v) { return F::linear(v[0], v[1], v[2]); },
        {uniform({4, 3}, 9), uniform({2, 3}, 10), uniform({2}, 11)}, {.no_grads = {true, false, false}});
  // Random sizes.
  Generator gen(12);
  for (int trial = 0; trial < 4; ++trial) {
    const int64_t n = dim(gen), in = dim(gen), out = dim(gen);
    check([](const Vars& v) { return F::linear(v[0], v[1], v[2]); },
          {uniform({n, in}, 20 + trial), uniform({out, in}, 30 + trial), uniform({out}, 40 + trial)});
  }
}

TEST_CASE("linear: forward values and skipped input gradient", "[functions][linear]") {
  Variable x(Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  Variable W(Tensor::from_vector<float>({1, 0, -1, 2, 1, 0}, {2, 3}), true);
  Variable b(Tensor::from_vector<float>({0.5f, -1}), true);
  Variable y = F::linear(x, W, b);
  REQUIRE(y.shape() == Shape{2, 2});
  CHECK(values(y) == std::vector<double>{1 - 3 + 0.5, 2 + 2 - 1, 4 - 6 + 0.5, 8 + 5 - 1});
  F::sum(y).backward();
  CHECK_FALSE(x.grad().defined());  // data: its gradient is never computed
  CHECK(values(Variable(W.grad())) == std::vector<double>{5, 7, 9, 5, 7, 9});
  CHECK(values(Variable(b.grad())) == std::vector<double>{2, 2});
}

TEST_CASE("linear_relu: gradients and agreement with relu(linear)", "[functions][linear]") {
  // Seeds whose pre-activations all stay away from the ReLU kink.
  int checked = 0;
  for (uint64_t seed = 1; checked < 3 && seed < 100; ++seed) {
    Tensor x = uniform({3, 4}, seed * 10), W = uniform({5, 4}, seed * 10 + 1), b = uniform({5}, seed * 10 + 2);
    Tensor pre = ops::add(ops::matmul(x, W, false, true), b);
    bool far = true;
    for (double p : pre.to_vector<double>()) far &= std::abs(p) > 0.05;
    if (!far) continue;
    ++checked;
    check([](const Vars& v) { return F::linear_relu(v[0], v[1], v[2]); }, {x, W, b});
  }
  CHECK(checked == 3);
  check([](const Vars& v) { return F::linear_relu(v[0], v[1]); },
        {Tensor::from_vector<double>({1, 2, -1, 0.5}, {2, 2}),
         Tensor::from_vector<double>({1, 0.3, -0.7, 0.2}, {2, 2})});

  // Bit-identical to the unfused composition, forward and backward, in float32.
  Tensor x = random::uniform({16, 32}, -1, 1), W = random::uniform({8, 32}, -1, 1), b = random::uniform({8}, -1, 1);
  Variable W1(W, true), b1(b, true), W2(W.clone(), true), b2(b.clone(), true);
  Variable fused = F::linear_relu(Variable(x), W1, b1), plain = F::relu(F::linear(Variable(x), W2, b2));
  CHECK(fused.data().to_vector<float>() == plain.data().to_vector<float>());
  F::sum(fused).backward();
  F::sum(plain).backward();
  CHECK(W1.grad().to_vector<float>() == W2.grad().to_vector<float>());
  CHECK(b1.grad().to_vector<float>() == b2.grad().to_vector<float>());
}

TEST_CASE("linear: shape and dtype errors name the op and the values", "[functions][linear][errors]") {
  Variable x(Tensor::zeros({100, 785}));
  Variable W(Tensor::zeros({10, 784}), true), b(Tensor::zeros({10}), true);
  REQUIRE_THROWS_WITH(F::linear(x, W, b), Catch::Contains("linear: x has shape (100, 785) but W expects 784 inputs"));
  REQUIRE_THROWS_WITH(F::linear_relu(x, W, b), Catch::Contains("linear_relu: x has shape (100, 785)"));
  REQUIRE_THROWS_WITH(F::linear(Variable(Tensor::zeros({100, 784})), W, Variable(Tensor::zeros({11}))),
                      Catch::Contains("linear: b has shape (11,) but W has shape (10, 784)"));
  REQUIRE_THROWS_WITH(F::linear(Variable(Tensor::zeros({100, 784}, DType::Float64)), W),
                      Catch::Contains("linear: x has dtype float64 but W has dtype float32"));
  REQUIRE_THROWS_WITH(F::linear(Variable(Tensor::zeros({784})), W),
                      Catch::Contains("linear: x must have a batch axis"));
}

TEST_CASE("activations: gradients", "[functions][activation]") {
  Generator gen(3);
  for (const Shape& s : {Shape{3, 4}, Shape{2, 3, 2}, Shape{5}, Shape{dim(gen), dim(gen)}, Shape{dim(gen), dim(gen)}}) {
    check([](const Vars& v) { return F::relu(v[0]); }, {away_from_zero(s, 1)});
    check([](const Vars& v) { return F::sigmoid(v[0]); }, {uniform(s, 2, -3, 3)});
    check([](const Vars& v) { return F::tanh(v[0]); }, {uniform(s, 3, -2, 2)});
  }
  Variable y = F::sigmoid(Variable(Tensor::from_vector<double>({0.0, std::log(3.0)})));
  CHECK(values(y)[0] == Approx(0.5));
  CHECK(values(y)[1] == Approx(0.75));
}

TEST_CASE("softmax and log_softmax: gradients over several axes", "[functions][softmax]") {
  struct Case { Shape shape; int64_t axis; };
  const std::vector<Case> cases = {{{3, 4}, 1}, {{3, 4}, 0}, {{2, 3, 4}, 1}, {{2, 3, 4}, -1}, {{2, 3, 2}, 0}};
  for (const Case& c : cases) {
    INFO("axis " << c.axis);
    const int64_t axis = c.axis;
    check([axis](const Vars& v) { return F::softmax(v[0], axis); }, {uniform(c.shape, 4, -2, 2)});
    check([axis](const Vars& v) { return F::log_softmax(v[0], axis); }, {uniform(c.shape, 5, -2, 2)});
  }
  // Random shapes (rank 1 to 4) and axes, negative ones included.
  Generator gen(6);
  for (int trial = 0; trial < 5; ++trial) {
    const Shape s = random_shape(gen, 1, 4);
    const int64_t axis = random_axis(gen, int64_t(s.size()));
    INFO("trial " << trial << " shape " << shape_str(s) << " axis " << axis);
    check([axis](const Vars& v) { return F::softmax(v[0], axis); }, {uniform(s, 50 + trial, -2, 2)});
    check([axis](const Vars& v) { return F::log_softmax(v[0], axis); }, {uniform(s, 60 + trial, -2, 2)});
  }
  Variable y = F::softmax(Variable(Tensor::from_vector<double>({0, std::log(3.0), 5, 5}, {2, 2})));
  CHECK_THAT(values(y), Catch::Matchers::Approx(std::vector<double>{0.25, 0.75, 0.5, 0.5}));
  Variable ly = F::log_softmax(Variable(Tensor::from_vector<double>({1000, 1000}, {1, 2})));  // no overflow
  CHECK(values(ly)[0] == Approx(-std::log(2.0)));
}

TEST_CASE("softmax and log_softmax: errors", "[functions][softmax][errors]") {
  Variable x(Tensor::zeros({2, 3}, DType::Float64));
  REQUIRE_THROWS_WITH(F::softmax(x, 2),
                      Catch::Contains("softmax: axis 2 is out of range for an array of 2 dimensions"));
  REQUIRE_THROWS_WITH(F::log_softmax(x, -3),
                      Catch::Contains("log_softmax: axis -3 is out of range for an array of 2 dimensions"));
}

TEST_CASE("softmax_cross_entropy: forward values", "[functions][loss]") {
  // Row 0: logits (1, 2, 3), label 2; row 1: logits (1, 1, 1), label 0.
  Variable x(Tensor::from_vector<double>({1, 2, 3, 1, 1, 1}, {2, 3}));
  Variable t(labels({2, 0}));
  const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0, l1 = std::log(3.0);
  CHECK(F::softmax_cross_entropy(x, t).item() == Approx((l0 + l1) / 2));
  Variable per = F::softmax_cross_entropy(x, t, true, -1, "no");
  REQUIRE(per.shape() == Shape{2});
  CHECK_THAT(values(per), Catch::Matchers::Approx(std::vector<double>{l0, l1}));

  // An ignored example: the mean is over the one left, or over both when not normalizing.
  Variable ti(labels({2, -1}));
  CHECK(F::softmax_cross_entropy(x, ti).item() == Approx(l0));
  CHECK(F::softmax_cross_entropy(x, ti, false).item() == Approx(l0 / 2));
  CHECK_THAT(values(F::softmax_cross_entropy(x, ti, true, -1, "no")),
             Catch::Matchers::Approx(std::vector<double>{l0, 0.0}));
  CHECK(F::softmax_cross_entropy(x, Variable(labels({-1, -1}))).item() == 0.0);

  // Large logits stay finite (log-sum-exp).
  Variable big(Tensor::from_vector<float>({1000, 1000, -1000, 0}, {2, 2}));
  CHECK(F::softmax_cross_entropy(big, Variable(labels({1, 1}))).item() == Approx(std::log(2.0) / 2));
  CHECK(F::softmax_cross_entropy(big, Variable(labels({1, 0}))).item() == Approx((std::log(2.0) + 1000) / 2));
}

TEST_CASE("softmax_cross_entropy: gradients", "[functions][loss]") {
  auto sce = [](bool normalize, int64_t ignore, std::string reduce) -> Fn {
    return [=](const Vars& v) { return F::softmax_cross_entropy(v[0], v[1], normalize, ignore, reduce); };
  };
  check(sce(true, -1, "mean"), {uniform({4, 3}, 1, -2, 2), labels({0, 2, 1, 2})});
  check(sce(true, -1, "mean"), {uniform({6, 5}, 2, -2, 2), labels({4, -1, 0, 3, -1, 1})});
  check(sce(false, -1, "mean"), {uniform({3, 4}, 3, -2, 2), labels({3, -1, 0})});
  check(sce(true, 7, "mean"), {uniform({3, 4}, 4, -2, 2), labels({7, 2, 0})});
  check(sce(true, -1, "no"), {uniform({5, 3}, 5, -2, 2), labels({1, -1, 0, 2, 2})});
  check(sce(true, -1, "mean"), {uniform({2, 3}, 6, -2, 2), labels({-1, -1})});
  // Random sizes and labels, some ignored.
  Generator gen(7);
  for (int trial = 0; trial < 4; ++trial) {
    const int64_t n = dim(gen), c = dim(gen) + 1;
    std::vector<int32_t> t;
    for (int64_t i = 0; i < n; ++i) t.push_back(gen.below(4) == 0 ? -1 : int32_t(gen.below(uint64_t(c))));
    check(sce(true, -1, "mean"), {uniform({n, c}, 10 + trial, -2, 2), labels(t)});
  }
}

TEST_CASE("softmax_cross_entropy: errors", "[functions][loss][errors]") {
  Variable x(Tensor::zeros({3, 10}), true);
  REQUIRE_THROWS_WITH(F::softmax_cross_entropy(x, Variable(labels({1, 10, 2}))),
                      Catch::Contains("label 10 at index 1 is out of range for 10 classes"));
  REQUIRE_THROWS_WITH(F::softmax_cross_entropy(x, Variable(labels({1, 2, -3}))),
                      Catch::Contains("label -3 at index 2"));
  REQUIRE_THROWS_WITH(F::softmax_cross_entropy(x, Variable(labels({1, 2}))),
                      Catch::Contains("softmax_cross_entropy: labels have shape (2,) but x has shape (3, 10)"));
  REQUIRE_THROWS_WITH(F::softmax_cross_entropy(x, Variable(Tensor::zeros({3}))),
                      Catch::Contains("labels have dtype float32 (expected int32)"));
  REQUIRE_THROWS_WITH(F::softmax_cross_entropy(x, Variable(labels({1, 2, 3})), true, -1, "sum"),
                      Catch::Contains("reduce must be \"mean\" or \"no\""));
}

TEST_CASE("mean_squared_error", "[functions][loss]") {
  check([](const Vars& v) { return F::mean_squared_error(v[0], v[1]); },
        {uniform({3, 4}, 1), uniform({3, 4}, 2)});
  check([](const Vars& v) { return F::mean_squared_error(v[0], v[1]); },
        {uniform({5}, 3), uniform({5}, 4)}, {.no_grads = {false, true}});
  // Random shapes (scalars included), x1 sometimes as data.
  Generator gen(8);
  for (int trial = 0; trial < 4; ++trial) {
    const Shape s = random_shape(gen, 0, 3);
    const bool x1_data = gen.below(2) == 1;
    INFO("trial " << trial << " shape " << shape_str(s) << " x1 as data " << x1_data);
    check([](const Vars& v) { return F::mean_squared_error(v[0], v[1]); },
          {uniform(s, 10 + trial), uniform(s, 20 + trial)}, {.no_grads = {false, x1_data}});
  }
  Variable a(Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2})), b(Tensor::from_vector<double>({1, 0, 3, 1}, {2, 2}));
  CHECK(F::mean_squared_error(a, b).item() == Approx((4.0 + 9.0) / 4));
  REQUIRE_THROWS_WITH(F::mean_squared_error(a, Variable(Tensor::zeros({4}, DType::Float64))),
                      Catch::Contains("mean_squared_error: x0 has shape (2, 2) but x1 has shape (4,)"));
}

TEST_CASE("accuracy", "[functions][accuracy]") {
  Variable y(Tensor::from_vector<float>({0.1f, 0.9f, 0.8f, 0.2f, 0.3f, 0.7f, 0.6f, 0.4f}, {4, 2}), true);
  Variable acc = F::accuracy(y, Variable(labels({1, 0, 0, 0})));
  CHECK(acc.item() == Approx(0.75));
  CHECK(acc.dtype() == DType::Float32);
  CHECK(acc.is_leaf());
  CHECK(F::accuracy(y, Variable(labels({1, -1, -1, 1}))).item() == Approx(0.5));
  CHECK(F::accuracy(y, Variable(labels({-1, -1, -1, -1}))).item() == 0.0);
  // Class axis 1 of a 3-D input.
  Variable y3(Tensor::from_vector<double>({1, 0, 0, 1, /**/ 0, 1, 1, 0}, {2, 2, 2}));
  CHECK(F::accuracy(y3, Variable(Tensor::from_vector<int32_t>({0, 1, 1, 0}, {2, 2}))).item() == 1.0);
  REQUIRE_THROWS_WITH(F::accuracy(y, Variable(labels({1, 0}))),
                      Catch::Contains("accuracy: labels have shape (2,) but y has shape (4, 2)"));
}

TEST_CASE("arithmetic: gradients with broadcasting", "[functions][arithmetic]") {
  struct Case { Shape a, b; };
  std::vector<Case> cases = {{{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{4}, {3, 4}}, {{3, 1}, {1, 4}},
                             {{2, 3, 4}, {3, 1}}, {{2, 3}, {}}};
  Generator gen(5);
  for (int trial = 0; trial < 3; ++trial) {  // random shapes, each axis of b broadcast or not
    Shape a{dim(gen), dim(gen), dim(gen)}, b = a;
    for (int64_t& d : b)
      if (gen.below(2)) d = 1;
    cases.push_back({a, b});
    cases.push_back({b, a});
  }
  for (const Case& c : cases) {
    check([](const Vars& v) { return F::add(v[0], v[1]); }, {uniform(c.a, 1), uniform(c.b, 2)});
    check([](const Vars& v) { return v[0] - v[1]; }, {uniform(c.a, 3), uniform(c.b, 4)});
    check([](const Vars& v) { return v[0] * v[1]; }, {uniform(c.a, 5), uniform(c.b, 6)});
    check([](const Vars& v) { return v[0] / v[1]; }, {uniform(c.a, 7), uniform(c.b, 8, 0.5, 2.0)});
  }
  // One operand as data.
  check([](const Vars& v) { return v[0] / v[1]; }, {uniform({2, 3}, 9), uniform({3}, 10, 0.5, 2)},
        {.no_grads = {true, false}});
}

TEST_CASE("arithmetic: scalars and negation", "[functions][arithmetic]") {
  const std::vector<Fn> fns = {
      [](const Vars& v) { return v[0] * 2.0; },
      [](const Vars& v) { return 3.0 * v[0]; },
      [](const Vars& v) { return v[0] + 1.5; },
      [](const Vars& v) { return 1.5 + v[0]; },
      [](const Vars& v) { return v[0] - 0.5; },
      [](const Vars& v) { return 1.0 - v[0]; },
      [](const Vars& v) { return v[0] / 4.0; },
      [](const Vars& v) { return 2.0 / v[0]; },
      [](const Vars& v) { return -v[0]; },
      [](const Vars& v) { return 2.0 * (1.0 - v[0]) * v[0] + v[0] / 3.0; },
  };
  for (const Fn& f : fns) check(f, {uniform({2, 3}, 11, 0.5, 2.0)});
  Variable x(Tensor::from_vector<double>({1, 2, 4}));
  CHECK(values(1.0 - x) == std::vector<double>{0, -1, -3});
  CHECK(values(2.0 / x) == std::vector<double>{2, 1, 0.5});
  CHECK(values(-x * 2.0) == std::vector<double>{-2, -4, -8});
  CHECK(values(x / 2.0 + x) == std::vector<double>{1.5, 3, 6});
}

TEST_CASE("arithmetic: errors", "[functions][arithmetic][errors]") {
  Variable a(Tensor::zeros({2, 3})), b(Tensor::zeros({4}));
  REQUIRE_THROWS_WITH(a + b, Catch::Contains("add: shapes (2, 3) and (4,) cannot be broadcast together"));
  REQUIRE_THROWS_WITH(a * b, Catch::Contains("mul: shapes (2, 3) and (4,)"));
  REQUIRE_THROWS_WITH(a - Variable(Tensor::zeros({3}, DType::Float64)),
                      Catch::Contains("sub: dtypes differ (float32 and float64)"));
  REQUIRE_THROWS_WITH(a / b, Catch::Contains("div: shapes (2, 3) and (4,) cannot be broadcast together"));
}

TEST_CASE("matmul: gradients for every transposition", "[functions][matmul]") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("transa " << ta << " transb " << tb);
      const Shape sa = ta ? Shape{4, 3} : Shape{3, 4}, sb = tb ? Shape{2, 4} : Shape{4, 2};
      check([=](const Vars& v) { return F::matmul(v[0], v[1], ta, tb); }, {uniform(sa, 1), uniform(sb, 2)});
    }
  // Random m, k, n, each transposition.
  Generator gen(9);
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t m = dim(gen), k = dim(gen), n = dim(gen);
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        INFO("trial " << trial << " m " << m << " k " << k << " n " << n << " transa " << ta << " transb " << tb);
        const Shape sa = ta ? Shape{k, m} : Shape{m, k}, sb = tb ? Shape{n, k} : Shape{k, n};
        check([=](const Vars& v) { return F::matmul(v[0], v[1], ta, tb); },
              {uniform(sa, 10 + trial), uniform(sb, 20 + trial)});
      }
  }
  Variable a(Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2})), b(Tensor::from_vector<double>({0, 1, 1, 0}, {2, 2}));
  CHECK(values(F::matmul(a, b)) == std::vector<double>{2, 1, 4, 3});
  CHECK(values(F::matmul(a, b, true)) == std::vector<double>{3, 1, 4, 2});
  REQUIRE_THROWS_WITH(F::matmul(a, Variable(Tensor::zeros({3, 2}, DType::Float64))),
                      Catch::Contains("matmul: shapes (2, 2) and (3, 2) are not aligned"));
}

TEST_CASE("sum, mean, average: gradients over axes", "[functions][reduction]") {
  for (bool keep : {false, true}) {
    for (std::optional<int64_t> axis : {std::optional<int64_t>{}, std::optional<int64_t>{0}, std::optional<int64_t>{1},
                                        std::optional<int64_t>{-1}}) {
      INFO("keepdims " << keep << " axis " << (axis ? std::to_string(*axis) : "none"));
      check([=](const Vars& v) { return F::sum(v[0], axis, keep); }, {uniform({2, 3, 4}, 1)});
      check([=](const Vars& v) { return F::mean(v[0], axis, keep); }, {uniform({3, 2}, 2)});
      check([=](const Vars& v) { return F::average(v[0], axis, Variable(), keep); }, {uniform({3, 2}, 3)});
    }
  }
  // Weighted averages: both x and the weights are differentiable.
  check([](const Vars& v) { return F::average(v[0], 1, v[1]); }, {uniform({2, 3}, 4), uniform({3}, 5, 0.5, 2)});
  check([](const Vars& v) { return F::average(v[0], -3, v[1], true); },
        {uniform({2, 3, 2}, 6), uniform({2}, 7, 0.5, 2)});
  check([](const Vars& v) { return F::average(v[0], std::nullopt, v[1]); },
        {uniform({2, 3}, 8), uniform({2, 3}, 9, 0.5, 2)});
  // Random shapes (rank 1 to 3), axes (none, or negative too) and keepdims; weighted averages
  // along a random axis and over all elements.
  Generator gen(10);
  for (int trial = 0; trial < 5; ++trial) {
    const Shape s = random_shape(gen, 1, 3);
    const int64_t nd = int64_t(s.size());
    const std::optional<int64_t> axis =
        gen.below(4) == 0 ? std::nullopt : std::optional<int64_t>(random_axis(gen, nd));
    const bool keep = gen.below(2) == 1;
    const int64_t wax = random_axis(gen, nd);
    INFO("trial " << trial << " shape " << shape_str(s) << " axis " << (axis ? std::to_string(*axis) : "none")
                  << " keepdims " << keep << " weighted axis " << wax);
    check([=](const Vars& v) { return F::sum(v[0], axis, keep); }, {uniform(s, 20 + trial)});
    check([=](const Vars& v) { return F::mean(v[0], axis, keep); }, {uniform(s, 30 + trial)});
    check([=](const Vars& v) { return F::average(v[0], axis, Variable(), keep); }, {uniform(s, 40 + trial)});
    const Shape ws{s[size_t(wax < 0 ? wax + nd : wax)]};
    check([=](const Vars& v) { return F::average(v[0], wax, v[1], keep); },
          {uniform(s, 50 + trial), uniform(ws, 60 + trial, 0.5, 2)});
    check([=](const Vars& v) { return F::average(v[0], std::nullopt, v[1], keep); },
          {uniform(s, 70 + trial), uniform(s, 80 + trial, 0.5, 2)});
  }
}

TEST_CASE("sum, mean, average: forward values and shapes", "[functions][reduction]") {
  Variable x(Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}));
  CHECK(F::sum(x).item() == 21);
  CHECK(F::sum(x).shape() == Shape{});
  CHECK(values(F::sum(x, 0)) == std::vector<double>{5, 7, 9});
  CHECK(F::sum(x, -1, true).shape() == Shape{2, 1});
  CHECK(values(F::mean(x, 1)) == std::vector<double>{2, 5});
  CHECK(F::mean(x).item() == Approx(3.5));
  Variable w(Tensor::from_vector<double>({1, 0, 1}));
  CHECK(values(F::average(x, 1, w)) == std::vector<double>{2, 5});
  REQUIRE_THROWS_WITH(F::average(x, 0, w), Catch::Contains("average: weights have shape (3,) but x has shape (2, 3)"));
  REQUIRE_THROWS_WITH(F::sum(x, 2), Catch::Contains("sum: axis 2 is out of range"));
  REQUIRE_THROWS_WITH(F::mean(x, -3), Catch::Contains("mean: axis -3 is out of range for an array of 2 dimensions"));
}

TEST_CASE("reshape, transpose, concat, stack: gradients", "[functions][array]") {
  check([](const Vars& v) { return F::reshape(v[0], {3, -1}); }, {uniform({2, 3, 2}, 1)});
  check([](const Vars& v) { return F::transpose(v[0]); }, {uniform({2, 3, 4}, 2)});
  check([](const Vars& v) { return F::transpose(v[0], {1, 2, 0}); }, {uniform({2, 3, 4}, 3)});
  check([](const Vars& v) { return F::transpose(v[0], {-1, 0, 1}); }, {uniform({2, 3, 4}, 4)});
  for (int64_t axis : {0, 1, -1}) {
    INFO("axis " << axis);
    check([=](const Vars& v) { return F::concat({v[0], v[1], v[2]}, axis); },
          {uniform({2, 3}, 5), uniform({2, 3}, 6), uniform({2, 3}, 7)});
    check([=](const Vars& v) { return F::stack({v[0], v[1]}, axis); }, {uniform({2, 3}, 8), uniform({2, 3}, 9)});
  }
  check([](const Vars& v) { return F::concat({v[0], v[1]}); }, {uniform({2, 1, 2}, 10), uniform({2, 3, 2}, 11)});
  check([](const Vars& v) { return F::stack({v[0], v[1]}, 2); }, {uniform({2, 3}, 12), uniform({2, 3}, 13)});
  check([](const Vars& v) { return F::concat({v[0], v[1]}, 0); }, {uniform({1, 2}, 14), uniform({2, 2}, 15)},
        {.no_grads = {true, false}});

  // Random shapes: reshape to a random shape of the same size, transpose by a random
  // permutation (some axes negative) and by default, concat 2 or 3 arrays of random extents
  // along a random axis, stack 2 or 3 arrays along a random new axis.
  Generator gen(16);
  for (int trial = 0; trial < 5; ++trial) {
    const Shape s = random_shape(gen, 1, 4);
    const int64_t nd = int64_t(s.size());
    const Shape to = random_reshape(gen, s);
    std::vector<int64_t> perm = gen.permutation(nd);
    for (int64_t& a : perm)
      if (gen.below(2)) a -= nd;
    INFO("trial " << trial << " shape " << shape_str(s) << " reshape to " << shape_str(to) << " transpose axes "
                  << shape_str(perm));
    check([=](const Vars& v) { return F::reshape(v[0], to); }, {uniform(s, 20 + trial)});
    check([=](const Vars& v) { return F::transpose(v[0], perm); }, {uniform(s, 30 + trial)});
    check([](const Vars& v) { return F::transpose(v[0]); }, {uniform(s, 40 + trial)});
  }
  for (int trial = 0; trial < 5; ++trial) {
    const Shape base = random_shape(gen, 1, 3);
    const int64_t nd = int64_t(base.size()), axis = random_axis(gen, nd);
    std::vector<Tensor> xs(size_t(2 + gen.below(2)));
    for (size_t i = 0; i < xs.size(); ++i) {
      Shape si = base;
      si[size_t(axis < 0 ? axis + nd : axis)] = dim(gen);
      xs[i] = uniform(si, 50 + 10 * uint64_t(trial) + i);
    }
    INFO("trial " << trial << " concat of " << xs.size() << " along axis " << axis);
    check([=](const Vars& v) { return F::concat(v, axis); }, xs);
  }
  for (int trial = 0; trial < 5; ++trial) {
    const Shape s = random_shape(gen, 0, 3);
    const int64_t axis = random_axis(gen, int64_t(s.size()) + 1);
    std::vector<Tensor> xs(size_t(2 + gen.below(2)));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = uniform(s, 100 + 10 * uint64_t(trial) + i);
    INFO("trial " << trial << " stack of " << xs.size() << " " << shape_str(s) << " along axis " << axis);
    check([=](const Vars& v) { return F::stack(v, axis); }, xs);
  }
}

TEST_CASE("reshape, transpose, concat, stack: values and errors", "[functions][array]") {
  Variable a(Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3})), b(Tensor::from_vector<double>({7, 8}, {2, 1}));
  CHECK(values(F::transpose(a)) == std::vector<double>{1, 4, 2, 5, 3, 6});
  CHECK(F::transpose(a).data().is_contiguous());
  CHECK(values(F::concat({a, b})) == std::vector<double>{1, 2, 3, 7, 4, 5, 6, 8});
  CHECK(F::stack({a, a}, 1).shape() == Shape{2, 2, 3});
  CHECK(F::reshape(a, {3, 2}).shape() == Shape{3, 2});
  REQUIRE_THROWS_WITH(F::concat({a, b}, 0), Catch::Contains("concat: array 1 has shape (2, 1)"));
  REQUIRE_THROWS_WITH(F::stack({a, b}), Catch::Contains("stack: array 1 has shape (2, 1) but array 0 has (2, 3)"));
  REQUIRE_THROWS_WITH(F::reshape(a, {4, 2}), Catch::Contains("reshape: cannot reshape an array of shape (2, 3)"));
  REQUIRE_THROWS_WITH(F::transpose(a, {0}), Catch::Contains("transpose: axes (0,) has 1 entry but the array has 2 dimensions"));
  REQUIRE_THROWS_WITH(F::transpose(a, {1, -1}), Catch::Contains("transpose: axes (1, -1) name axis 1 twice"));
  REQUIRE_THROWS_WITH(F::transpose(a, {0, 2}),
                      Catch::Contains("transpose: axis 2 is out of range for an array of 2 dimensions"));
}

TEST_CASE("dropout", "[functions][dropout]") {
  Generator gen;
  // Reseeding before each call replays the same mask, so finite differences see one function.
  for (double ratio : {0.0, 0.3, 0.5}) {
    INFO("ratio " << ratio);
    check([&](const Vars& v) {
      gen.seed(42);
      return F::dropout(v[0], ratio, &gen);
    }, {uniform({4, 5}, 1)});
  }
  // Random shapes and ratios.
  Generator shapes(17);
  for (int trial = 0; trial < 4; ++trial) {
    const Shape s = random_shape(shapes, 1, 3);
    const double ratio = 0.1 * double(shapes.below(8));
    INFO("trial " << trial << " shape " << shape_str(s) << " ratio " << ratio);
    check([&, ratio](const Vars& v) {
      gen.seed(43 + uint64_t(trial));
      return F::dropout(v[0], ratio, &gen);
    }, {uniform(s, 10 + trial)});
  }

  // Values are 0 or x / (1 - ratio), about RATIO of them dropped.
  Variable x(Tensor::ones({100, 100}), true);
  Variable y = F::dropout(x, 0.25, &gen);
  int64_t dropped = 0;
  for (float v : y.data().to_vector<float>()) {
    REQUIRE((v == 0.0f || v == Approx(1.0 / 0.75)));
    dropped += v == 0.0f;
  }
  CHECK(dropped == Approx(2500).margin(250));
  F::sum(y).backward();  // the same mask scales the gradient
  CHECK(x.grad().to_vector<float>() == y.data().to_vector<float>());

  {
    config::TrainScope test_mode(false);
    Variable z = F::dropout(x, 0.5);
    CHECK(z.is(x));
  }
  REQUIRE_THROWS_WITH(F::dropout(x, 1.0), Catch::Contains("dropout: ratio 1 is outside [0, 1)"));
  REQUIRE_THROWS_WITH(F::dropout(x, -0.1), Catch::Contains("dropout: ratio -0.1 is outside [0, 1)"));
}

TEST_CASE("functions record nodes named as Chainer's functions", "[functions][graph]") {
  Variable x(Tensor::from_vector<float>({1, -2, 3, -4}, {2, 2}), true);
  Variable W(Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}), true);
  Variable y = F::linear(x, W);
  REQUIRE(y.creator());
  CHECK(y.creator()->name() == "Linear");
  CHECK(F::softmax_cross_entropy(y, Variable(labels({0, 1}))).creator()->name() == "SoftmaxCrossEntropy");
}
