// Tests of mean_squared_error (nn/functions/mean_squared_error.h): gradients over random shapes
// with either input as data, a forward value, the shape error.
#include <catch2/catch.hpp>

#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/random_shapes.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

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
