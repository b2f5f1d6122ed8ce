// 2-D convolutions lowered to matrix products, written once over a device's lowering kernels:
// the device entries convolution_2d / _grad_data / _grad_filter of core/ops/kernels.h on the CPU
// (behind its own faster paths, core/cpu/conv.cpp).
//
// Each image's windows are laid out as the columns of a matrix (im2col, in chunks of images of
// at most kConvLoweredBytes, allocated per call from the device's allocator and released on
// return) and multiplied by the filters, one product per image and group; the filter gradient
// sums those products over the images in a fixed number of partial sums. The data gradient puts
// the columns back (col2im), or, with stride 1 and 16 or more channels per group, is the
// convolution of gy with the flipped filters. A 1x1 convolution with stride 1 and no padding
// multiplies the images themselves; a depthwise one (groups = C) has direct kernels. Half data
// (the avx512_bf16 family's bfloat16) is lowered in its dtype and each output rounded once: the
// data gradient's columns and the filter gradient's partial sums are the products' float32 sums
// (gemm into a float32 C), and the data gradient always takes the column path.
#pragma once
#include "core/ops/kernels.h"

namespace chainer {

/// The kernels a device lends the lowering (their contracts are the CPU's, core/cpu/kernels.h),
/// and its full forward, which the data gradient's flipped convolution calls.
struct ConvLoweringKernels {
  void (*convolution_2d)(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y);
  void (*im2col)(const Tensor& x, const Conv2dGeometry& g, Tensor& col);
  void (*col2im)(const Tensor& col, const Conv2dGeometry& g, Tensor& x);
  void (*batched_gemm)(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta,
                       Tensor& c);
  void (*depthwise_conv)(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y);
  void (*depthwise_conv_grad_data)(const Tensor& gy, const Tensor& W, const Conv2dGeometry& g, Tensor& gx);
  void (*depthwise_conv_grad_filter)(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW);
};

/// The most bytes of lowered windows one convolution call holds at once (the chunk of images
/// whose columns are built together; at least one image).
inline constexpr int64_t kConvLoweredBytes = int64_t(4) << 20;

/// The three entries of core/ops/kernels.h (same arguments), by lowering.
void lowered_convolution_2d(const ConvLoweringKernels& k, const Tensor& x, const Tensor& W, const Tensor& b,
                            const Conv2dGeometry& g, Tensor& y);
void lowered_convolution_2d_grad_data(const ConvLoweringKernels& k, const Tensor& gy, const Tensor& W,
                                      const Conv2dGeometry& g, Tensor& gx);
void lowered_convolution_2d_grad_filter(const ConvLoweringKernels& k, const Tensor& x, const Tensor& gy,
                                        const Conv2dGeometry& g, Tensor& gW);

/// One input channel per group (groups = C > 1): the products would have one row, so the
/// depthwise kernels compute the convolution directly.
inline bool is_depthwise(int64_t channels, const Conv2dGeometry& g) { return g.groups > 1 && channels == g.groups; }
/// A 1x1 window with stride 1 and no padding: the image is its own lowered matrix.
inline bool is_pointwise(const Conv2dGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.sy == 1 && g.sx == 1 && g.ph == 0 && g.pw == 0;
}

}  // namespace chainer
