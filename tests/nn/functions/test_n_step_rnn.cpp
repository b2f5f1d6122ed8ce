// Tests of the recurrent stacks (nn/functions/n_step_rnn.h): Chainer's gate order on
// hand-computed steps (LSTM, GRU, tanh and ReLU RNNs), ragged batches equal to each sequence run
// alone (both directions: the backward one starts at each sequence's own end), dropout only in
// training, and the errors. The generic checks
// (finite differences, float32, no graph) are the registry's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/util/config.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

namespace {
double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

// Random parameters of LAYERS layers in DIRECTIONS directions, IN inputs, UNITS units, N weights.
struct Params {
  std::vector<Vars> ws, bs;
};
Params params(int64_t layers, int64_t directions, int64_t in, int64_t units, uint64_t seed, int n = 8) {
  Params p;
  for (int64_t layer = 0; layer < layers; ++layer)
    for (int64_t d = 0; d < directions; ++d) {
      p.ws.emplace_back();
      p.bs.emplace_back();
      for (int j = 0; j < n; ++j) {
        p.ws.back().emplace_back(uniform({units, j < n / 2 ? (layer ? units * directions : in) : units}, seed++));
        p.bs.back().emplace_back(uniform({units}, seed++));
      }
    }
  return p;
}

// Row I of every step of STEPS (time-major), as one sequence (L_i, features).
Variable sequence_of(const Vars& steps, int64_t i) {
  Vars rows;
  for (const Variable& s : steps)
    if (s.shape()[0] > i) rows.push_back(F::get_item(s, {F::Slice(i, i + 1)}));
  return F::concat(rows, 0);
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) CHECK(got[k] == Approx(want[k]).epsilon(1e-12).margin(1e-14));
}
}  // namespace

TEST_CASE("n_step_lstm: one unit, one step, Chainer's gates: i from w0/w4, f w1/w5, a w2/w6, o w3/w7",
          "[functions][n_step_rnn]") {
  const double x = 0.7, h = -0.3, c = 0.4;
  const double w[8] = {0.5, -0.2, 0.9, 0.3, -0.6, 0.8, 0.1, -0.4}, b[8] = {0.1, 0.2, -0.1, 0.05, 0.3, -0.2, 0.4, 0.0};
  std::vector<Vars> ws(1), bs(1);
  for (int j = 0; j < 8; ++j) {
    ws[0].emplace_back(Tensor::from_vector<double>({w[j]}, {1, 1}));
    bs[0].emplace_back(Tensor::from_vector<double>({b[j]}));
  }
  const Variable hx(Tensor::from_vector<double>({h}, {1, 1, 1})), cx(Tensor::from_vector<double>({c}, {1, 1, 1}));
  auto [hy, cy, ys] = F::n_step_lstm(1, 0.0, hx, cx, ws, bs, {Variable(Tensor::from_vector<double>({x}, {1, 1}))});
  const double i = sigmoid(w[0] * x + b[0] + w[4] * h + b[4]), f = sigmoid(w[1] * x + b[1] + w[5] * h + b[5]);
  const double a = std::tanh(w[2] * x + b[2] + w[6] * h + b[6]), o = sigmoid(w[3] * x + b[3] + w[7] * h + b[7]);
  const double c1 = f * c + i * a, h1 = o * std::tanh(c1);
  CHECK(values(cy)[0] == Approx(c1).epsilon(1e-14));
  CHECK(values(hy)[0] == Approx(h1).epsilon(1e-14));
  REQUIRE(ys.size() == 1);
  CHECK(values(ys[0])[0] == Approx(h1).epsilon(1e-14));
}

TEST_CASE("n_step_gru and n_step_rnn: one unit, one step, Chainer's formulas", "[functions][n_step_rnn]") {
  const double x = 0.7, h = -0.3;
  const double w[6] = {0.5, -0.2, 0.9, 0.3, -0.6, 0.8}, b[6] = {0.1, 0.2, -0.1, 0.05, 0.3, -0.2};
  const auto lists = [&](int n) {
    std::vector<Vars> ws(1), bs(1);
    for (int j = 0; j < n; ++j) {
      ws[0].emplace_back(Tensor::from_vector<double>({w[j]}, {1, 1}));
      bs[0].emplace_back(Tensor::from_vector<double>({b[j]}));
    }
    return std::pair{ws, bs};
  };
  const Variable hx(Tensor::from_vector<double>({h}, {1, 1, 1}));
  const Vars xs = {Variable(Tensor::from_vector<double>({x}, {1, 1}))};
  {
    auto [ws, bs] = lists(6);
    auto [hy, ys] = F::n_step_gru(1, 0.0, hx, ws, bs, xs);
    const double r = sigmoid(w[0] * x + b[0] + w[3] * h + b[3]), z = sigmoid(w[1] * x + b[1] + w[4] * h + b[4]);
    const double n = std::tanh(w[2] * x + b[2] + r * (w[5] * h + b[5]));
    CHECK(values(hy)[0] == Approx((1 - z) * n + z * h).epsilon(1e-14));
    CHECK(values(ys[0]) == values(hy));
  }
  auto [ws, bs] = lists(2);
  const double pre = w[0] * x + b[0] + w[1] * h + b[1];
  CHECK(values(F::n_step_rnn(1, 0.0, hx, ws, bs, xs).hy)[0] == Approx(std::tanh(pre)).epsilon(1e-14));
  CHECK(values(F::n_step_rnn(1, 0.0, hx, ws, bs, xs, "relu").hy)[0] == Approx(std::max(pre, 0.0)).epsilon(1e-14));
  CHECK_THROWS_WITH(F::n_step_rnn(1, 0.0, hx, ws, bs, xs, "sigmoid"),
                    "n_step_rnn: activation 'sigmoid' is not 'tanh' or 'relu'");
}

TEST_CASE("n_step_gru, n_step_rnn and their bidirectional twins: a ragged batch gives what each sequence gives alone",
          "[functions][n_step_rnn]") {
  for (const std::string kind : {"gru", "tanh", "relu"})
    for (bool bi : {false, true}) {
      INFO(kind << (bi ? ", bidirectional" : ""));
      const int64_t layers = 2, directions = bi ? 2 : 1, in = 3, units = 4;
      const Params p = params(layers, directions, in, units, 70, kind == "gru" ? 6 : 2);
      const auto run = [&](const Variable& hx, const Vars& xs) {
        if (kind == "gru") return bi ? F::n_step_bigru(layers, 0.0, hx, p.ws, p.bs, xs) : F::n_step_gru(layers, 0.0, hx, p.ws, p.bs, xs);
        return bi ? F::n_step_birnn(layers, 0.0, hx, p.ws, p.bs, xs, kind) : F::n_step_rnn(layers, 0.0, hx, p.ws, p.bs, xs, kind);
      };
      Vars seqs;
      for (int64_t i = 0; i < 3; ++i) seqs.emplace_back(uniform({4 - i, in}, 300 + uint64_t(i)));
      const Variable hx(uniform({layers * directions, 3, units}, 310));
      auto [hy, ys] = run(hx, F::transpose_sequence(seqs));
      for (int64_t i = 0; i < 3; ++i) {
        INFO("sequence " << i);
        const Variable h1 = F::get_item(hx, {F::Slice(), F::Slice(i, i + 1)});
        auto [hy1, ys1] = run(h1, F::transpose_sequence({seqs[size_t(i)]}));
        expect_near(values(sequence_of(ys, i)), values(F::concat(ys1, 0)));
        expect_near(values(F::get_item(hy, {F::Slice(), F::Slice(i, i + 1)})), values(hy1));
      }
    }
}

TEST_CASE("n_step_lstm and n_step_bilstm: a ragged batch gives what each sequence gives alone",
          "[functions][n_step_rnn]") {
  for (bool bi : {false, true}) {
    INFO((bi ? "n_step_bilstm" : "n_step_lstm"));
    const int64_t layers = 2, directions = bi ? 2 : 1, in = 3, units = 4;
    const Params p = params(layers, directions, in, units, 10);
    const std::vector<int64_t> lengths = {4, 3, 3, 1};
    Vars seqs;
    for (size_t i = 0; i < lengths.size(); ++i) seqs.emplace_back(uniform({lengths[i], in}, 100 + i));
    const Variable hx(uniform({layers * directions, 4, units}, 200)), cx(uniform({layers * directions, 4, units}, 201));
    const auto run = bi ? F::n_step_bilstm : F::n_step_lstm;
    auto [hy, cy, ys] = run(layers, 0.0, hx, cx, p.ws, p.bs, F::transpose_sequence(seqs));
    REQUIRE(ys.size() == 4);
    REQUIRE(ys[0].shape() == Shape{4, units * directions});
    REQUIRE(ys[3].shape() == Shape{1, units * directions});
    for (int64_t i = 0; i < 4; ++i) {
      INFO("sequence " << i);
      const auto rows = [&](const Variable& s) { return F::get_item(s, {F::Slice(), F::Slice(i, i + 1)}); };
      auto [hy1, cy1, ys1] = run(layers, 0.0, rows(hx), rows(cx), p.ws, p.bs, F::transpose_sequence({seqs[size_t(i)]}));
      expect_near(values(sequence_of(ys, i)), values(F::concat(ys1, 0)));
      expect_near(values(rows(hy)), values(hy1));
      expect_near(values(rows(cy)), values(cy1));
    }
  }
}

TEST_CASE("n_step_lstm: dropout between layers in training only; none before the first layer",
          "[functions][n_step_rnn]") {
  const Params p = params(2, 1, 3, 4, 30);
  const Vars xs = {Variable(uniform({2, 3}, 40)), Variable(uniform({2, 3}, 41))};
  const auto run = [&](int64_t layers, double ratio) {
    std::vector<Vars> ws(p.ws.begin(), p.ws.begin() + layers), bs(p.bs.begin(), p.bs.begin() + layers);
    return values(F::n_step_lstm(layers, ratio, Variable(), Variable(), ws, bs, xs).hy);
  };
  CHECK(run(1, 0.9) == run(1, 0.0));  // one layer: nothing to drop
  CHECK(run(2, 0.5) != run(2, 0.0));
  {
    config::TrainScope test_mode(false);
    CHECK(run(2, 0.5) == run(2, 0.0));
  }
}

TEST_CASE("n_step_lstm: errors name the function and the expected shapes", "[functions][n_step_rnn][errors]") {
  const Params p = params(1, 1, 3, 4, 50);
  const Vars xs = {Variable(uniform({2, 3}, 60))};
  CHECK_THROWS_WITH(F::n_step_lstm(2, 0.0, Variable(), Variable(), p.ws, p.bs, xs),
                    "n_step_lstm: 1 weight lists and 1 bias lists for 2 layers (expected 2 of each: layers * "
                    "directions)");
  CHECK_THROWS_WITH(F::n_step_lstm(1, 0.0, Variable(uniform({1, 3, 4}, 61)), Variable(), p.ws, p.bs, xs),
                    "n_step_lstm: hx has shape (1, 3, 4) (expected (1, 2, 4): layers * directions, the batch, the "
                    "units)");
  CHECK_THROWS_WITH(F::n_step_lstm(1, 0.0, Variable(), Variable(), p.ws, p.bs, {xs[0], Variable(uniform({3, 3}, 62))}),
                    Catch::Contains("n_step_lstm: step 1 has a batch of 3, larger than step 0's 2"));
}
