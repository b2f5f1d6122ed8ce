// Float32 exp, sigmoid and tanh written so that the compiler vectorizes loops over them (no libm
// call, no branch): the recurrent cells spent 40 % of an LSTM step in scalar expm1f and tanhf.
// exp is Cephes' expf (range reduction by ln 2 in two parts, a degree-6 polynomial, the exponent
// put in by integer arithmetic; about 1 ulp), tanh Cephes' tanhf (an odd polynomial below 0.625,
// 1 - 2 / (exp(2|x|) + 1) above), both to a few ulps of float32: the kernels stay within the
// tests' float32-against-float64 tolerances. Float64 keeps <cmath>'s functions (the reference).
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace chainer::cpu::vector_math {

inline float exp(float x) {
  x = std::min(std::max(x, -87.33654f), 88.72283f);
  // round(x / ln 2) by the float rounding of 1.5 * 2^23 (|x / ln 2| < 2^22): std::floor is a
  // libm call GCC does not vectorize without -fno-trapping-math.
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;     // x - n ln 2, ln 2 in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  // 2^n as float bits; n in [-126, 128] after the clamp, and 2^128 is reached only by e's own range.
  const int32_t bits = (int32_t(n) + 127) << 23;
  return n > 127.0f ? e * 2.0f * std::bit_cast<float>(int32_t(254) << 23) : e * std::bit_cast<float>(bits);
}

inline float sigmoid(float x) { return 1.0f / (1.0f + vector_math::exp(-x)); }

inline float tanh(float x) {
  const float a = std::abs(x);
  const float z = x * x;  // small |x|: x + x^3 P(x^2)
  const float small =
      ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z -
       3.33332819422e-1f) * z * x + x;
  const float large = 1.0f - 2.0f / (vector_math::exp(std::min(2.0f * a, 88.0f)) + 1.0f);
  return a < 0.625f ? small : std::copysign(large, x);
}

// Double: <cmath>'s, as the reference kernels compute.
inline double exp(double x) { return std::exp(x); }
inline double sigmoid(double x) { return 0.5 * std::tanh(0.5 * x) + 0.5; }
inline double tanh(double x) { return std::tanh(x); }

}  // namespace chainer::cpu::vector_math
