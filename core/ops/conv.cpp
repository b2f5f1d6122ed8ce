// 2-D convolutions: the output sizes (conv_outsize, deconv_outsize), the checks of the arrays and
// parameters every convolution entry point makes, and the three entry points. The kernels are in
// core/cpu/conv.cpp (over core/ops/conv_lowering.h) and core/cuda/conv.cu (cuDNN).
#include "core/ops/ops.h"

#include <string>

#include "core/ops/checks.h"
#include "core/ops/kernels.h"

namespace chainer::ops {

using detail::require_same_device;
using detail::require_same_dtype;
using detail::require_floating_or_half;

// Python's floor division: the numerator of an output size may be negative.
namespace {
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
}  // namespace

int64_t conv_outsize(int64_t size, int64_t k, int64_t s, int64_t p, bool cover_all, int64_t d) {
  const int64_t dk = k + (k - 1) * (d - 1);
  return floor_div(size + 2 * p - dk + (cover_all ? s - 1 : 0), s) + 1;
}

int64_t deconv_outsize(int64_t size, int64_t k, int64_t s, int64_t p, bool cover_all, int64_t d) {
  const int64_t dk = (k - 1) * d + 1;
  return s * (size - 1) + dk - 2 * p - (cover_all ? s - 1 : 0);
}

namespace {
std::string pair_str(int64_t a, int64_t b) { return str("(", a, ", ", b, ")"); }

void check_conv_params(const char* op, const Conv2dParams& p) {
  if (p.sy < 1 || p.sx < 1) throw Error(str(op, ": stride ", pair_str(p.sy, p.sx), " must be positive"));
  if (p.ph < 0 || p.pw < 0) throw Error(str(op, ": pad ", pair_str(p.ph, p.pw), " must not be negative"));
  if (p.dy < 1 || p.dx < 1) throw Error(str(op, ": dilate ", pair_str(p.dy, p.dx), " must be positive"));
  if (p.groups < 1) throw Error(str(op, ": groups ", p.groups, " must be positive"));
}

// The checks every convolution entry point makes of its two arrays A and B (floating, one
// dtype, one device) and of PARAMS; returns the device.
Device check_conv_arrays(const char* op, const Tensor& a, const Tensor& b, const Conv2dParams& params) {
  const Device device = require_same_device(op, {&a, &b});
  require_floating_or_half(op, a);
  require_same_dtype(op, a, b);
  check_conv_params(op, params);
  return device;
}

void require_4d(const char* op, const char* name, const Shape& shape, const char* axes) {
  if (shape.size() != 4) throw Error(str(op, ": ", name, " must be 4-D ", axes, ", got shape ", shape_str(shape)));
}

// The filters W (C_out, C / groups, kh, kw) against C image channels: GROUPS divides both
// channel counts, and W's second axis is C / groups. X_NAME names the image in messages.
void check_filters(const char* op, const Tensor& W, const char* x_name, int64_t c, const Conv2dParams& p) {
  require_4d(op, "W", W.shape(), "(out_channels, in_channels / groups, kh, kw)");
  if (c % p.groups != 0)
    throw Error(str(op, ": groups ", p.groups, " does not divide the ", c, " channels of ", x_name));
  if (W.size(0) % p.groups != 0)
    throw Error(str(op, ": groups ", p.groups, " does not divide the ", W.size(0), " output channels of W (shape ",
                    shape_str(W.shape()), ")"));
  if (W.size(1) * p.groups != c)
    throw Error(str(op, ": ", x_name, " has ", c, " channels but W expects ", W.size(1) * p.groups, " (W has shape ",
                    shape_str(W.shape()), ", groups ", p.groups, ")"));
  if (W.size(2) < 1 || W.size(3) < 1) throw Error(str(op, ": W has an empty kernel (shape ", shape_str(W.shape()), ")"));
}

// Output extents (OH, OW) of WHAT against an image of HEIGHT x WIDTH: ones a convolution with
// these parameters makes, with cover_all or without.
void check_output_extents(const char* op, const char* what, int64_t oh, int64_t ow, int64_t height, int64_t width,
                          int64_t kh, int64_t kw, const Conv2dParams& p) {
  const int64_t lo_h = conv_outsize(height, kh, p.sy, p.ph, false, p.dy);
  const int64_t hi_h = conv_outsize(height, kh, p.sy, p.ph, true, p.dy);
  const int64_t lo_w = conv_outsize(width, kw, p.sx, p.pw, false, p.dx);
  const int64_t hi_w = conv_outsize(width, kw, p.sx, p.pw, true, p.dx);
  if (oh < 1 || ow < 1 || oh < lo_h || oh > hi_h || ow < lo_w || ow > hi_w) {
    const std::string made = lo_h == hi_h && lo_w == hi_w ? pair_str(lo_h, lo_w)
                                                          : str(pair_str(lo_h, lo_w), " to ", pair_str(hi_h, hi_w));
    throw Error(str(op, ": ", what, " ", pair_str(oh, ow), " but a convolution of ", pair_str(height, width),
                    " with kernel ", pair_str(kh, kw), ", stride ", pair_str(p.sy, p.sx), ", pad ", pair_str(p.ph, p.pw),
                    " and dilate ", pair_str(p.dy, p.dx), " makes ", made));
  }
}

Conv2dGeometry conv_geometry(const Conv2dParams& p, int64_t kh, int64_t kw, int64_t out_h, int64_t out_w) {
  return {.kh = kh, .kw = kw, .sy = p.sy, .sx = p.sx, .ph = p.ph, .pw = p.pw, .dy = p.dy, .dx = p.dx,
          .out_h = out_h, .out_w = out_w, .groups = p.groups};
}
}  // namespace

namespace {
// Checks X, W and PARAMS (out_h and out_w are -1 to be computed from params.cover_all, else the
// extents asked for) and returns y.
Tensor convolve(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dParams& params, int64_t out_h,
                int64_t out_w) {
  const char* op = "convolution_2d";
  const Device device = check_conv_arrays(op, x, W, params);
  require_4d(op, "x", x.shape(), "(batch, channels, height, width)");
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  check_filters(op, W, "x", c, params);
  const int64_t c_out = W.size(0), kh = W.size(2), kw = W.size(3);
  if (out_h < 0) {
    out_h = conv_outsize(h, kh, params.sy, params.ph, params.cover_all, params.dy);
    out_w = conv_outsize(w, kw, params.sx, params.pw, params.cover_all, params.dx);
    if (out_h < 1 || out_w < 1)
      throw Error(str(op, ": the kernel ", pair_str(kh, kw), " with dilate ", pair_str(params.dy, params.dx),
                      " is larger than the padded input ", pair_str(h + 2 * params.ph, w + 2 * params.pw),
                      " (x has shape ", shape_str(x.shape()), ", pad ", pair_str(params.ph, params.pw),
                      "): the output would be ", pair_str(out_h, out_w)));
  } else {
    check_output_extents(op, "the output extents", out_h, out_w, h, w, kh, kw, params);
  }
  if (b.defined()) {
    require_same_device(op, {&x, &b});
    require_same_dtype(op, x, b);
    if (b.shape() != Shape{c_out})
      throw Error(str(op, ": b has shape ", shape_str(b.shape()), " but W has ", c_out, " output channels (expected ",
                      shape_str({c_out}), ")"));
  }
  Tensor y = Tensor::empty({n, c_out, out_h, out_w}, x.dtype(), device);
  if (y.numel() == 0) return y;
  kernels_for(device).convolution_2d(x.contiguous(), W.contiguous(), b.defined() ? b.contiguous() : b,
                                     conv_geometry(params, kh, kw, out_h, out_w), y);
  return y;
}
}  // namespace

Tensor convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dParams& params) {
  return convolve(x, W, b, params, -1, -1);
}

Tensor convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dParams& params, int64_t out_h,
                      int64_t out_w) {
  if (out_h < 1 || out_w < 1)
    throw Error(str("convolution_2d: the output extents ", pair_str(out_h, out_w), " must be positive"));
  return convolve(x, W, b, params, out_h, out_w);
}

Tensor convolution_2d_grad_data(const Tensor& gy, const Tensor& W, int64_t height, int64_t width,
                                const Conv2dParams& params) {
  const char* op = "convolution_2d_grad_data";
  const Device device = check_conv_arrays(op, gy, W, params);
  require_4d(op, "gy", gy.shape(), "(batch, channels, height, width)");
  require_4d(op, "W", W.shape(), "(out_channels, in_channels / groups, kh, kw)");
  if (height < 1 || width < 1) throw Error(str(op, ": the image size ", pair_str(height, width), " must be positive"));
  const int64_t c = W.size(1) * params.groups;
  check_filters(op, W, "the image", c, params);
  const int64_t n = gy.size(0), c_out = W.size(0), kh = W.size(2), kw = W.size(3);
  if (gy.size(1) != c_out)
    throw Error(str(op, ": gy has ", gy.size(1), " channels but W has ", c_out, " output channels (W has shape ",
                    shape_str(W.shape()), ")"));
  check_output_extents(op, "gy has extents", gy.size(2), gy.size(3), height, width, kh, kw, params);
  Tensor gx = Tensor::empty({n, c, height, width}, gy.dtype(), device);
  if (gx.numel() == 0) return gx;
  kernels_for(device).convolution_2d_grad_data(gy.contiguous(), W.contiguous(),
                                               conv_geometry(params, kh, kw, gy.size(2), gy.size(3)), gx);
  return gx;
}

Tensor convolution_2d_grad_filter(const Tensor& x, const Tensor& gy, int64_t kh, int64_t kw,
                                  const Conv2dParams& params) {
  const char* op = "convolution_2d_grad_filter";
  const Device device = check_conv_arrays(op, x, gy, params);
  require_4d(op, "x", x.shape(), "(batch, channels, height, width)");
  require_4d(op, "gy", gy.shape(), "(batch, channels, height, width)");
  if (kh < 1 || kw < 1) throw Error(str(op, ": the kernel size ", pair_str(kh, kw), " must be positive"));
  const int64_t n = x.size(0), c = x.size(1), c_out = gy.size(1), groups = params.groups;
  if (gy.size(0) != n)
    throw Error(str(op, ": gy has shape ", shape_str(gy.shape()), " but x has shape ", shape_str(x.shape()),
                    " (batch sizes differ)"));
  if (c % groups != 0 || c_out % groups != 0)
    throw Error(str(op, ": groups ", groups, " does not divide the channels of x (", c, ") and gy (", c_out, ")"));
  check_output_extents(op, "gy has extents", gy.size(2), gy.size(3), x.size(2), x.size(3), kh, kw, params);
  const Shape w_shape{c_out, c / groups, kh, kw};
  if (n == 0 || shape_numel(w_shape) == 0) return Tensor::zeros(w_shape, x.dtype(), device);
  Tensor gW = Tensor::empty(w_shape, x.dtype(), device);
  kernels_for(device).convolution_2d_grad_filter(x.contiguous(), gy.contiguous(),
                                                 conv_geometry(params, kh, kw, gy.size(2), gy.size(3)), gW);
  return gW;
}

}  // namespace chainer::ops
