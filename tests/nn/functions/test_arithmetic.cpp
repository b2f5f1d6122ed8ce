// Tests of the arithmetic on variables (nn/functions/arithmetic.h): add, sub, mul and div with
// numpy broadcasting, scalars on either side and negation, against finite differences and
// hand-computed values; the errors.
#include <catch2/catch.hpp>

#include <functional>

#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/random_shapes.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;
using Fn = std::function<Variable(const Vars&)>;

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
