// CUDA kernels behind core/ops.h, collected in the CUDA kernel table (core/cuda/runtime.cu); the
// same signatures and contract as the CPU's (core/kernels.h). Each queues work on the current
// device's compute stream and returns. Files: elementwise.cu (memory and elementwise),
// reduce.cu (reductions), blas.cu (cuBLAS), nn.cu (the fused steps of nn/functions),
// update.cu (optimizer updates), indexing.cu (gather and scatter-add along an axis), conv.cu (the
// lowering of convolutions), pooling.cu (2-D pooling), normalization.cu (batch and local response
// normalization).
#pragma once
#include <vector>

#include "core/kernels.h"

namespace chainer::cuda {

#include "core/kernel_functions.inc"

// The lowering of convolutions (core/conv_lowering.h) and the kernels it is built from.
// Products of a batch, summed in groups: C[g] = alpha * sum of op(A[i]) op(B[i]) over the
// products i of group g + beta * C[g]. A and B are 3-D with a batch axis of 1 (one matrix for
// every product) or of the batch size; C (groups, m, n) has `groups` dividing the batch, group g
// holding products [g * batch / groups, (g + 1) * batch / groups) (groups == batch: one product
// each). Every matrix A[i], B[i], C[g] is a contiguous 2-D block; the batch axes may have any
// stride (C may be a view).
void batched_gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c);
// COL (B, C * kh * kw, out_h * out_w) = the windows of X (B, C, H, W, contiguous):
// col[b, (c, i, j), (oy, ox)] = x[b, c, oy*sy - ph + i*dy, ox*sx - pw + j*dx], 0 outside X.
void im2col(const Tensor& x, const Conv2dGeometry& g, Tensor& col);
// X (B, C, H, W, overwritten) = every element of COL (contiguous, as im2col makes it) added back
// at the pixel im2col took it from (the adjoint of im2col); elements from outside the image are
// dropped.
void col2im(const Tensor& col, const Conv2dGeometry& g, Tensor& x);
// The depthwise convolution (groups = C): Y (N, C * m, out_h, out_w) = X (N, C, H, W) with
// filters W (C * m, 1, kh, kw), output channel o reading input channel o / m, plus B (C * m,) per
// output channel when defined; its data gradient and its filter gradient (summed in a fixed order).
void depthwise_conv(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y);
void depthwise_conv_grad_data(const Tensor& gy, const Tensor& W, const Conv2dGeometry& g, Tensor& gx);
void depthwise_conv_grad_filter(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW);

}  // namespace chainer::cuda
