/// @file
/// Finite-difference gradient checks, as chainer.gradient_check.check_backward: the function
/// runs in float64, and the gradients from backward are compared with central differences of
/// sum(f(x) * gy) for a random gy. Integer inputs (labels) pass through unchecked. With a CUDA
/// device in the options, F runs there: the GPU's backward is checked against its own forward.
#pragma once
#include <functional>
#include <vector>

#include "autograd/variable.h"

namespace chainer {

/// Options of check_backward: step, tolerances, seed, inputs to skip and device.
struct GradientCheckOptions {
  double eps = 1e-3;                ///< step of the central differences
  double atol = 1e-5;               ///< absolute tolerance
  double rtol = 1e-4;               ///< relative tolerance (to the numeric gradient)
  uint64_t seed = 0;                ///< for the random output gradient
  std::vector<bool> no_grads = {};  ///< per input: true to skip its check
  Device device = {};               ///< where F runs (inputs are copied there)
};

/// Checks the gradients of F at INPUTS against finite differences. Throws chainer::Error
/// describing the first mismatch (input, element, analytic, numeric).
void check_backward(const std::function<std::vector<Variable>(const std::vector<Variable>&)>& f,
                    const std::vector<Tensor>& inputs, const GradientCheckOptions& options = {});
/// Shorthand for single-output functions.
void check_backward(const std::function<Variable(const std::vector<Variable>&)>& f, const std::vector<Tensor>& inputs,
                    const GradientCheckOptions& options = {});

}  // namespace chainer
