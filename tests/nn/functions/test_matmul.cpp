// Tests of matmul (nn/functions/matmul.h): gradients for every transposition over fixed and
// random sizes, values, the shape error; stacks of matrices with broadcasting, vectors, and
// batch_matmul.
#include <catch2/catch.hpp>

#include "core/ops/ops.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/random_shapes.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

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

TEST_CASE("matmul: stacks of matrices give each pair's product, the leading axes broadcast as numpy's",
          "[functions][matmul]") {
  const Tensor a = uniform({2, 1, 3, 4}, 11), b = uniform({3, 4, 5}, 12);
  const Variable y = F::matmul(Variable(a), Variable(b));
  REQUIRE(y.shape() == Shape{2, 3, 3, 5});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      INFO("product [" << i << ", " << j << "]");
      const std::vector<double> want = values(ops::matmul(a[i][0], b[j]));
      const std::vector<double> got = values(y.data()[i][j]);
      REQUIRE(got.size() == want.size());
      for (size_t k = 0; k < want.size(); ++k) CHECK(got[k] == Approx(want[k]).epsilon(1e-14));
    }
  // A 2-D operand is one matrix for the whole stack; transposition acts on the last two axes.
  const Tensor m = uniform({4, 5}, 13);
  const Variable z = F::matmul(Variable(b), Variable(m), false, true);
  REQUIRE(z.shape() == Shape{3, 4, 4});
  const std::vector<double> want = values(ops::matmul(b[1], m, false, true)), got = values(z.data()[1]);
  for (size_t k = 0; k < want.size(); ++k) CHECK(got[k] == Approx(want[k]).epsilon(1e-14));
}

TEST_CASE("matmul: vectors are rows on the left and columns on the right, their axis dropped",
          "[functions][matmul]") {
  const Variable v(Tensor::from_vector<double>({1, 2, 3})), w(Tensor::from_vector<double>({4, 5, 6}));
  const Variable dot = F::matmul(v, w);
  CHECK(dot.shape() == Shape{});
  CHECK(values(dot) == std::vector<double>{32});
  const Variable m(Tensor::from_vector<double>({1, 0, 0, 0, 1, 1}, {2, 3}));
  CHECK(values(F::matmul(m, v)) == std::vector<double>{1, 5});
  CHECK(F::matmul(v, Variable(Tensor::ones({2, 3, 4}, DType::Float64))).shape() == Shape{2, 4});
}

TEST_CASE("batch_matmul: Chainer's batches, 2-D operands as batches of column vectors", "[functions][matmul]") {
  const Variable a(uniform({3, 4}, 14)), b(uniform({3, 4}, 15));
  const Variable y = F::batch_matmul(a, b, true, false);  // (3, 1, 4) @ (3, 4, 1): the rows' dot products
  REQUIRE(y.shape() == Shape{3, 1, 1});
  const std::vector<double> av = values(a), bv = values(b), yv = values(y);
  for (int i = 0; i < 3; ++i) {
    double want = 0;
    for (int k = 0; k < 4; ++k) want += av[size_t(4 * i + k)] * bv[size_t(4 * i + k)];
    CHECK(yv[size_t(i)] == Approx(want).epsilon(1e-14));
  }
}

TEST_CASE("matmul and batch_matmul: errors name the function and the shapes", "[functions][matmul][errors]") {
  const Variable a(Tensor::zeros({2, 3, 4})), b(Tensor::zeros({3, 4, 5}));
  CHECK_THROWS_WITH(F::matmul(a, b), "matmul: the leading axes of shapes (2, 3, 4) and (3, 4, 5) do not broadcast");
  CHECK_THROWS_WITH(F::matmul(a, Variable(Tensor::zeros({2, 3, 5}))),
                    Catch::Contains("matmul: shapes (2, 3, 4) and (2, 3, 5) are not aligned (4 != 3)"));
  CHECK_THROWS_WITH(F::matmul(Variable(Tensor::zeros({})), a), Catch::Contains("matmul: 0-dimensional operand"));
  CHECK_THROWS_WITH(F::batch_matmul(a, Variable(Tensor::zeros({3, 4, 1}))),
                    "batch_matmul: batches of 2 and 3 matrices (shapes (2, 3, 4) and (3, 4, 1))");
}
