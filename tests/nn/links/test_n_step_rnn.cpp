// Tests of the recurrent stack links (nn/links/n_step_rnn.h): Chainer's parameters (names,
// shapes, initial values), sequences in any order and of any lengths equal to each sequence run
// alone, and the errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "nn/functions.h"
#include "nn/links/n_step_rnn.h"
#include "tests/function_inputs.h"

using namespace chainer;
namespace F = chainer::functions;
namespace L = chainer::links;

namespace {
Variable input(const Shape& shape, uint64_t seed) {
  return Variable(testing::uniform(shape, seed, -1, 1, DType::Float32));
}
}  // namespace

TEST_CASE("NStepLSTM and NStepBiLSTM: a child per layer and direction holding w0 .. w7 and b0 .. b7",
          "[links][n_step_rnn]") {
  L::NStepBiLSTM lstm(2, 5, 3, 0.1);
  const auto params = lstm.namedparams();
  REQUIRE(params.size() == 4 * 16);
  CHECK(params[0].first == "/0/b0");
  std::map<std::string, Shape> shapes;
  for (const auto& [name, p] : params) shapes[name] = p.shape();
  CHECK(shapes["/0/w0"] == Shape{3, 5});   // layer 0 forward reads the input
  CHECK(shapes["/1/w3"] == Shape{3, 5});   // layer 0 backward too
  CHECK(shapes["/2/w0"] == Shape{3, 6});   // layer 1 reads both directions' outputs
  CHECK(shapes["/3/w7"] == Shape{3, 3});
  CHECK(shapes["/3/b7"] == Shape{3});
  CHECK(lstm.params()[0].data().to_vector<float>() == std::vector<float>(3, 0.0f));  // a bias
  L::NStepLSTM big(1, 400, 50, 0.0);
  const std::vector<float> w = big.namedlinks(true)[0].second->param("w0").data().to_vector<float>();
  double squares = 0;
  for (float v : w) squares += double(v) * v;
  CHECK(std::sqrt(squares / double(w.size())) == Approx(std::sqrt(1.0 / 400)).epsilon(0.05));  // LeCunNormal
}

TEST_CASE("NStepLSTM: sequences in any order give the function's results on the sorted steps, in their order",
          "[links][n_step_rnn]") {
  for (bool bi : {false, true}) {
    INFO((bi ? "NStepBiLSTM" : "NStepLSTM"));
    std::shared_ptr<L::NStepLSTMBase> lstm;
    if (bi) lstm = std::make_shared<L::NStepBiLSTM>(2, 3, 4, 0.0);
    else lstm = std::make_shared<L::NStepLSTM>(2, 3, 4, 0.0);
    const int64_t d = bi ? 2 : 1;
    const std::vector<Variable> xs = {input({2, 3}, 1), input({5, 3}, 2), input({3, 3}, 3)};
    const Variable hx = input({2 * d, 3, 4}, 4);
    auto [hy, cy, ys] = lstm->forward(hx, Variable(), xs);
    REQUIRE(ys.size() == 3);
    CHECK(ys[0].shape() == Shape{2, 4 * d});
    CHECK(ys[1].shape() == Shape{5, 4 * d});
    CHECK(hy.shape() == Shape{2 * d, 3, 4});
    // Each sequence alone, with its own row of hx.
    for (int64_t i = 0; i < 3; ++i) {
      INFO("sequence " << i);
      auto [hy1, cy1, ys1] =
          lstm->forward(F::get_item(hx, {F::Slice(), F::Slice(i, i + 1)}), Variable(), {xs[size_t(i)]});
      const std::vector<float> want = ys1[0].data().to_vector<float>(), got = ys[size_t(i)].data().to_vector<float>();
      REQUIRE(got.size() == want.size());
      for (size_t k = 0; k < want.size(); ++k) CHECK(got[k] == Approx(want[k]).epsilon(1e-5).margin(1e-6));
      const std::vector<float> h_want = hy1.data().to_vector<float>(),
                               h_got = F::get_item(hy, {F::Slice(), F::Slice(i, i + 1)}).data().to_vector<float>();
      for (size_t k = 0; k < h_want.size(); ++k) CHECK(h_got[k] == Approx(h_want[k]).epsilon(1e-5).margin(1e-6));
    }
  }
}

TEST_CASE("NStepGRU, NStepRNNTanh/ReLU and their Bi twins: 6 or 2 weights, results in the sequences' order",
          "[links][n_step_rnn]") {
  std::vector<std::shared_ptr<L::NStepGRUBase>> stacks = {
      std::make_shared<L::NStepGRU>(2, 3, 4, 0.0), std::make_shared<L::NStepBiGRU>(2, 3, 4, 0.0),
      std::make_shared<L::NStepRNNTanh>(2, 3, 4, 0.0), std::make_shared<L::NStepRNNReLU>(2, 3, 4, 0.0),
      std::make_shared<L::NStepBiRNNTanh>(2, 3, 4, 0.0), std::make_shared<L::NStepBiRNNReLU>(2, 3, 4, 0.0)};
  const std::vector<size_t> counts = {2 * 12, 4 * 12, 2 * 4, 2 * 4, 4 * 4, 4 * 4};
  for (size_t s = 0; s < stacks.size(); ++s) {
    INFO("stack " << s);
    CHECK(stacks[s]->namedparams().size() == counts[s]);
    const int64_t d = stacks[s]->directions();
    const std::vector<Variable> xs = {input({2, 3}, 11), input({4, 3}, 12)};
    auto [hy, ys] = stacks[s]->forward(Variable(), xs);
    CHECK(hy.shape() == Shape{2 * d, 2, 4});
    REQUIRE(ys.size() == 2);
    CHECK(ys[1].shape() == Shape{4, 4 * d});
    auto [hy1, ys1] = stacks[s]->forward(Variable(), {xs[0]});
    const std::vector<float> want = ys1[0].data().to_vector<float>(), got = ys[0].data().to_vector<float>();
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < want.size(); ++k) CHECK(got[k] == Approx(want[k]).epsilon(1e-5).margin(1e-6));
  }
}

TEST_CASE("NStepLSTM: errors name the link and the value", "[links][n_step_rnn][errors]") {
  CHECK_THROWS_WITH(L::NStepLSTM(0, 3, 4, 0.0), Catch::Contains("NStepLSTM: n_layers, in_size and out_size must be positive"));
  CHECK_THROWS_WITH(L::NStepBiLSTM(1, 3, 4, 1.0), "NStepBiLSTM: dropout 1 is outside [0, 1)");
  L::NStepLSTM lstm(1, 3, 4, 0.0);
  CHECK_THROWS_WITH(lstm.forward(Variable(), Variable(), {}), "NStepLSTM: no sequences given");
  L::NStepGRU gru(1, 3, 4, 0.0);
  CHECK_THROWS_WITH(gru.forward(Variable(), {}), "NStepGRU: no sequences given");
}
