// The losses and metrics behind nn/functions: softmax cross entropy and sigmoid cross entropy with
// their gradients, and accuracy. The kernels are in core/cpu/loss.cpp and core/cuda/loss.cu.
#include "core/ops/ops.h"

#include "core/ops/checks.h"
#include "core/ops/kernels.h"

namespace chainer::ops {

using detail::require_same_device;
using detail::require_same_dtype;
using detail::require_floating;

namespace {
Device check_cross_entropy_args(const char* op, const Tensor& x, const Tensor& t) {
  const Device device = require_same_device(op, {&x, &t});
  require_floating(op, x);
  if (t.dtype() != DType::Int32)
    throw Error(str(op, ": labels have dtype ", dtype_name(t.dtype()), " (expected int32)"));
  if (x.ndim() != 2) throw Error(str(op, ": x must be 2-D (batch, classes), got shape ", shape_str(x.shape())));
  if (t.shape() != Shape{x.size(0)})
    throw Error(str(op, ": labels have shape ", shape_str(t.shape()), " but x has shape ", shape_str(x.shape()),
                    " (expected ", shape_str({x.size(0)}), ")"));
  return device;
}
}  // namespace

CrossEntropyResult softmax_cross_entropy(const Tensor& x, const Tensor& t, int64_t ignore_label,
                                         LossReduction reduction) {
  const Device device = check_cross_entropy_args("softmax_cross_entropy", x, t);
  if (x.size(1) == 0) throw Error("softmax_cross_entropy: x has no classes (shape " + shape_str(x.shape()) + ")");
  const int64_t n = x.size(0);
  CrossEntropyResult r{Tensor::empty({n}, x.dtype(), device), Tensor::empty({n}, x.dtype(), device),
                       Tensor::empty({}, DType::Float64, device)};
  Tensor reduced = reduction == LossReduction::None ? Tensor() : Tensor::empty({}, x.dtype(), device);
  const int64_t bad =
      kernels_for(device).softmax_cross_entropy(x, t, ignore_label, reduction, r.loss, r.lse, reduced, r.scale);
  if (bad >= 0)
    throw Error(str("softmax_cross_entropy: label ", t[bad].item<int32_t>(), " at index ", bad,
                    " is out of range for ", x.size(1), " classes (expected 0 <= label < ", x.size(1),
                    " or ignore_label ", ignore_label, ")"));
  if (reduced.defined()) r.loss = reduced;
  return r;
}

Tensor softmax_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss,
                                  const Tensor& scale, int64_t ignore_label) {
  const char* op = "softmax_cross_entropy_grad";
  const Device device = check_cross_entropy_args(op, x, t);
  require_same_device(op, {&x, &lse, &gloss, &scale});
  require_same_dtype(op, x, lse);
  require_same_dtype(op, x, gloss);
  if (lse.shape() != Shape{x.size(0)})
    throw Error(str(op, ": lse has shape ", shape_str(lse.shape()), " (expected ", shape_str({x.size(0)}), ")"));
  if (gloss.numel() != 1 && gloss.shape() != Shape{x.size(0)})
    throw Error(str(op, ": gradient has shape ", shape_str(gloss.shape()), " (expected one element or (", x.size(0),
                    "))"));
  if (scale.dtype() != DType::Float64 || scale.numel() != 1)
    throw Error(str(op, ": scale must be one float64 element, got ", dtype_name(scale.dtype()), " ",
                    shape_str(scale.shape())));
  Tensor gx = Tensor::empty(x.shape(), x.dtype(), device);
  kernels_for(device).softmax_cross_entropy_grad(x, t, lse, gloss, scale, ignore_label, gx);
  return gx;
}

namespace {
Device check_sigmoid_cross_entropy_args(const char* op, const Tensor& x, const Tensor& t) {
  const Device device = require_same_device(op, {&x, &t});
  require_floating(op, x);
  if (t.dtype() != DType::Int32)
    throw Error(str(op, ": labels have dtype ", dtype_name(t.dtype()), " (expected int32)"));
  if (t.shape() != x.shape())
    throw Error(str(op, ": labels have shape ", shape_str(t.shape()), " but x has shape ", shape_str(x.shape()),
                    " (they must be equal)"));
  return device;
}
}  // namespace

Tensor sigmoid_cross_entropy(const Tensor& x, const Tensor& t) {
  const Device device = check_sigmoid_cross_entropy_args("sigmoid_cross_entropy", x, t);
  Tensor loss = Tensor::empty(x.shape(), x.dtype(), device);
  if (loss.numel() > 0) kernels_for(device).sigmoid_cross_entropy(x, t, loss);
  return loss;
}

Tensor sigmoid_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& gy) {
  const char* op = "sigmoid_cross_entropy_grad";
  const Device device = check_sigmoid_cross_entropy_args(op, x, t);
  require_same_device(op, {&x, &gy});
  require_same_dtype(op, x, gy);
  if (gy.numel() != 1 && gy.shape() != x.shape())
    throw Error(str(op, ": gradient has shape ", shape_str(gy.shape()), " (expected one element or ",
                    shape_str(x.shape()), ")"));
  Tensor gx = Tensor::empty(x.shape(), x.dtype(), device);
  if (gx.numel() > 0) kernels_for(device).sigmoid_cross_entropy_grad(x, t, gy, gx);
  return gx;
}

Tensor accuracy(const Tensor& y, const Tensor& t, int64_t ignore_label) {
  const Device device = require_same_device("accuracy", {&y, &t});
  require_floating("accuracy", y);
  if (t.dtype() != DType::Int32)
    throw Error(str("accuracy: labels have dtype ", dtype_name(t.dtype()), " (expected int32)"));
  if (y.ndim() < 2) throw Error(str("accuracy: y must have a class axis 1, got shape ", shape_str(y.shape())));
  Shape expected = y.shape();
  expected.erase(expected.begin() + 1);
  if (t.shape() != expected)
    throw Error(str("accuracy: labels have shape ", shape_str(t.shape()), " but y has shape ", shape_str(y.shape()),
                    " (expected ", shape_str(expected), ")"));
  if (y.size(1) == 0) throw Error(str("accuracy: y has no classes (shape ", shape_str(y.shape()), ")"));
  Tensor out = Tensor::empty({}, y.dtype(), device);
  kernels_for(device).accuracy(y, t, ignore_label, out);
  return out;
}

}  // namespace chainer::ops
