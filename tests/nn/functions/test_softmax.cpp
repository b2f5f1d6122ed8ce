// Tests of softmax and log_softmax (nn/functions/softmax.h): gradients over several axes and
// random shapes, values (large inputs do not overflow), the errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/random_shapes.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

TEST_CASE("softmax and log_softmax: gradients over several axes", "[functions][softmax]") {
  struct Case { Shape shape; int64_t axis; };
  const std::vector<Case> cases = {{{3, 4}, 1}, {{3, 4}, 0}, {{2, 3, 4}, 1}, {{2, 3, 4}, -1}, {{2, 3, 2}, 0}};
  for (const Case& c : cases) {
    INFO("axis " << c.axis);
    const int64_t axis = c.axis;
    check([axis](const Vars& v) { return F::softmax(v[0], axis); }, {uniform(c.shape, 4, -2, 2)});
    check([axis](const Vars& v) { return F::log_softmax(v[0], axis); }, {uniform(c.shape, 5, -2, 2)});
  }
  // Random shapes (rank 1 to 4) and axes, negative ones included.
  Generator gen(6);
  for (int trial = 0; trial < 5; ++trial) {
    const Shape s = random_shape(gen, 1, 4);
    const int64_t axis = random_axis(gen, int64_t(s.size()));
    INFO("trial " << trial << " shape " << shape_str(s) << " axis " << axis);
    check([axis](const Vars& v) { return F::softmax(v[0], axis); }, {uniform(s, 50 + trial, -2, 2)});
    check([axis](const Vars& v) { return F::log_softmax(v[0], axis); }, {uniform(s, 60 + trial, -2, 2)});
  }
  Variable y = F::softmax(Variable(Tensor::from_vector<double>({0, std::log(3.0), 5, 5}, {2, 2})));
  CHECK_THAT(values(y), Catch::Matchers::Approx(std::vector<double>{0.25, 0.75, 0.5, 0.5}));
  Variable ly = F::log_softmax(Variable(Tensor::from_vector<double>({1000, 1000}, {1, 2})));  // no overflow
  CHECK(values(ly)[0] == Approx(-std::log(2.0)));
}

TEST_CASE("softmax and log_softmax: errors", "[functions][softmax][errors]") {
  Variable x(Tensor::zeros({2, 3}, DType::Float64));
  REQUIRE_THROWS_WITH(F::softmax(x, 2),
                      Catch::Contains("softmax: axis 2 is out of range for an array of 2 dimensions"));
  REQUIRE_THROWS_WITH(F::log_softmax(x, -3),
                      Catch::Contains("log_softmax: axis -3 is out of range for an array of 2 dimensions"));
}
