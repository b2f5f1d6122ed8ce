// Tests of dropout (nn/functions/dropout.h): gradients with a replayed mask over several ratios
// and random shapes, the values and the share dropped, the identity in test mode, the errors.
#include <catch2/catch.hpp>

#include "core/util/config.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/random_shapes.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

TEST_CASE("dropout", "[functions][dropout]") {
  Generator gen;
  // Reseeding before each call replays the same mask, so finite differences see one function.
  for (double ratio : {0.0, 0.3, 0.5}) {
    INFO("ratio " << ratio);
    check([&](const Vars& v) {
      gen.seed(42);
      return F::dropout(v[0], ratio, &gen);
    }, {uniform({4, 5}, 1)});
  }
  // Random shapes and ratios.
  Generator shapes(17);
  for (int trial = 0; trial < 4; ++trial) {
    const Shape s = random_shape(shapes, 1, 3);
    const double ratio = 0.1 * double(shapes.below(8));
    INFO("trial " << trial << " shape " << shape_str(s) << " ratio " << ratio);
    check([&, ratio](const Vars& v) {
      gen.seed(43 + uint64_t(trial));
      return F::dropout(v[0], ratio, &gen);
    }, {uniform(s, 10 + trial)});
  }

  // Values are 0 or x / (1 - ratio), about RATIO of them dropped.
  Variable x(Tensor::ones({100, 100}), true);
  Variable y = F::dropout(x, 0.25, &gen);
  int64_t dropped = 0;
  for (float v : y.data().to_vector<float>()) {
    REQUIRE((v == 0.0f || v == Approx(1.0 / 0.75)));
    dropped += v == 0.0f;
  }
  CHECK(dropped == Approx(2500).margin(250));
  F::sum(y).backward();  // the same mask scales the gradient
  CHECK(x.grad().to_vector<float>() == y.data().to_vector<float>());

  {
    config::TrainScope test_mode(false);
    Variable z = F::dropout(x, 0.5);
    CHECK(z.is(x));
  }
  REQUIRE_THROWS_WITH(F::dropout(x, 1.0), Catch::Contains("dropout: ratio 1 is outside [0, 1)"));
  REQUIRE_THROWS_WITH(F::dropout(x, -0.1), Catch::Contains("dropout: ratio -0.1 is outside [0, 1)"));
}
