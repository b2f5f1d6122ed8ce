// Tests of huber_loss (nn/functions/huber_loss.h): values on both branches and both reductions,
// gradients against finite differences away from the kinks, the errors.
#include <catch2/catch.hpp>

#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

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
