// The registry of function cases, in the manner of PyTorch's OpInfo and ggml's test-backend-ops:
// one list of cases for the public functions of chainer::functions (inputs, which of them are
// data, whether the function is differentiable) and one for the kernels those functions do not
// reach (optimizer steps, copies, reported values). Every generic check runs over these lists:
// test_function_cases.cpp on the CPU (float64 finite differences; float32 against float64 under
// the kernel family of the run; no graph under NoBackpropMode; every public function and every
// listed kernel reached by some case) and tests/core/cuda/test_cuda_ops.cpp on a GPU (finite
// differences there, and the GPU against the CPU). A new function or kernel fails the suite until
// it has a case here.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "core/ops/op_types.h"

namespace chainer::testing {

using Vars = std::vector<Variable>;

/// One case of one or more public functions.
struct FunctionCase {
  std::vector<std::string> functions;  ///< the chainer::functions it exercises, the one under test first
  std::string name;                    ///< what the case varies
  std::function<Variable(const Vars&)> f;
  std::vector<Tensor> inputs;      ///< float64 values and int32 labels, on the CPU
  std::vector<bool> no_grads = {}; ///< per input: data, no gradient
  bool differentiable = true;

  /// "convolution_2d: stride 2", for messages.
  std::string label() const { return functions.front() + ": " + name; }
};

/// One case of kernels that no function reaches: RUN computes its outputs on its inputs' device
/// and floating dtype (inputs may be changed in place).
struct KernelCase {
  std::string name;
  std::function<std::vector<Tensor>(std::vector<Tensor>& inputs)> run;
  std::vector<Tensor> inputs;  ///< float64 values and integer indices, on the CPU
};

/// Every function case.
const std::vector<FunctionCase>& function_cases();
/// Every kernel case.
const std::vector<KernelCase>& kernel_cases();

/// The ranges the states of RULE start in, in the update tests: what a run could have left there
/// (mean squares positive; RMSpropGraves' n above its g^2; SMORMS3's mem at least 1).
std::vector<std::pair<double, double>> update_state_ranges(UpdateRule rule);
/// The scalars of parameter I's step STEP (from 0) in the update tests: every one differs per
/// parameter and per step, and RMSprop's eps_inside_sqrt alternates.
UpdateScalars update_test_scalars(size_t i, int step);

/// "(7, 5) (3, 5)": the inputs' shapes, for messages.
std::string shapes_of(const std::vector<Tensor>& inputs);

/// The case's inputs as Variables of DTYPE (floating ones; labels keep theirs) on DEVICE, each
/// floating one requiring a gradient unless marked as data.
Vars case_variables(const FunctionCase& c, DType dtype, Device device);

/// Forward of C in DTYPE on DEVICE, then backward from a fixed random output gradient: the
/// output and the gradient of every input that has one, each named.
std::vector<std::pair<std::string, Tensor>> forward_backward(const FunctionCase& c, DType dtype, Device device);

/// The outputs of C run on copies of its inputs in DTYPE (floating ones) on DEVICE.
std::vector<Tensor> run_kernel_case(const KernelCase& c, DType dtype, Device device);

}  // namespace chainer::testing
