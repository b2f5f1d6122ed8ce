// Tests of embed_id (nn/functions/embed_id.h): the rows it picks for ids of any shape, zeros and
// no gradient for ignore_label, the gradient of repeated ids summed, and the errors. The generic
// checks (finite differences, float32, no graph) are the registry's (function_cases.cpp).
#include <catch2/catch.hpp>

#include "nn/functions.h"
#include "tests/function_inputs.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;

namespace {
// W (4, 3) with w[r][d] = 10 r + d.
Tensor table() {
  std::vector<double> v;
  for (int r = 0; r < 4; ++r)
    for (int d = 0; d < 3; ++d) v.push_back(10.0 * r + d);
  return Tensor::from_vector(v, {4, 3});
}
}  // namespace

TEST_CASE("embed_id: ids of any shape pick W's rows, int32 and int64 alike", "[functions][embed_id]") {
  const Variable W(table());
  const Variable y = F::embed_id(Variable(Tensor::from_vector<int32_t>({3, 0, 3, 1}, {2, 2})), W);
  CHECK(y.shape() == Shape{2, 2, 3});
  CHECK(values(y) == std::vector<double>{30, 31, 32, 0, 1, 2, 30, 31, 32, 10, 11, 12});
  const Variable z = F::embed_id(Variable(Tensor::from_vector<int64_t>({2})), W);
  CHECK(z.shape() == Shape{1, 3});
  CHECK(values(z) == std::vector<double>{20, 21, 22});
  CHECK(F::embed_id(Variable(Tensor::zeros({0}, DType::Int32)), W).shape() == Shape{0, 3});
}

TEST_CASE("embed_id: ignore_label gives a row of zeros and sends no gradient", "[functions][embed_id]") {
  Variable W(table(), true);
  const Variable y = F::embed_id(Variable(Tensor::from_vector<int32_t>({1, 7, 1, 2})), W, 7);
  CHECK(values(y) == std::vector<double>{10, 11, 12, 0, 0, 0, 10, 11, 12, 20, 21, 22});
  F::sum(y * Variable(Tensor::from_vector<double>({1, 2, 3, 4}, {4, 1}))).backward();
  // Row 1 twice (weights 1 and 3), row 2 once (4), the ignored position's weight 2 nowhere.
  CHECK(values(W.grad()) == std::vector<double>{0, 0, 0, 4, 4, 4, 4, 4, 4, 0, 0, 0});
}

TEST_CASE("embed_id: errors name the function, the id and the range", "[functions][embed_id][errors]") {
  const Variable W(table());
  CHECK_THROWS_WITH(F::embed_id(Variable(Tensor::from_vector<int32_t>({0, 4})), W),
                    "embed_id: id 4 at flat position 1 is outside [0, 4)");
  CHECK_THROWS_WITH(F::embed_id(Variable(Tensor::from_vector<int32_t>({-1})), W, -2),
                    "embed_id: id -1 at flat position 0 is outside [0, 4) and is not the ignore_label -2");
  CHECK_THROWS_WITH(F::embed_id(Variable(Tensor::from_vector<float>({1})), W),
                    Catch::Contains("embed_id: ids have dtype float32 (expected int32 or int64)"));
  CHECK_THROWS_WITH(F::embed_id(Variable(Tensor::from_vector<int32_t>({1})), Variable(Tensor::zeros({4}))),
                    Catch::Contains("embed_id: W has shape (4,) (expected (n, D))"));
}
