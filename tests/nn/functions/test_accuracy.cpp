// Tests of accuracy (nn/functions/accuracy.h): the share of right predictions with ignored labels
// and along axis 1 of a 3-D input, a float32 leaf of no graph, the shape error.
#include <catch2/catch.hpp>

#include "nn/functions.h"
#include "tests/function_inputs.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;

TEST_CASE("accuracy", "[functions][accuracy]") {
  Variable y(Tensor::from_vector<float>({0.1f, 0.9f, 0.8f, 0.2f, 0.3f, 0.7f, 0.6f, 0.4f}, {4, 2}), true);
  Variable acc = F::accuracy(y, Variable(labels({1, 0, 0, 0})));
  CHECK(acc.item() == Approx(0.75));
  CHECK(acc.dtype() == DType::Float32);
  CHECK(acc.is_leaf());
  CHECK(F::accuracy(y, Variable(labels({1, -1, -1, 1}))).item() == Approx(0.5));
  CHECK(F::accuracy(y, Variable(labels({-1, -1, -1, -1}))).item() == 0.0);
  // Class axis 1 of a 3-D input.
  Variable y3(Tensor::from_vector<double>({1, 0, 0, 1, /**/ 0, 1, 1, 0}, {2, 2, 2}));
  CHECK(F::accuracy(y3, Variable(Tensor::from_vector<int32_t>({0, 1, 1, 0}, {2, 2}))).item() == 1.0);
  REQUIRE_THROWS_WITH(F::accuracy(y, Variable(labels({1, 0}))),
                      Catch::Contains("accuracy: labels have shape (2,) but y has shape (4, 2)"));
}
