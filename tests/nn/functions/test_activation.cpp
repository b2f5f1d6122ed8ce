// Tests of the activations (nn/functions/activation.h): relu, sigmoid, tanh, leaky_relu, elu and
// softplus against finite differences in float64, their values with Chainer's defaults and other
// parameters (no overflow), their gradients at 0, as Chainer's.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "core/ops/ops.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/random_shapes.h"
#include "tests/nn/functions/reference_checks.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

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

TEST_CASE("leaky_relu, elu and softplus: hand-computed values with Chainer's defaults and other parameters",
          "[activation]") {
  const Tensor x = Tensor::from_vector<double>({-2, -0.5, 0, 1.5});
  CHECK_THAT(values(F::leaky_relu(Variable(x))), near({-0.4, -0.1, 0, 1.5}));
  CHECK_THAT(values(F::leaky_relu(Variable(x), 0.5)), near({-1, -0.25, 0, 1.5}));
  CHECK_THAT(values(F::elu(Variable(x))), near({std::expm1(-2.0), std::expm1(-0.5), 0, 1.5}));
  CHECK_THAT(values(F::elu(Variable(x), 2.0)), near({2 * std::expm1(-2.0), 2 * std::expm1(-0.5), 0, 1.5}));
  CHECK_THAT(values(F::softplus(Variable(x))),
             near({std::log1p(std::exp(-2.0)), std::log1p(std::exp(-0.5)), std::log(2.0), std::log1p(std::exp(1.5))}));
  CHECK_THAT(values(F::softplus(Variable(x), 2.0)),
             near({std::log1p(std::exp(-4.0)) / 2, std::log1p(std::exp(-1.0)) / 2, std::log(2.0) / 2,
                   std::log1p(std::exp(3.0)) / 2}));
  // No overflow: softplus(1000) is 1000, softplus(-1000) is 0, in float32 too.
  const Tensor big = Tensor::from_vector<float>({1000, -1000});
  CHECK_THAT(values(F::softplus(Variable(big))), near({1000, 0}));
}

TEST_CASE("leaky_relu, elu and softplus: gradients match finite differences; at 0 they are Chainer's",
          "[activation][gradient]") {
  for (const Shape& shape : {Shape{5, 7}, Shape{3, 1, 4}, Shape{1}}) {
    INFO("x " << shape_str(shape));
    const Tensor x = away_from_zero(shape, 41);
    check([](const Vars& v) { return F::leaky_relu(v[0]); }, {x});
    check([](const Vars& v) { return F::leaky_relu(v[0], -0.3); }, {x});
    check([](const Vars& v) { return F::elu(v[0], 1.7); }, {x});
    check([](const Vars& v) { return F::softplus(v[0]); }, {ops::mul_scalar(x, 3.0)});
    check([](const Vars& v) { return F::softplus(v[0], 0.5); }, {x});
  }
  // At x = 0: leaky_relu's slope is 1 (x >= 0 is the positive side), elu's is alpha (Chainer's
  // backward takes x <= 0), softplus's is sigmoid(0) = 1/2.
  const auto grad_at_zero = [](const std::function<Variable(const Variable&)>& f) {
    Variable x(Tensor::zeros({1}, DType::Float64), true);
    Variable y = f(x);
    y.set_grad(Tensor::ones({1}, DType::Float64));
    y.backward();
    return values(x.grad())[0];
  };
  CHECK(grad_at_zero([](const Variable& x) { return F::leaky_relu(x); }) == 1.0);
  CHECK(grad_at_zero([](const Variable& x) { return F::elu(x, 0.7); }) == Approx(0.7));
  CHECK(grad_at_zero([](const Variable& x) { return F::softplus(x, 3.0); }) == Approx(0.5));
}
