// CPU kernels behind core/ops/ops.h, collected in the CPU kernel table (core/ops/kernel_list.def states
// the contract: arguments already checked, outputs preallocated and contiguous). Files, one per
// family, paired with core/cuda/'s: elementwise.cpp (with the linear epilogue), reduce.cpp,
// gemm.cpp, softmax.cpp, loss.cpp, dropout.cpp, update.cpp, indexing.cpp, conv.cpp and
// conv_implicit.cpp, pooling.cpp, normalization.cpp, rnn.cpp; convert.cpp (float16 arrays) and
// kernel_table.cpp.
//
// These sources make one kernel family (core/cpu/family.h) each time they are compiled: meson
// compiles them once per instruction set with -DCHAINER_ISA=generic, avx2 or avx512 (the
// namespace they define, chainer::cpu::CHAINER_ISA) and -DCHAINER_ISA_GENERIC, _AVX2 or _AVX512
// (for #if), each with its own target flags (core/meson.build); gemm.cpp and kernel_table.cpp
// also with -DCHAINER_ISA=avx512_bf16, with conv_bf16.cpp (below).
#pragma once
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "core/cpu/family.h"
#include "core/cpu/gemm_blocking.h"
#include "core/cpu/gemm_eigen.h"
#include "core/ops/kernels.h"

#if !defined(CHAINER_ISA)
#error "core/cpu/kernels.h belongs to the sources of a kernel family (compiled with -DCHAINER_ISA=...)"
#endif
// The vector families, those with the packed GEMM (core/cpu/simd.h): AVX2 and AVX-512 (the
// avx512_bf16 family's sources are compiled with CHAINER_ISA_AVX512 too).
#if defined(CHAINER_ISA_AVX2) || defined(CHAINER_ISA_AVX512)
#define CHAINER_ISA_PACKED 1
#endif

// The avx512_bf16 family is the avx512 family's kernels with its own matrix products: only
// gemm.cpp, conv_bf16.cpp and kernel_table.cpp are compiled for it (with -mavx512bf16), which
// is a fraction of the build time of the whole kernel sources a third time, and every other
// kernel would be avx512's code anyway (bfloat16's dot products are the only instructions the
// level adds). In those sources this header declares the kernels in chainer::cpu::avx512,
// and chainer::cpu::avx512_bf16 uses that namespace, declaring only what it defines again:
// gemm.cpp's calls to the other kernels (affine, copy, the half conversions) and
// kernel_table.cpp's table then name avx512's kernels but for gemm, batched_gemm and the three
// convolution entries (conv_bf16.cpp: bfloat16 lowered onto those products).
#if defined(CHAINER_ISA_AVX512_BF16)
#define CHAINER_KERNEL_NAMESPACE avx512
#else
#define CHAINER_KERNEL_NAMESPACE CHAINER_ISA
#endif

namespace chainer::cpu::CHAINER_KERNEL_NAMESPACE {

// The kernel functions of core/ops/kernel_list.def, which this file's sources define.
#define CHAINER_KERNEL(RETURN, NAME, PARAMETERS) RETURN NAME PARAMETERS;
#define CHAINER_LIBRARY_KERNEL(RETURN, NAME, PARAMETERS)  // none on the CPU
#include "core/ops/kernel_list.def"

// Elements per parallel chunk of the elementwise and row-wise kernels.
constexpr int64_t kGrain = 1 << 15;
// Rows per parallel chunk for rows of LEN elements: about kGrain elements a chunk (softmax, the
// losses, add_bias).
inline int64_t row_grain(int64_t len) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(len, 1)); }

// The lowering of convolutions (core/ops/conv_lowering.h) and the kernels it is built from.
// batched_gemm, a kernel of the list, is what the lowering multiplies with.
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

// This family's gemm_backend() and gemm_blocking() (core/cpu/family.h).
const char* gemm_backend();
std::string gemm_blocking();
// The width of the packed GEMM's B panels: two vectors (32 floats in AVX-512, 16 in AVX2; the
// generic family, without panels, keeps 32 for the choices of conv.cpp that refer to it).
#if defined(CHAINER_ISA_AVX2)
inline constexpr int64_t kGemmPanelWidth = 16;
#else
inline constexpr int64_t kGemmPanelWidth = 32;
#endif
// The packed GEMM with its B operand made panel by panel instead of read from memory (an
// implicit im2col: the convolutions' windows are packed straight from the image). B is k x n;
// FILL(CONTEXT, P0, KC, J0, PANEL) writes its rows [P0, P0 + KC) x columns [J0, J0 + W) as
// PANEL[p * W + j] (W = kGemmPanelWidth), zeros in the columns past n. A is m x k, row-major
// with rows LDA apart (or its transpose, k x m, when TRANS_A). C (m x n, rows LDC apart) = ALPHA
// * A B + BETA * C, on the calling thread alone (callers run one product per task). With
// K_ALIGN > 1 (at most the blocking's KC) every slice P0 is a multiple of K_ALIGN. The vector
// families only.
using GemmPanelFill = void (*)(const void* context, int64_t p0, int64_t kc, int64_t j0, float* panel);
void sgemm_filled_b(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a, GemmPanelFill fill,
                    const void* context, float alpha, float beta, float* c, int64_t ldc, int64_t k_align = 1);
// PANEL[p * W + j] = ROWS[j * LD + p] for j < COUNT (zero for COUNT <= j < W), p < KC: a panel
// of B from the rows of B's transpose.
void gemm_panel_from_rows(const float* rows, int64_t ld, int64_t count, int64_t kc, float* panel);
// Convolutions as packed GEMMs whose B panels are packed straight from the images
// (conv_implicit.cpp): float32 with the packed GEMM, neither depthwise nor 1x1 (those have their
// own paths); implicit_conv_applies says when (never in the generic family). The same contracts
// as convolution_2d and convolution_2d_grad_filter.
bool implicit_conv_applies(const Tensor& x, const Conv2dGeometry& g);
void implicit_convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y);
void implicit_convolution_2d_grad_filter(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW);
// N float16 at SRC to floats at DST, and N floats at SRC rounded to float16 at DST (convert.cpp).
void widen_half(const float16* src, float* dst, int64_t n);
void narrow_half(const float* src, float16* dst, int64_t n);
// The same for bfloat16, and both as overloads beside float's copy, for loops over a type T:
// the elementwise kernels' chunks of half elements, converted in vectors.
void widen_half(const bfloat16* src, float* dst, int64_t n);
void narrow_half(const float* src, bfloat16* dst, int64_t n);
// The type a kernel on elements of T computes in: float for the half types (their arithmetic is
// float32's, rounded once when stored), T itself otherwise.
template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;
// The half calls of the kernels that run through their float32 code (convolutions, pooling,
// sums, random numbers; the list is in docs/mixed_precision.md) widen their inputs with
// chainer::widened (core/ops/kernels.h) and compute into a float32 tensor of T's shape.
Tensor float32_like(const Tensor& t);
// For a call whose output OUT is half: RUN(out32) computes into a float32 tensor of OUT's shape
// (from its inputs widened; holding OUT's values widened when READS_OUT, for products that add
// onto C), which is then rounded into OUT; returns whether it ran (false for the other dtypes,
// which the caller computes itself).
template <class Run>
bool through_float32(Tensor& out, Run&& run, bool reads_out = false) {
  if (!is_half(out.dtype())) return false;
  Tensor out32 = reads_out ? widened(out) : float32_like(out);
  run(out32);
  copy(out32, out);
  return true;
}
// This family (kernel_table.cpp).
const KernelFamily& kernel_family();

}  // namespace chainer::cpu::CHAINER_KERNEL_NAMESPACE

#if defined(CHAINER_ISA_AVX512_BF16)
namespace chainer::cpu::avx512_bf16 {
using namespace avx512;
// Its own: the matrix products (gemm.cpp), and the family's description.
void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c);
void batched_gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c);
// bfloat16 convolutions lowered onto those products (conv_bf16.cpp).
void convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y);
void convolution_2d_grad_data(const Tensor& gy, const Tensor& W, const Conv2dGeometry& g, Tensor& gx);
void convolution_2d_grad_filter(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW);
const char* gemm_backend();
std::string gemm_blocking();
const KernelFamily& kernel_family();
}  // namespace chainer::cpu::avx512_bf16
#endif
