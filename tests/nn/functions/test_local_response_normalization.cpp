// Tests of local_response_normalization (nn/functions/local_response_normalization.h): values
// against Chainer's formula for odd and even n and 2-D to 4-D inputs, gradients, the defaults.
#include <catch2/catch.hpp>

#include <cmath>

#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/reference_checks.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

namespace {
// Chainer's CPU definition: unit_scale = k + alpha sum over [c - n/2, c + n/2] of x^2.
Tensor naive_lrn(const Tensor& x, int64_t n, double k, double alpha, double beta) {
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C);
  const std::vector<double> v = values(x);
  std::vector<double> y(v.size());
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        double sum = 0;
        for (int64_t j = c - n / 2; j <= c + n / 2; ++j)
          if (j >= 0 && j < C) sum += v[size_t((b * C + j) * S + s)] * v[size_t((b * C + j) * S + s)];
        const size_t at = size_t((b * C + c) * S + s);
        y[at] = v[at] * std::pow(k + alpha * sum, -beta);
      }
  return Tensor::from_vector(y, x.shape());
}
}  // namespace

TEST_CASE("local_response_normalization: values equal Chainer's formula, odd and even n, 2-D to 4-D", "[lrn]") {
  struct Case {
    Shape x;
    int64_t n;
    double k, alpha, beta;
  };
  for (const Case& c : std::vector<Case>{{{2, 7, 3, 2}, 5, 2, 1e-4, 0.75},
                                         {{1, 6, 5}, 4, 1, 0.5, 0.6},
                                         {{3, 4}, 3, 0.5, 2.0, 1.5},
                                         {{2, 3, 2, 3}, 1, 2, 1.0, 0.75},
                                         {{2, 2, 3}, 9, 1, 0.3, 0.5}}) {
    INFO("x " << shape_str(c.x) << ", n " << c.n);
    const Tensor x = uniform(c.x, 31, -2, 2);
    CHECK_THAT(values(F::local_response_normalization(Variable(x), c.n, c.k, c.alpha, c.beta)),
               near(values(naive_lrn(x, c.n, c.k, c.alpha, c.beta))));
    check([&](const Vars& v) { return F::local_response_normalization(v[0], c.n, c.k, c.alpha, c.beta); }, {x});
  }
  // Chainer's defaults n=5, k=2, alpha=1e-4, beta=0.75.
  const Tensor x = uniform({2, 6, 2, 2}, 32, -3, 3);
  CHECK_THAT(values(F::local_response_normalization(Variable(x))), near(values(naive_lrn(x, 5, 2, 1e-4, 0.75))));
}
