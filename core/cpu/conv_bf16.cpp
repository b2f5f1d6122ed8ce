// The avx512_bf16 family's own convolutions: bfloat16 lowered in bfloat16 (avx512's im2col moves
// the values) and multiplied on this family's products, vdpbf16ps with float32 sums, so that each
// output is rounded once (core/ops/conv_lowering.h): the forward adds the bias in those sums, the
// data gradient puts float32 columns back, the filter gradient sums its images in float32.
// Depthwise convolutions and the other dtypes are avx512's kernels, whose half calls run their
// float32 code on widened copies. Compiled for this family alone (core/meson.build).
#include "core/cpu/kernels.h"
#include "core/ops/conv_lowering.h"

namespace chainer::cpu::avx512_bf16 {

namespace {
const ConvLoweringKernels kLowering{.convolution_2d = convolution_2d,
                                    .im2col = avx512::im2col,
                                    .col2im = avx512::col2im,
                                    .batched_gemm = batched_gemm,
                                    .depthwise_conv = avx512::depthwise_conv,
                                    .depthwise_conv_grad_data = avx512::depthwise_conv_grad_data,
                                    .depthwise_conv_grad_filter = avx512::depthwise_conv_grad_filter};

// Whether this family's lowering takes a convolution of DTYPE with C input channels.
bool lowered_here(DType dtype, int64_t c, const Conv2dGeometry& g) {
  return dtype == DType::BFloat16 && !is_depthwise(c, g);
}
}  // namespace

void convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y) {
  if (!lowered_here(y.dtype(), x.size(1), g)) return avx512::convolution_2d(x, W, b, g, y);
  lowered_convolution_2d(kLowering, x, W, b, g, y);
}

void convolution_2d_grad_data(const Tensor& gy, const Tensor& W, const Conv2dGeometry& g, Tensor& gx) {
  if (!lowered_here(gx.dtype(), gx.size(1), g)) return avx512::convolution_2d_grad_data(gy, W, g, gx);
  lowered_convolution_2d_grad_data(kLowering, gy, W, g, gx);
}

void convolution_2d_grad_filter(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW) {
  if (!lowered_here(gW.dtype(), x.size(1), g)) return avx512::convolution_2d_grad_filter(x, gy, g, gW);
  lowered_convolution_2d_grad_filter(kLowering, x, gy, g, gW);
}

}  // namespace chainer::cpu::avx512_bf16
