// Tests of where (nn/functions/where.h): gradients with the condition and both arrays broadcast,
// Chainer's example, the comparison ops' masks as conditions, the errors.
#include <catch2/catch.hpp>

#include <cstdint>

#include "core/ops/ops.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

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
