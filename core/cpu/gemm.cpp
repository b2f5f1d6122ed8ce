// Matrix products. float32 on AVX-512 machines goes through our own packed GEMM (BLIS-style
// blocking with a 12x32 register-tiled micro-kernel); Eigen's product served as the baseline
// and runs at about a third of the rate on this machine's shapes (see docs/performance.md), so
// it stays only for float64 (gradient checks) and CPUs without AVX-512.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/cpu/kernels.h"
#include "core/parallel.h"

namespace chainer::cpu {

namespace {
#if defined(__AVX512F__)
constexpr int64_t MR = 12;   // rows of a micro-tile: 12 x 2 accumulators = 24 of 32 zmm registers
constexpr int64_t NR = 32;   // columns of a micro-tile: two zmm vectors
constexpr int64_t KC = 256;  // depth of a packed block: a B micro-panel (KC x NR) is 32 KiB
constexpr int64_t MC = 600;  // rows of a packed A block (streams from L2/L3 once per B block)
constexpr int64_t NC = 256;  // columns of a packed B block: KC x NC floats = 256 KiB stay in L2

// A(i, p) of op(A) where op is transpose when TRANS.
struct Operand {
  const float* p;
  int64_t ld;
  bool trans;
  float at(int64_t r, int64_t c) const { return trans ? p[c * ld + r] : p[r * ld + c]; }
};

// Transposes the 16x16 block held in r[0..15] (row i in r[i]) in place: afterwards r[j] holds
// column j. 64 shuffles instead of 256 scalar moves.
inline void transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    u[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  // u[4q + j] holds, in 128-bit lane L, column 4L + j of rows 4q..4q+3.
  for (int j = 0; j < 4; ++j) {
    const __m512 v = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88), w = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88), w2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
    r[j] = _mm512_shuffle_f32x4(v, v2, 0x88);
    r[4 + j] = _mm512_shuffle_f32x4(w, w2, 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(v, v2, 0xDD);
    r[12 + j] = _mm512_shuffle_f32x4(w, w2, 0xDD);
  }
}

// dst[k * width + r] = src[r * ld + k] for r < rows (zero for rows <= r < width), k < kc: the
// packing of a panel whose source runs along k (A not transposed, or B transposed).
void pack_transposed(const float* src, int64_t ld, int64_t rows, int64_t width, int64_t kc, float* dst) {
  for (int64_t r0 = 0; r0 < width; r0 += 16) {
    const int64_t group = std::min<int64_t>(16, width - r0);
    const __mmask16 store_mask = __mmask16((1u << group) - 1);
    int64_t k0 = 0;
    for (; k0 + 16 <= kc; k0 += 16) {
      __m512 r[16];
      for (int64_t i = 0; i < 16; ++i)
        r[i] = r0 + i < rows ? _mm512_loadu_ps(src + (r0 + i) * ld + k0) : _mm512_setzero_ps();
      transpose16(r);
      for (int64_t k = 0; k < 16; ++k) _mm512_mask_storeu_ps(dst + (k0 + k) * width + r0, store_mask, r[k]);
    }
    for (; k0 < kc; ++k0)
      for (int64_t i = 0; i < group; ++i) dst[k0 * width + r0 + i] = r0 + i < rows ? src[(r0 + i) * ld + k0] : 0.f;
  }
}

// dst[k * width + c] = src[k * ld + c] for c < cols (zero for cols <= c < width): the packing of
// a panel whose source already runs along the panel's width (A transposed, B not transposed).
void pack_direct(const float* src, int64_t ld, int64_t cols, int64_t width, int64_t kc, float* dst) {
  for (int64_t c0 = 0; c0 < width; c0 += 16) {
    const int64_t group = std::clamp<int64_t>(cols - c0, 0, 16);
    const __mmask16 load_mask = __mmask16((1u << group) - 1);
    const __mmask16 store_mask = __mmask16((1u << std::min<int64_t>(16, width - c0)) - 1);
    for (int64_t k = 0; k < kc; ++k)
      _mm512_mask_storeu_ps(dst + k * width + c0, store_mask, _mm512_maskz_loadu_ps(load_mask, src + k * ld + c0));
  }
}

// Packs micro-panel PANEL (MR rows) of rows [i0, i0+mc) x depth [p0, p0+kc) of op(A).
void pack_a(const Operand& A, int64_t m, int64_t i0, int64_t p0, int64_t kc, float* dst, int64_t panel) {
  const int64_t row = i0 + panel * MR, rows = std::min(MR, m - row);
  float* d = dst + panel * MR * kc;
  if (A.trans) pack_direct(A.p + p0 * A.ld + row, A.ld, rows, MR, kc, d);
  else pack_transposed(A.p + row * A.ld + p0, A.ld, rows, MR, kc, d);
}

// Packs micro-panel PANEL (NR columns) of depth [p0, p0+kc) x columns [j0, ...) of op(B).
void pack_b(const Operand& B, int64_t n, int64_t j0, int64_t p0, int64_t kc, float* dst, int64_t panel) {
  const int64_t col = j0 + panel * NR, cols = std::min(NR, n - col);
  float* d = dst + panel * NR * kc;
  if (B.trans) pack_transposed(B.p + col * B.ld + p0, B.ld, cols, NR, kc, d);
  else pack_direct(B.p + p0 * B.ld + col, B.ld, cols, NR, kc, d);
}

// acc = a_panel (kc x MR) ^T * b_panel (kc x NR); then C = alpha * acc + beta * C on the valid
// rows x cols.
void micro_kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, float alpha, float beta,
                  int64_t rows, int64_t cols) {
  __m512 acc[MR][2];
  for (int64_t r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b + k * NR), b1 = _mm512_load_ps(b + k * NR + 16);
    _mm_prefetch(reinterpret_cast<const char*>(b + (k + 8) * NR), _MM_HINT_T0);
#pragma GCC unroll 12
    for (int64_t r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(a[k * MR + r]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  const __mmask16 m0 = cols >= 16 ? __mmask16(0xffff) : __mmask16((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? __mmask16(0xffff) : cols <= 16 ? __mmask16(0) : __mmask16((1u << (cols - 16)) - 1);
  for (int64_t r = 0; r < rows; ++r) {
    float* cr = c + r * ldc;
    __m512 v0 = _mm512_mul_ps(acc[r][0], va), v1 = _mm512_mul_ps(acc[r][1], va);
    if (beta != 0.f) {
      v0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m0, cr), vb, v0);
      v1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m1, cr + 16), vb, v1);
    }
    _mm512_mask_storeu_ps(cr, m0, v0);
    _mm512_mask_storeu_ps(cr + 16, m1, v1);
  }
}

float* aligned_buffer(std::unique_ptr<float, decltype(&std::free)>& buf, size_t floats) {
  if (!buf) buf.reset(static_cast<float*>(std::aligned_alloc(64, floats * sizeof(float))));
  return buf.get();
}

// C[:, cols) = alpha * op(A) * op(B)[:, cols) + beta * C[:, cols) on one thread, BLIS-style: for
// each KC-deep slice, a block of B panels (KC x NC, kept in this core's L2) and a block of A
// panels are packed; each A micro-panel then stays in L1 while the B micro-panels stream past.
void sgemm_columns(int64_t m, int64_t col_begin, int64_t col_end, int64_t k, const Operand& A, const Operand& B,
                   float alpha, float beta, float* C, int64_t ldc) {
  thread_local std::unique_ptr<float, decltype(&std::free)> abuf(nullptr, &std::free), bbuf(nullptr, &std::free);
  float* pa = aligned_buffer(abuf, size_t(MC * KC));
  float* pb = aligned_buffer(bbuf, size_t(KC * NC));
  const int64_t n = col_end;
  for (int64_t j0 = col_begin; j0 < col_end; j0 += NC) {
    const int64_t nc = std::min(NC, col_end - j0), npanels = (nc + NR - 1) / NR;
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
      const int64_t kc = std::min(KC, k - p0);
      const float beta_pass = p0 == 0 ? beta : 1.f;
      for (int64_t jp = 0; jp < npanels; ++jp) pack_b(B, n, j0, p0, kc, pb, jp);
      for (int64_t i0 = 0; i0 < m; i0 += MC) {
        const int64_t mc = std::min(MC, m - i0), mpanels = (mc + MR - 1) / MR;
        for (int64_t ip = 0; ip < mpanels; ++ip) pack_a(A, m, i0, p0, kc, pa, ip);
        for (int64_t ip = 0; ip < mpanels; ++ip) {
          const int64_t rows = std::min(MR, mc - ip * MR);
          for (int64_t jp = 0; jp < npanels; ++jp)
            micro_kernel(kc, pa + ip * MR * kc, pb + jp * NR * kc, C + (i0 + ip * MR) * ldc + j0 + jp * NR, ldc, alpha,
                         beta_pass, rows, std::min(NR, nc - jp * NR));
        }
      }
    }
  }
}

// C (m x n) = alpha * op(A) (m x k) * op(B) (k x n) + beta * C on the team of num_threads():
// the NR-column panels of C are split evenly among the threads, and each thread packs what it
// needs itself. No barriers, no shared writes, and a split that depends only on the shapes, so
// results never depend on timing.
void packed_sgemm(int64_t m, int64_t n, int64_t k, const Operand& A, const Operand& B, float alpha, float beta, float* C,
                  int64_t ldc) {
  const int64_t panels = (n + NR - 1) / NR;
  const int threads = int(std::max<int64_t>(1, std::min<int64_t>(num_threads(), panels)));
  if (threads == 1) return sgemm_columns(m, 0, n, k, A, B, alpha, beta, C, ldc);
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = panels * t / nt * NR, end = std::min(n, panels * (t + 1) / nt * NR);
    if (begin < end) sgemm_columns(m, begin, end, k, A, B, alpha, beta, C, ldc);
  }
}
#endif
}  // namespace

const char* gemm_backend() {
#if defined(__AVX512F__)
  static const bool eigen = [] {
    const char* v = std::getenv("CHAINER_GEMM");
    return v && std::strcmp(v, "eigen") == 0;
  }();
  return eigen ? "eigen" : "packed-avx512";
#else
  return "eigen";
#endif
}

void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c) {
#if defined(__AVX512F__)
  if (c.dtype() == DType::Float32 && gemm_backend()[0] == 'p') {
    const int64_t m = c.size(0), n = c.size(1), k = trans_a ? a.size(0) : a.size(1);
    if (m == 0 || n == 0) return;
    if (k == 0) {
      if (beta == 0) c.fill_(0.0);
      else affine(c, beta, 0.0, c);
      return;
    }
    packed_sgemm(m, n, k, {a.data<float>(), a.size(1), trans_a}, {b.data<float>(), b.size(1), trans_b}, float(alpha),
                 float(beta), c.data<float>(), n);
    return;
  }
#endif
  eigen_gemm(a, trans_a, b, trans_b, alpha, beta, c);
}

}  // namespace chainer::cpu
