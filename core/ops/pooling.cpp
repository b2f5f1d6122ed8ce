// 2-D pooling over NCHW arrays: the window checks and output shape, max pooling and its gradient,
// and the window sums of average pooling and their transpose. The kernels are in
// core/cpu/pooling.cpp and core/cuda/pooling.cu.
#include "core/ops/ops.h"

#include <limits>

#include "core/ops/checks.h"
#include "core/ops/kernels.h"

namespace chainer::ops {

using detail::require_same_device;
using detail::require_floating_or_half;

void check_window_2d(const char* op, const Window2D& w) {
  if (w.kh < 1 || w.kw < 1) throw Error(str(op, ": ksize (", w.kh, ", ", w.kw, ") must be at least 1"));
  if (w.sy < 1 || w.sx < 1) throw Error(str(op, ": stride (", w.sy, ", ", w.sx, ") must be at least 1"));
  if (w.ph < 0 || w.pw < 0) throw Error(str(op, ": pad (", w.ph, ", ", w.pw, ") must not be negative"));
}

Shape pooling_2d_output_shape(const char* op, const Shape& x_shape, const Window2D& w, bool cover_all) {
  if (x_shape.size() != 4)
    throw Error(str(op, ": x has shape ", shape_str(x_shape), "; expected 4 dimensions (N, C, H, W)"));
  if (shape_numel(x_shape) == 0) throw Error(str(op, ": x of shape ", shape_str(x_shape), " is empty"));
  check_window_2d(op, w);
  const int64_t oh = conv_outsize(x_shape[2], w.kh, w.sy, w.ph, cover_all);
  const int64_t ow = conv_outsize(x_shape[3], w.kw, w.sx, w.pw, cover_all);
  if (oh < 1 || ow < 1)
    throw Error(str(op, ": the output would be ", oh, "x", ow, " for x of shape ", shape_str(x_shape), " with ksize (",
                    w.kh, ", ", w.kw, "), stride (", w.sy, ", ", w.sx, "), pad (", w.ph, ", ", w.pw,
                    ") and cover_all ", cover_all ? "true" : "false", "; the height and width must be positive"));
  return {x_shape[0], x_shape[1], oh, ow};
}

MaxPooling2DResult max_pooling_2d(const Tensor& x, const Window2D& window, bool cover_all) {
  const char* op = "max_pooling_2d";
  const Device device = require_same_device(op, {&x});
  require_floating_or_half(op, x);
  const Shape out_shape = pooling_2d_output_shape(op, x.shape(), window, cover_all);
  if (x.size(2) * x.size(3) > std::numeric_limits<int32_t>::max())
    throw Error(str(op, ": planes of ", x.size(2), "x", x.size(3), " are too large (the indexes are int32)"));
  MaxPooling2DResult r{Tensor::empty(out_shape, x.dtype(), device), Tensor::empty(out_shape, DType::Int32, device)};
  kernels_for(device).max_pooling_2d(x, window, r.y, r.indexes);
  return r;
}

Tensor max_pooling_2d_grad(const Tensor& gy, const Tensor& indexes, const Window2D& window, const Shape& x_shape) {
  const char* op = "max_pooling_2d_grad";
  const Device device = require_same_device(op, {&gy, &indexes});
  require_floating_or_half(op, gy);
  if (indexes.dtype() != DType::Int32 || indexes.shape() != gy.shape() || !indexes.is_contiguous())
    throw Error(str(op, ": indexes must be contiguous int32 of the gradient's shape ", shape_str(gy.shape()), ", got ",
                    dtype_name(indexes.dtype()), " ", shape_str(indexes.shape())));
  if (x_shape.size() != 4 || gy.ndim() != 4 || gy.size(0) != x_shape[0] || gy.size(1) != x_shape[1])
    throw Error(str(op, ": gradient of shape ", shape_str(gy.shape()), " does not pool an input of shape ",
                    shape_str(x_shape)));
  Tensor gx = Tensor::empty(x_shape, gy.dtype(), device);
  if (gx.numel() > 0) kernels_for(device).max_pooling_2d_grad(gy, indexes, window, gx);
  return gx;
}

Tensor window_sum_2d(const Tensor& x, const Window2D& window, bool cover_all, double scale) {
  const char* op = "window_sum_2d";
  const Device device = require_same_device(op, {&x});
  require_floating_or_half(op, x);
  Tensor out = Tensor::empty(pooling_2d_output_shape(op, x.shape(), window, cover_all), x.dtype(), device);
  kernels_for(device).window_sum_2d(x, window, scale, out);
  return out;
}

Tensor window_spread_2d(const Tensor& y, const Window2D& window, int64_t h, int64_t w, bool cover_all, double scale) {
  const char* op = "window_spread_2d";
  const Device device = require_same_device(op, {&y});
  require_floating_or_half(op, y);
  if (y.ndim() != 4) throw Error(str(op, ": y has shape ", shape_str(y.shape()), "; expected (N, C, out_h, out_w)"));
  const Shape out_shape{y.size(0), y.size(1), h, w};
  const Shape pooled = pooling_2d_output_shape(op, out_shape, window, cover_all);
  if (pooled != y.shape())
    throw Error(str(op, ": y has shape ", shape_str(y.shape()), " but pooling ", shape_str(out_shape), " gives ",
                    shape_str(pooled)));
  Tensor out = Tensor::empty(out_shape, y.dtype(), device);
  kernels_for(device).window_spread_2d(y, window, scale, out);
  return out;
}

}  // namespace chainer::ops
