// What the tests of batch normalization share (the functions and links::BatchNormalization):
// normal inputs, the batch statistics per channel and the normalization element by element in
// float64, and expect_close. Header-only.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/tensor/tensor.h"
#include "core/util/random.h"
#include "tests/function_inputs.h"

namespace chainer::testing {

inline constexpr double kEps = 2e-5;  // Chainer's default

/// Normal values of DTYPE (float64 by default) with MEAN and STDDEV, from a generator seeded with SEED.
inline Tensor normal(const Shape& shape, uint64_t seed, double mean = 0.0, double stddev = 1.0,
                     DType dtype = DType::Float64) {
  Generator gen(seed);
  return random::normal(shape, mean, stddev, dtype, &gen);
}

/// The values of X (N, C, ...) grouped by channel, in the reference's plain vectors.
inline std::vector<std::vector<double>> by_channel(const Tensor& x) {
  const std::vector<double> v = values(x);
  const int64_t n = x.size(0), c = x.size(1), inner = x.numel() / (n * c);
  std::vector<std::vector<double>> out(static_cast<size_t>(c));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t s = 0; s < inner; ++s) out[size_t(ch)].push_back(v[size_t((i * c + ch) * inner + s)]);
  return out;
}

inline double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double a : v) s += a;
  return s / double(v.size());
}

inline double biased_var_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double a : v) s += (a - m) * (a - m);
  return s / double(v.size());
}

/// The mean of each channel of X (N, C, ...).
inline std::vector<double> batch_means(const Tensor& x) {
  std::vector<double> out;
  for (const auto& v : by_channel(x)) out.push_back(mean_of(v));
  return out;
}

/// The biased variance of each channel of X (N, C, ...).
inline std::vector<double> batch_vars(const Tensor& x) {
  std::vector<double> out;
  for (const auto& v : by_channel(x)) out.push_back(biased_var_of(v));
  return out;
}

/// y = gamma (x - mean) / sqrt(var + eps) + beta, element by element in float64 (row-major).
inline std::vector<double> reference(const Tensor& x, const std::vector<double>& gamma, const std::vector<double>& beta,
                                     const std::vector<double>& mean, const std::vector<double>& var,
                                     double eps = kEps) {
  const std::vector<double> v = values(x);
  const int64_t c = x.size(1), inner = x.numel() / (x.size(0) * c);
  std::vector<double> y(v.size());
  for (size_t k = 0; k < v.size(); ++k) {
    const size_t ch = size_t((int64_t(k) / inner) % c);
    y[k] = gamma[ch] * (v[k] - mean[ch]) / std::sqrt(var[ch] + eps) + beta[ch];
  }
  return y;
}

/// Every |got - want| within tol (1 + |want|), with the worst named.
inline void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  if (got.empty()) return;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - want[i]) / (1 + std::abs(want[i]));
    if (!(err <= worst)) worst = err, at = i;
  }
  INFO("worst relative difference " << worst << " at flat index " << at << ": got " << got[at] << ", want "
                                     << want[at]);
  CHECK(worst <= tol);
}

}  // namespace chainer::testing
