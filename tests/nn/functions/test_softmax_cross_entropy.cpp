// Tests of softmax_cross_entropy (nn/functions/softmax_cross_entropy.h): forward values with
// ignored labels and large logits, gradients against finite differences, the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>

#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/random_shapes.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;
using Fn = std::function<Variable(const Vars&)>;

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
