// Tests of the LSTM cell (nn/functions/lstm.h): Chainer's formula on its interleaved gate layout
// against a loop written from it, the rows of c_prev beyond x passed through with their
// gradient, and the errors. The generic checks are the registry's (function_cases.cpp).
#include <catch2/catch.hpp>

#include <cmath>

#include "nn/functions.h"
#include "tests/function_inputs.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;

namespace {
double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }
}  // namespace

TEST_CASE("lstm: c and h follow Chainer's formula with the gates of unit u at columns 4u .. 4u + 3",
          "[functions][lstm]") {
  const int64_t batch = 3, units = 2;
  const Tensor x = uniform({batch, 4 * units}, 1, -2, 2), c_prev = uniform({batch, units}, 2);
  auto [c, h] = F::lstm(Variable(c_prev), Variable(x));
  REQUIRE(c.shape() == Shape{batch, units});
  REQUIRE(h.shape() == Shape{batch, units});
  const std::vector<double> xv = values(x), cp = values(c_prev), cv = values(c), hv = values(h);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t u = 0; u < units; ++u) {
      const double* g = &xv[size_t(b * 4 * units + 4 * u)];
      const double want_c = std::tanh(g[0]) * sigmoid(g[1]) + sigmoid(g[2]) * cp[size_t(b * units + u)];
      INFO("row " << b << ", unit " << u);
      CHECK(cv[size_t(b * units + u)] == Approx(want_c).epsilon(1e-14));
      CHECK(hv[size_t(b * units + u)] == Approx(sigmoid(g[3]) * std::tanh(want_c)).epsilon(1e-14));
    }
}

TEST_CASE("lstm: rows of c_prev beyond x pass through to c, and so does their gradient", "[functions][lstm]") {
  Variable c_prev(uniform({4, 2}, 3), true), x(uniform({1, 8}, 4), true);
  auto [c, h] = F::lstm(c_prev, x);
  REQUIRE(c.shape() == Shape{4, 2});
  REQUIRE(h.shape() == Shape{1, 2});
  const std::vector<double> cv = values(c), cp = values(c_prev);
  CHECK(std::vector<double>(cv.begin() + 2, cv.end()) == std::vector<double>(cp.begin() + 2, cp.end()));
  F::sum(c).backward();
  const std::vector<double> g = values(c_prev.grad());
  CHECK(std::vector<double>(g.begin() + 2, g.end()) == std::vector<double>(6, 1.0));
}

TEST_CASE("lstm: shapes that do not fit are errors naming the shapes expected", "[functions][lstm][errors]") {
  const Variable c(Tensor::zeros({2, 3})), x8(Tensor::zeros({2, 8})), x12(Tensor::zeros({3, 12}));
  CHECK_THROWS_WITH(F::lstm(c, x8), "lstm: c_prev has shape (2, 3) and x (2, 8); expected c_prev (B', U) and x (B, 4 U) "
                                    "with B <= B'");
  CHECK_THROWS_WITH(F::lstm(c, x12), Catch::Contains("x (3, 12)") && Catch::Contains("B <= B'"));
  CHECK_THROWS_WITH(F::lstm(Variable(Tensor::zeros({2, 3}, DType::Float64)), Variable(Tensor::zeros({2, 12}))),
                    Catch::Contains("lstm") && Catch::Contains("float64") && Catch::Contains("float32"));
}
