// Tests of matmul (nn/functions/matmul.h): gradients for every transposition over fixed and
// random sizes, values, the shape error.
#include <catch2/catch.hpp>

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
