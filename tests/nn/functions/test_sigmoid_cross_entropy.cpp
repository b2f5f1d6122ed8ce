// Tests of sigmoid_cross_entropy (nn/functions/sigmoid_cross_entropy.h): values with ignored
// labels and both normalizations, gradients against finite differences and by hand, the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/function_node.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/math_checks.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;
using Fn = std::function<Variable(const Vars&)>;

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
