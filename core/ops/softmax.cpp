// Softmax and log-softmax along an axis, and their gradients. The kernels are in
// core/cpu/softmax.cpp and core/cuda/softmax.cu.
#include "core/ops/ops.h"

#include "core/ops/checks.h"
#include "core/ops/kernels.h"

namespace chainer::ops {

using detail::require_same_device;
using detail::require_same_dtype;
using detail::require_floating;

namespace {
Tensor softmax_along(const char* op, const Tensor& x, int64_t axis, bool log) {
  const Device device = require_same_device(op, {&x});
  require_floating(op, x);
  const int64_t ax = normalize_axis(axis, x.ndim(), op);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), device);
  kernels_for(device).softmax(x, ax, log, out);
  return out;
}
}  // namespace

Tensor softmax(const Tensor& x, int64_t axis) { return softmax_along("softmax", x, axis, false); }
Tensor log_softmax(const Tensor& x, int64_t axis) { return softmax_along("log_softmax", x, axis, true); }

namespace {
Tensor softmax_grad_impl(const char* op, const Tensor& y, const Tensor& gy, int64_t axis, bool log) {
  const Device device = require_same_device(op, {&y, &gy});
  require_floating(op, y);
  require_same_dtype(op, y, gy);
  if (y.shape() != gy.shape())
    throw Error(str(op, ": gradient shape ", shape_str(gy.shape()), " differs from output shape ", shape_str(y.shape())));
  const int64_t ax = normalize_axis(axis, y.ndim(), op);
  Tensor gx = Tensor::empty(y.shape(), y.dtype(), device);
  kernels_for(device).softmax_grad(y, gy, ax, log, gx);
  return gx;
}
}  // namespace

Tensor softmax_grad(const Tensor& y, const Tensor& gy, int64_t axis) {
  return softmax_grad_impl("softmax_grad", y, gy, axis, false);
}
Tensor log_softmax_grad(const Tensor& y, const Tensor& gy, int64_t axis) {
  return softmax_grad_impl("log_softmax_grad", y, gy, axis, true);
}

}  // namespace chainer::ops
