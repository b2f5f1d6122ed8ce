// The avx512_bf16 family's own convolution: bfloat16 lowered in bfloat16 (avx512's im2col moves
// the values) and multiplied on this family's products, vdpbf16ps with float32 sums, the bias
// added in those sums, so each output is rounded once (core/ops/conv_lowering.h). Everything
// else, depthwise convolutions and the gradients included, is avx512's kernel, whose half calls
// run its float32 code on widened copies. Compiled for this family alone (core/meson.build).
#include "core/cpu/kernels.h"
#include "core/ops/conv_lowering.h"

namespace chainer::cpu::avx512_bf16 {

void convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y) {
  if (y.dtype() != DType::BFloat16 || is_depthwise(x.size(1), g)) return avx512::convolution_2d(x, W, b, g, y);
  static const ConvLoweringKernels lowering{.convolution_2d = convolution_2d,
                                            .im2col = avx512::im2col,
                                            .col2im = avx512::col2im,
                                            .batched_gemm = batched_gemm,
                                            .depthwise_conv = avx512::depthwise_conv,
                                            .depthwise_conv_grad_data = avx512::depthwise_conv_grad_data,
                                            .depthwise_conv_grad_filter = avx512::depthwise_conv_grad_filter};
  lowered_convolution_2d(lowering, x, W, b, g, y);
}

}  // namespace chainer::cpu::avx512_bf16
