// What the tests of the elementwise math, the reductions and sigmoid_cross_entropy share: near,
// values within Catch's default Approx margin, and grad_of, the gradient of a weighted sum of a
// function's output. Header-only.
#pragma once
#include <catch2/catch.hpp>

#include <functional>
#include <vector>

#include "nn/functions.h"
#include "tests/function_inputs.h"

namespace chainer::testing {

// reference_checks.h has a near of its own, tighter: a file includes one of the two, and each
// near lives in a namespace of its own (one program holds both).
namespace math_checks {
/// Elementwise within Catch's Approx margin (the matcher refers to WANT: use it in one statement).
inline auto near(const std::vector<double>& want) { return Catch::Matchers::Approx(want); }
}  // namespace math_checks
using math_checks::near;

/// The gradient of sum(F(x) * w) with respect to x, for a fixed output weighting W.
inline std::vector<double> grad_of(const std::function<Variable(const Variable&)>& f, const Tensor& x,
                                   const Tensor& w) {
  Variable v(x, true);
  functions::sum(f(v) * Variable(w)).backward();
  return values(v.grad());
}

}  // namespace chainer::testing
