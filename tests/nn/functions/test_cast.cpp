// Tests of cast (nn/functions/cast.h): values rounded to the target dtype, the gradient converted
// back to the input's dtype, the identity for the same dtype, finite differences through the
// half types, and the errors.
#include <catch2/catch.hpp>

#include "core/ops/ops.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

TEST_CASE("cast: values round to the target dtype and gradients come back in the input's", "[functions][cast]") {
  Variable x(Tensor::from_vector<float>({1.0f, 1.0f + 0x1p-12f, -65520.0f, 3.0f}), true);
  const Variable h = F::cast(x, DType::Float16);
  CHECK(h.dtype() == DType::Float16);
  // 1 + 2^-12 rounds to 1 (ties to even), 65520 overflows float16 to infinity.
  const std::vector<double> hv = values(h);
  CHECK(hv[0] == 1.0);
  CHECK(hv[1] == 1.0);
  CHECK(std::isinf(hv[2]));
  CHECK(hv[3] == 3.0);
  const Variable b = F::cast(x, DType::BFloat16);
  CHECK(b.dtype() == DType::BFloat16);
  F::sum(F::mul(h, h)).backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().dtype() == DType::Float32);
  CHECK(x.grad().to_vector<float>()[3] == 6.0f);
  // The same dtype: the variable itself, no node.
  const Variable same = F::cast(x, DType::Float32);
  CHECK(same.data().raw_data() == x.data().raw_data());
  REQUIRE_THROWS_WITH(F::cast(Variable(Tensor::zeros({2}, DType::Int32)), DType::Float32),
                      Catch::Contains("cast: from int32 to float32 is not supported"));
}

// Finite differences through half precision: F computes on X rounded to DTYPE and the result is
// widened back to float64, so every value carries the half type's rounding (unit roundoff u:
// 2^-11 for float16, 2^-8 for bfloat16), about u |y| per output, and a difference quotient
// carries that over the step. Hence large steps. Linear, the convolution, the sum and the max
// pooling (inputs 0.8 apart, so no step changes a winner) are linear in each input, so their
// central differences are exact at any step: a step of 0.5 leaves an error of about
// u |y| sqrt(outputs touched) / 0.5, a few percent of the gradient in bfloat16. The elementwise
// functions touch one output per input: a step of 32 u (0.016 and 0.125) keeps the rounding at
// 1/32 of |y| and the truncation error of tanh's curvature below 1%; ReLU's inputs stay 0.5 away
// from the kink. Tolerances: 0.1 absolute and relative.
TEST_CASE("cast: finite differences through the half types", "[functions][cast]") {
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    INFO(dtype_name(dtype));
    const double u = dtype == DType::Float16 ? 0x1p-11 : 0x1p-8;
    const GradientCheckOptions linear{.eps = 0.5, .atol = 0.1, .rtol = 0.1};
    const GradientCheckOptions elementwise{.eps = 32 * u, .atol = 0.1, .rtol = 0.1};
    auto half = [dtype](const Variable& v) { return F::cast(v, dtype); };
    auto wide = [](const Variable& v) { return F::cast(v, DType::Float64); };
    check([&](const Vars& v) { return wide(F::linear(half(v[0]), half(v[1]), half(v[2]))); },
          {uniform({3, 4}, 1), uniform({5, 4}, 2), uniform({5}, 3)}, linear);
    check([&](const Vars& v) { return wide(F::sum(half(v[0]), {1})); }, {uniform({4, 3}, 7)}, linear);
    check([&](const Vars& v) { return wide(F::convolution_2d(half(v[0]), half(v[1]), half(v[2]), {1, 1}, {1, 1})); },
          {uniform({2, 2, 4, 3}, 8), uniform({3, 2, 3, 3}, 9), uniform({3}, 10)}, linear);
    check([&](const Vars& v) { return wide(F::max_pooling_2d(half(v[0]), {2, 2})); },
          {ops::mul_scalar(spaced({1, 2, 4, 4}, 11), 8.0)}, linear);
    check([&](const Vars& v) { return wide(F::relu(half(v[0]))); }, {ops::mul_scalar(away_from_zero({4, 6}, 4), 5.0)},
          elementwise);
    check([&](const Vars& v) { return wide(F::tanh(F::mul(half(v[0]), half(v[1])))); },
          {uniform({3, 5}, 5), uniform({3, 5}, 6)}, elementwise);
  }
}
