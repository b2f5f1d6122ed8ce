// The CPU's vectorizable float32 exp, sigmoid and tanh (core/cpu/vector_math.h) against <cmath>
// in double: within a few float32 ulps over the whole useful range, exact at the limits, and NaN
// for NaN.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/cpu/vector_math.h"

namespace vm = chainer::cpu::vector_math;

namespace {
// The largest error of F against REF over [LO, HI] in steps of STEP, in units of float32's epsilon
// relative to max(|ref|, FLOOR).
template <class F, class R>
double worst(F f, R ref, double lo, double hi, double step, double floor) {
  double w = 0;
  for (double x = lo; x <= hi; x += step) {
    const float xf = float(x);
    const double want = ref(double(xf)), got = double(f(xf));
    const double error = std::abs(got - want) / std::max(std::abs(want), floor);
    w = std::max(w, error / double(std::numeric_limits<float>::epsilon()));
  }
  return w;
}
}  // namespace

TEST_CASE("vector_math: float32 exp, sigmoid and tanh within a few ulps of double's") {
  const auto exp32 = [](float x) { return vm::exp(x); };
  const auto sigmoid32 = [](float x) { return vm::sigmoid(x); };
  const auto tanh32 = [](float x) { return vm::tanh(x); };
  CHECK(worst(exp32, [](double x) { return std::exp(x); }, -87, 88, 1e-3, 0) <= 2);
  CHECK(worst(sigmoid32, [](double x) { return 1 / (1 + std::exp(-x)); }, -80, 80, 1e-3, 0) <= 4);
  CHECK(worst(tanh32, [](double x) { return std::tanh(x); }, -20, 20, 1e-4, 0) <= 4);
  CHECK(worst(tanh32, [](double x) { return std::tanh(x); }, -1e-3, 1e-3, 1e-7, 0) <= 2);  // near 0: relative
}

TEST_CASE("vector_math: limits, overflow and NaN") {
  CHECK(vm::exp(-200.0f) >= 0.0f);
  CHECK(vm::exp(-200.0f) < 1e-37f);
  CHECK(vm::exp(88.7f) == Approx(std::exp(double(88.7f))).epsilon(1e-6));  // the last power of two
  CHECK(std::isfinite(vm::exp(1000.0f)));  // clamped below float's overflow
  CHECK(vm::tanh(50.0f) == 1.0f);
  CHECK(vm::tanh(-50.0f) == -1.0f);
  CHECK(vm::tanh(0.0f) == 0.0f);
  CHECK(vm::sigmoid(-100.0f) == Approx(0.0).margin(1e-37));
  CHECK(vm::sigmoid(100.0f) == 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(vm::exp(nan)));
  CHECK(std::isnan(vm::tanh(nan)));
  CHECK(std::isnan(vm::sigmoid(nan)));
}
