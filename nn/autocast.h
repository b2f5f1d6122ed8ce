/// @file
/// Mixed precision's policy, as PyTorch's autocast and Chainer's mixed16: which dtype each
/// function computes in. While config::dtype is float16, bfloat16, mixed16 or mixed_bf16, or an
/// AutocastScope is open, the functions of the half list (linear, linear_relu, convolution_2d,
/// deconvolution_2d, matmul) cast their float32 inputs, parameters included, to that half type
/// and return half; float64 is left alone, as autocast does. The functions of the full-precision
/// list (softmax, log_softmax, the losses, accuracy, batch and local response normalization, the
/// recurrent cells) have no half kernels and always take half inputs as float32: the losses and
/// softmax return float32, the normalizations return their input's dtype. The elementwise
/// functions, pooling, dropout, the sums and the array functions compute in their input's dtype,
/// half included. So `F::relu(l1(x))` runs in half under mixed16 with no change to the model.
#pragma once
#include <optional>

#include "autograd/variable.h"
#include "core/util/config.h"

namespace chainer {

/// torch.autocast for code that does not set config::dtype: in its scope the half list computes
/// in DTYPE (float16 or bfloat16); ENABLED false turns casting off inside the scope (a
/// full-precision region in a mixed model). Scopes nest; each restores what it replaced.
class AutocastScope {
 public:
  /// Casts the half list to DTYPE (float16 or bfloat16; a chainer::Error otherwise) until the
  /// guard is destroyed; with ENABLED false, casts nothing until then.
  explicit AutocastScope(DType dtype, bool enabled = true);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  std::optional<DType> previous_;
  bool previous_set_;
};

/// The half type the half list casts to now on this thread: the innermost AutocastScope's, else
/// config::dtype's (float16 for float16 and mixed16, bfloat16 for bfloat16 and mixed_bf16);
/// none under float32 and float64.
std::optional<DType> autocast_dtype();

/// The dtype links create their parameters in under config::dtype: float32 for float32 and the
/// mixed ones (the float32 master weights of mixed16), float64, float16 or bfloat16 otherwise.
DType param_dtype();
/// DTYPE as a tensor dtype: float16 for mixed16, bfloat16 for mixed_bf16 (chainer.get_dtype).
DType get_dtype(config::Dtype dtype = config::dtype());

namespace autocast {
/// X cast for a function of the half list: to autocast_dtype() when one is set and X is float32
/// or the other half type; X itself otherwise (undefined included).
Variable for_half(const Variable& x);
/// X cast for a function of the full-precision list: float32 when X is half; X itself otherwise.
Variable for_float32(const Variable& x);
}  // namespace autocast

}  // namespace chainer
