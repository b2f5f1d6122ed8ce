// Tests of the LSTM links (nn/links/lstm.h): Chainer's parameters (names, shapes, the
// interleaved forget-gate bias), the stateful LSTM's steps against the cell function, a batch
// that shrinks as sequences end, reset_state, lazy sizing, and StatelessLSTM equal to LSTM.
#include <catch2/catch.hpp>

#include "nn/functions.h"
#include "nn/links/lstm.h"
#include "tests/function_inputs.h"

using namespace chainer;
namespace F = chainer::functions;
namespace L = chainer::links;

namespace {
Variable input(const Shape& shape, uint64_t seed) {
  return Variable(testing::uniform(shape, seed, -1, 1, DType::Float32));
}
// What one step of the link computes, from its parameters through functions::lstm.
std::pair<Variable, Variable> reference_step(L::LSTMBase& link, const Variable& c, const Variable& h,
                                             const Variable& x) {
  Variable g = F::linear(x, link.upward->W(), *link.upward->b());
  if (h.defined()) g = g + F::linear(h, link.lateral->W());
  return F::lstm(c, g);
}
}  // namespace

TEST_CASE("LSTM: Chainer's parameters: upward W and b, lateral W, the forget gates' bias 1", "[links][lstm]") {
  L::LSTM lstm(3, 4);
  std::vector<std::string> names;
  for (auto& [name, p] : lstm.namedparams()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"/lateral/W", "/upward/W", "/upward/b"});
  CHECK(lstm.upward->W().shape() == Shape{16, 3});
  CHECK(lstm.lateral->W().shape() == Shape{16, 4});
  CHECK(lstm.lateral->b() == nullptr);
  CHECK(lstm.upward->b()->data().to_vector<float>() ==
        std::vector<float>{0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0});
  L::LSTM custom(3, 2, 0.5, 0.25, 0.1, 2.0);
  CHECK(custom.lateral->W().data().to_vector<float>() == std::vector<float>(16, 0.5f));
  CHECK(custom.upward->W().data().to_vector<float>() == std::vector<float>(24, 0.25f));
  CHECK(custom.upward->b()->data().to_vector<float>() ==
        std::vector<float>{0.1f, 0.1f, 2, 0.1f, 0.1f, 0.1f, 2, 0.1f});
}

TEST_CASE("LSTM: each call advances (c, h) as the cell function does; reset_state starts again", "[links][lstm]") {
  L::LSTM lstm(3, 4);
  const Variable x1 = input({2, 3}, 1), x2 = input({2, 3}, 2);
  const Variable zeros(Tensor::zeros({2, 4}));
  auto [c1, h1] = reference_step(lstm, zeros, Variable(), x1);
  auto [c2, h2] = reference_step(lstm, c1, h1, x2);
  CHECK(lstm(x1).data().to_vector<float>() == h1.data().to_vector<float>());
  CHECK(lstm(x2).data().to_vector<float>() == h2.data().to_vector<float>());
  CHECK(lstm.c().data().to_vector<float>() == c2.data().to_vector<float>());
  lstm.reset_state();
  CHECK_FALSE(lstm.h().defined());
  CHECK(lstm(x1).data().to_vector<float>() == h1.data().to_vector<float>());
}

TEST_CASE("LSTM: a smaller batch advances the first rows and keeps the rest; a larger one is an error",
          "[links][lstm]") {
  L::LSTM lstm(3, 2);
  lstm(input({3, 3}, 3));
  const std::vector<float> c_before = lstm.c().data().to_vector<float>(), h_before = lstm.h().data().to_vector<float>();
  const Variable y = lstm(input({1, 3}, 4));
  CHECK(y.shape() == Shape{1, 2});
  REQUIRE(lstm.h().shape() == Shape{3, 2});
  const std::vector<float> c_after = lstm.c().data().to_vector<float>(), h_after = lstm.h().data().to_vector<float>();
  CHECK(std::vector<float>(h_after.begin() + 2, h_after.end()) == std::vector<float>(h_before.begin() + 2, h_before.end()));
  CHECK(std::vector<float>(c_after.begin() + 2, c_after.end()) == std::vector<float>(c_before.begin() + 2, c_before.end()));
  CHECK(std::vector<float>(h_after.begin(), h_after.begin() + 2) == y.data().to_vector<float>());
  CHECK_THROWS_WITH(lstm(input({4, 3}, 5)), "LSTM: the batch size of x (4) must be equal to or less than that of the "
                                            "previous state h (3)");
}

TEST_CASE("LSTM: the input size is taken from the first input when not given", "[links][lstm]") {
  L::LSTM lstm(5);
  CHECK(lstm.has_uninitialized_params());
  lstm(input({2, 7}, 6));
  CHECK(lstm.upward->W().shape() == Shape{20, 7});
  CHECK(lstm.in_size() == 7);
  CHECK(lstm.h().shape() == Shape{2, 5});
}

TEST_CASE("StatelessLSTM: the state passed in and out; one step equals LSTM's with the same parameters",
          "[links][lstm]") {
  L::StatelessLSTM cell(3, 4);
  L::LSTM lstm(3, 4);
  lstm.upward->W().set_data(cell.upward->W().data());
  lstm.lateral->W().set_data(cell.lateral->W().data());
  const Variable x1 = input({2, 3}, 7), x2 = input({2, 3}, 8);
  auto [c1, h1] = cell.forward(Variable(), Variable(), x1);
  auto [c2, h2] = cell.forward(c1, h1, x2);
  lstm(x1);
  CHECK(lstm(x2).data().to_vector<float>() == h2.data().to_vector<float>());
  CHECK(lstm.c().data().to_vector<float>() == c2.data().to_vector<float>());
}
