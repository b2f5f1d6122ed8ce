// Tests of the sequence-list functions (nn/functions/sequence.h): transpose_sequence's steps
// and its inverse, pad_sequence's layout, and their errors. The generic checks are the registry's.
#include <catch2/catch.hpp>

#include "nn/functions.h"
#include "tests/function_inputs.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;

namespace {
// Sequence I of LENGTH rows of 2 features, valued 100 i + 10 t + feature.
Variable sequence(int i, int64_t length) {
  std::vector<double> v;
  for (int64_t t = 0; t < length; ++t)
    for (int k = 0; k < 2; ++k) v.push_back(100.0 * i + 10.0 * double(t) + k);
  return Variable(Tensor::from_vector(v, {length, 2}));
}
}  // namespace

TEST_CASE("transpose_sequence: step t holds row t of every sequence longer than t, and back",
          "[functions][sequence]") {
  const std::vector<Variable> xs = {sequence(0, 3), sequence(1, 2), sequence(2, 2), sequence(3, 0)};
  const std::vector<Variable> steps = F::transpose_sequence(xs);
  REQUIRE(steps.size() == 3);
  CHECK(values(steps[0]) == std::vector<double>{0, 1, 100, 101, 200, 201});
  CHECK(values(steps[1]) == std::vector<double>{10, 11, 110, 111, 210, 211});
  CHECK(values(steps[2]) == std::vector<double>{20, 21});
  const std::vector<Variable> back = F::transpose_sequence(steps);
  REQUIRE(back.size() == 3);  // the empty sequence has no row in any step
  for (size_t i = 0; i < 3; ++i) CHECK(values(back[i]) == values(xs[i]));
  CHECK(F::transpose_sequence({}).empty());
}

TEST_CASE("pad_sequence: (len(xs), L, ...) with each sequence followed by the padding", "[functions][sequence]") {
  const Variable y = F::pad_sequence({sequence(0, 1), sequence(1, 2)}, std::nullopt, -1.0);
  REQUIRE(y.shape() == Shape{2, 2, 2});
  CHECK(values(y) == std::vector<double>{0, 1, -1, -1, 100, 101, 110, 111});
  CHECK(F::pad_sequence({sequence(0, 1)}, 3).shape() == Shape{1, 3, 2});
}

TEST_CASE("transpose_sequence and pad_sequence: errors name the sequence and what was expected",
          "[functions][sequence][errors]") {
  CHECK_THROWS_WITH(F::transpose_sequence({sequence(0, 1), sequence(1, 2)}),
                    "transpose_sequence: sequence 1 (length 2) is longer than sequence 0 (length 1); sort the "
                    "sequences by length, longest first");
  CHECK_THROWS_WITH(F::transpose_sequence({sequence(0, 2), Variable(Tensor::zeros({1, 3}, DType::Float64))}),
                    Catch::Contains("transpose_sequence: sequence 1 has rows of shape (3,)"));
  CHECK_THROWS_WITH(F::pad_sequence({sequence(0, 3)}, 2),
                    "pad_sequence: length 2 is shorter than the longest sequence (3)");
  CHECK_THROWS_WITH(F::pad_sequence({}), "pad_sequence: no sequences given");
}
