/// @file
/// The kernel table: one entry per kernel behind core/ops/ops.h and core/ops/update_ops.h, filled once per
/// device kind (core/cpu/ on the CPU, core/cuda/ on CUDA devices). The ops' sources in core/ops/
/// (one per family, core/ops/ops.h) and update_ops.cpp check arguments and look the table up by
/// the operands' device; nothing else dispatches.
///
/// The contract, for every device: arguments are already checked (same device, dtypes and shapes
/// as the op requires); outputs are preallocated contiguous tensors on that device unless an entry
/// says otherwise; inputs may be non-contiguous unless an entry says otherwise. CUDA kernels run
/// on the device's compute stream and return without waiting for it.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/ops/op_types.h"
#include "core/tensor/tensor.h"

namespace chainer {

class Generator;

/// Elementwise binary operations of the `binary` kernel.
enum class BinaryOp {
  Add, Sub, Mul, Div,
  Maximum, Minimum  ///< the larger (smaller) of the two; NaN if either is NaN, as numpy.maximum
};
/// Elementwise unary operations of the `unary` kernel.
enum class UnaryOp {
  Neg, Exp, Log, Sqrt, Square, Relu, Sigmoid, Tanh,
  Abs,  ///< |x|
  Sign  ///< -1, 0 or 1 (NaN for NaN), as numpy.sign
};
/// Elementwise comparisons of the `compare` kernel.
enum class CompareOp { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual };
/// Activations whose gradient the `activation_grad` kernel computes from their output.
enum class GradOp { Relu, Sigmoid, Tanh };
/// Elementwise activations with one parameter P (the argument of their Chainer function), whose
/// gradient the `parametric_activation_grad` kernel computes from their input.
enum class ParametricOp {
  LeakyRelu,  ///< `x >= 0 ? x : p x` (P: Chainer's slope); gradient `x >= 0 ? gy : p gy`
  Elu,        ///< `x >= 0 ? x : p expm1(x)` (P: alpha); gradient `x > 0 ? gy : p exp(x) gy`
  Softplus    ///< `(max(p x, 0) + log1p(exp(-|p x|))) / p` (P: beta); gradient `gy sigmoid(p x)`
};

/// The kernels of one device kind, one function pointer per kernel of core/ops/kernel_list.def
/// (which states each one's contract; see the file comment for the contract they share).
struct Kernels {
  /// @cond
#define CHAINER_KERNEL(RETURN, NAME, PARAMETERS) RETURN(*NAME) PARAMETERS;
#include "core/ops/kernel_list.def"
  /// @endcond
};

/// The kernels' names, in the list's order (the order of Kernels' members).
inline constexpr const char* kKernelNames[] = {
/// @cond
#define CHAINER_KERNEL(RETURN, NAME, PARAMETERS) #NAME,
#include "core/ops/kernel_list.def"
    /// @endcond
};
/// How many kernels the list has.
inline constexpr size_t kKernelCount = sizeof(kKernelNames) / sizeof(kKernelNames[0]);
static_assert(sizeof(Kernels) == kKernelCount * sizeof(void (*)()), "Kernels holds exactly the listed kernels");

/// Whether each kernel of the list is a library's (CHAINER_LIBRARY_KERNEL): one that a device
/// kind may leave out of its table.
inline constexpr bool kKernelFromLibrary[] = {
/// @cond
#define CHAINER_KERNEL(RETURN, NAME, PARAMETERS) false,
#define CHAINER_LIBRARY_KERNEL(RETURN, NAME, PARAMETERS) true,
#include "core/ops/kernel_list.def"
    /// @endcond
};

/// A fingerprint of the list (FNV-1a over the names in order): the CUDA plugin reports the one it
/// was compiled with, and a plugin built from another list is refused (core/device/cuda.cpp)
/// rather than handed a table of another layout.
inline constexpr uint64_t kKernelListHash = [] {
  uint64_t h = 14695981039346656037ull;
  for (const char* name : kKernelNames) {
    for (const char* c = name; *c; ++c) h = (h ^ uint64_t(uint8_t(*c))) * 1099511628211ull;
    h = (h ^ uint64_t(',')) * 1099511628211ull;
  }
  return h;
}();

/// The entry of TABLE for the kernel at INDEX of the list (null when a table leaves it out):
/// how tests check that every table is complete, naming what is missing.
inline const void* kernel_entry(const Kernels& table, size_t index) {
  size_t i = 0;
  const void* entry = nullptr;
  /// @cond
#define CHAINER_KERNEL(RETURN, NAME, PARAMETERS) \
  if (i++ == index) entry = reinterpret_cast<const void*>(table.NAME);
#include "core/ops/kernel_list.def"
  /// @endcond
  return entry;
}

/// The table for DEVICE; for a CUDA device it also makes DEVICE current on this thread. Throws
/// chainer::Error (naming the device) when CUDA is not available in this build or process.
const Kernels& kernels_for(Device device);

/// T widened to float32 when it is float16 or bfloat16, else T itself (undefined included): how a
/// kernel of either device runs a half call through its float32 code (core/cpu/kernels.h's
/// through_float32, the CUDA channel kernels of batch normalization).
inline Tensor widened(const Tensor& t) { return t.defined() && is_half(t.dtype()) ? t.astype(DType::Float32) : t; }

/// The CPU kernels (core/cpu/).
namespace cpu {
/// The CPU's kernel table (kernels_for(Device::cpu()) returns it).
const Kernels& kernel_table();
}

}  // namespace chainer
