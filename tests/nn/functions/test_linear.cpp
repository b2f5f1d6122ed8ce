// Tests of linear and linear_relu (nn/functions/linear.h): gradients against finite differences
// with and without bias and over random sizes, forward values, linear_relu bit for bit against
// relu(linear), the errors; and the names of the nodes the functions record.
#include <catch2/catch.hpp>

#include <cmath>

#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/random_shapes.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

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

TEST_CASE("functions record nodes named as Chainer's functions", "[functions][graph]") {
  Variable x(Tensor::from_vector<float>({1, -2, 3, -4}, {2, 2}), true);
  Variable W(Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}), true);
  Variable y = F::linear(x, W);
  REQUIRE(y.creator());
  CHECK(y.creator()->name() == "Linear");
  CHECK(F::softmax_cross_entropy(y, Variable(labels({0, 1}))).creator()->name() == "SoftmaxCrossEntropy");
}
