// CPU kernels behind core/ops.h, collected in the CPU kernel table (core/kernels.h states the
// contract: arguments already checked, outputs preallocated and contiguous). Files:
// elementwise.cpp, reduce.cpp, gemm.cpp (+ gemm_eigen.cpp), softmax.cpp, nn.cpp, update.cpp,
// indexing.cpp, conv.cpp, pooling.cpp, normalization.cpp.
#pragma once
#include <string>
#include <vector>

#include "core/kernels.h"

namespace chainer::cpu {

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

// Eigen's product: the fallback of gemm (float64, CPUs without AVX-512, CHAINER_GEMM=eigen).
void eigen_gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c);
// Which float32 path gemm takes: "packed-avx512" or "eigen".
const char* gemm_backend();
// The packed GEMM's blocking: the depth of a packed slice (KC) and the columns of C per work
// chunk (CW), chosen at run time from the CPU's caches as OpenBLAS and oneDNN choose per
// microarchitecture. The Zen 5 machines here (48 KiB L1d, 1 MiB L2) get 256 and 128, the blocking
// measured best there; a Zen 4 (32 KiB L1d) gets 192 and 160.
struct GemmBlocking {
  int64_t kc, cw;
};
// The blocking for an L1d and an L2 of these sizes; KC_OVERRIDE (CHAINER_GEMM_KC, for measuring;
// null or empty: none) sets KC, a multiple of 16 from 16 to 512, else chainer::Error.
GemmBlocking gemm_blocking_for(int64_t l1d_bytes, int64_t l2_bytes, const char* kc_override);
// The packed GEMM with its B operand made panel by panel instead of read from memory (an
// implicit im2col: the convolutions' windows are packed straight from the image). B is k x n;
// FILL(CONTEXT, P0, KC, J0, PANEL) writes its rows [P0, P0 + KC) x columns [J0, J0 + 32) as
// PANEL[p * 32 + j], zeros in the columns past n. A is m x k, row-major with rows LDA apart (or
// its transpose, k x m, when TRANS_A). C (m x n, rows LDC apart) = ALPHA * A B + BETA * C, on
// the calling thread alone (callers run one product per task). With K_ALIGN > 1 (at most the
// blocking's KC) every slice P0 is a multiple of K_ALIGN. AVX-512 builds only.
inline constexpr int64_t kGemmPanelWidth = 32;
using GemmPanelFill = void (*)(const void* context, int64_t p0, int64_t kc, int64_t j0, float* panel);
void sgemm_filled_b(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a, GemmPanelFill fill,
                    const void* context, float alpha, float beta, float* c, int64_t ldc, int64_t k_align = 1);
// PANEL[p * 32 + j] = ROWS[j * LD + p] for j < COUNT (zero for COUNT <= j < 32), p < KC: a
// panel of B from the rows of B's transpose.
void gemm_panel_from_rows(const float* rows, int64_t ld, int64_t count, int64_t kc, float* panel);
// Convolutions as packed GEMMs whose B panels are packed straight from the images
// (conv_implicit.cpp): float32 with the packed GEMM, neither depthwise nor 1x1 (those have their
// own paths); implicit_conv_applies says when. The same contracts as convolution_2d and
// convolution_2d_grad_filter.
bool implicit_conv_applies(const Tensor& x, const Conv2dGeometry& g);
void implicit_convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y);
void implicit_convolution_2d_grad_filter(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW);
// This CPU's blocking as text, "KC 256, CW 128" (Eigen's where the packed GEMM is not built).
std::string gemm_blocking();

}  // namespace chainer::cpu
