// Matrix products. float32 in the vector families goes through our own packed GEMM (BLIS-style
// blocking with a register-tiled micro-kernel: 14 x 32 in AVX-512's 32 zmm registers, 6 x 16 in
// AVX2's 16 ymm ones, as BLIS's Haswell kernel; a dot-product kernel for products with few
// columns and B transposed, such as the forward of a 10-output layer), written once over the
// vectors of core/cpu/simd.h. Eigen's product served as the baseline and runs at about a third
// of the rate on this machine's shapes (see docs/performance.md), so it stays only for float64
// (gradient checks) and the generic family.
//
// float16 and bfloat16 products (half A, B and C) run through the same packed GEMM and
// dot-product kernel: the operands are widened to float32 while their panels are packed, or as
// they are loaded (F16C's vcvtph2ps for float16, a 16-bit shift for bfloat16), the kernels sum
// in float32, and C is rounded once. The
// avx512_bf16 family (this file compiled again with -mavx512bf16; core/cpu/kernels.h) packs
// bfloat16 as pairs of k instead and multiplies them with vdpbf16ps (Bf16PairPanels). The generic
// family widens whole operands for Eigen's float32 product.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/cpu/kernels.h"
#include "core/util/error.h"
#include "core/util/parallel.h"
#if defined(CHAINER_ISA_PACKED)
#include "core/cpu/simd.h"
#endif

namespace chainer::cpu::CHAINER_ISA {

#if defined(CHAINER_ISA_PACKED)
namespace {
using namespace simd;
#if defined(CHAINER_ISA_AVX512)
constexpr int64_t MR = 14;  // rows of a micro-tile: 14 x 2 accumulators + 2 B vectors + 1 broadcast = 31 of 32 zmm
#else
constexpr int64_t MR = 6;   // 6 x 2 accumulators + 2 B vectors + 1 broadcast = 15 of 16 ymm
#endif
constexpr int64_t NR = 2 * kLanes;  // columns of a micro-tile: two vectors
static_assert(kGemmPanelWidth == NR);
// An A panel is one vector wide, a B panel two whole ones: only a panel's single group of lanes
// is ever partial (store_panel_row's whole-vector rows rely on it).
static_assert(MR <= kLanes);

// This CPU's blocking for this family's tile, chosen once (core/cpu/gemm_blocking.h).
const GemmBlocking& blocking() {
  static const GemmBlocking b = gemm_blocking_here({MR, NR});
  return b;
}

// A(i, p) of op(A) where op is transpose when TRANS; T is float or a half type.
template <class T>
struct Operand {
  const T* p;
  int64_t ld;
  bool trans;
};

// kLanes elements of T at P as floats (half types widened while packing: no float32 copy of a
// half operand is ever made), and the masked form (the lanes of M, the first COUNT).
inline Vec load_elems(const float* p) { return load(p); }
template <class T>
inline Vec load_elems(const T* p) { return load_half(p); }
inline Vec load_elems_masked(Mask m, int64_t, const float* p) { return load_masked(m, reinterpret_cast<uintptr_t>(p)); }
template <class T>
inline Vec load_elems_masked(Mask m, int64_t count, const T* p) { return load_half_masked(m, count, p); }
inline float to_float(float v) { return v; }
inline float to_float(float16 v) { return float(v); }
inline float to_float(bfloat16 v) { return half_bits::bfloat16_to_float(v.bits); }

// The lanes [lo, hi) of 32 as a bit mask (bounds clamped to [0, 32]).
inline uint32_t lanes(int64_t lo, int64_t hi) {
  lo = std::clamp<int64_t>(lo, 0, 32), hi = std::clamp<int64_t>(hi, 0, 32);
  if (hi <= lo) return 0;
  const uint64_t upto = (uint64_t(1) << hi) - 1;
  return uint32_t(upto & ~((uint64_t(1) << lo) - 1));
}

// DST[0, group) = the first GROUP lanes of V (M: those lanes), as a row of a panel whose rows
// are written in order: a whole vector, whose lanes past GROUP land on the next row and are
// written again with it, except on the panel's LAST row or where masked stores cost nothing.
// (AVX2's masked stores are slow on AMD's cores: 42 uops on a Zen 3.)
inline void store_panel_row(float* dst, Mask m, int64_t group, Vec v, bool last) {
  if (group == kLanes || (!kCheapMasks && !last)) store(dst, v);
  else store_masked(dst, m, v);
}

// dst[k * width + r] = src[r * ld + k] for r < rows (zero for rows <= r < width), k < kc: the
// packing of a panel whose source runs along k (A not transposed, or B transposed).
template <class T>
void pack_transposed(const T* src, int64_t ld, int64_t rows, int64_t width, int64_t kc, float* dst) {
  for (int64_t r0 = 0; r0 < width; r0 += kLanes) {
    const int64_t group = std::min<int64_t>(kLanes, width - r0);
    const Mask store_mask = mask(lanes(0, group));
    int64_t k0 = 0;
    for (; k0 + kLanes <= kc; k0 += kLanes) {
      Vec r[kLanes];
      for (int64_t i = 0; i < kLanes; ++i) r[i] = r0 + i < rows ? load_elems(src + (r0 + i) * ld + k0) : zero();
      transpose(r);
      for (int64_t k = 0; k < kLanes; ++k)
        store_panel_row(dst + (k0 + k) * width + r0, store_mask, group, r[k], k0 + k == kc - 1);
    }
    for (; k0 < kc; ++k0)
      for (int64_t i = 0; i < group; ++i) dst[k0 * width + r0 + i] = r0 + i < rows ? to_float(src[(r0 + i) * ld + k0]) : 0.f;
  }
}

// dst[k * width + c] = src[k * ld + c] for c < cols (zero for cols <= c < width): the packing of
// a panel whose source already runs along the panel's width (A transposed, B not transposed).
// Row by row with the rows 8 ahead prefetched: the rows are a stride apart (a weight matrix's
// rows, 4 KB), where the hardware prefetcher does not follow, so each row was a full miss.
template <class T>
void pack_direct(const T* src, int64_t ld, int64_t cols, int64_t width, int64_t kc, float* dst) {
  constexpr int64_t kMaxGroups = NR / kLanes;
  const int64_t groups = (width + kLanes - 1) / kLanes;
  Mask load_mask[kMaxGroups], store_mask[kMaxGroups];
  for (int64_t g = 0; g < groups; ++g) {
    load_mask[g] = mask(lanes(0, cols - g * kLanes));
    store_mask[g] = mask(lanes(0, width - g * kLanes));
  }
  for (int64_t k = 0; k < kc; ++k) {
    prefetch(src + (k + 8) * ld);
    if (groups > 1) prefetch(src + (k + 8) * ld + kLanes);
    for (int64_t g = 0; g < groups; ++g)
      store_panel_row(dst + k * width + g * kLanes, store_mask[g], std::min<int64_t>(kLanes, width - g * kLanes),
                      load_elems_masked(load_mask[g], cols - g * kLanes, src + k * ld + g * kLanes), k == kc - 1);
  }
}

// The first row of micro-panel PANEL of PANELS over M rows. The rows are spread evenly (a batch
// of 100 runs as 4 x 13 + 4 x 12 rows, not 7 x 14 + 2, whose 2-row tile ran at a fraction of
// the FMA rate); every panel has at most MR rows.
inline int64_t panel_row(int64_t panel, int64_t panels, int64_t m) { return panel * m / panels; }

// Packs micro-panel PANEL of PANELS x depth [p0, p0+kc) of op(A) into a slot of MR rows.
template <class T>
void pack_a(const Operand<T>& A, int64_t m, int64_t panels, int64_t p0, int64_t kc, float* dst, int64_t panel) {
  const int64_t row = panel_row(panel, panels, m), rows = panel_row(panel + 1, panels, m) - row;
  float* d = dst + panel * MR * kc;
  if (A.trans) pack_direct(A.p + p0 * A.ld + row, A.ld, rows, MR, kc, d);
  else pack_transposed(A.p + row * A.ld + p0, A.ld, rows, MR, kc, d);
}

// Packs micro-panel PANEL (NR columns) of depth [p0, p0+kc) x columns [j0, ...) of op(B).
template <class T>
void pack_b(const Operand<T>& B, int64_t n, int64_t j0, int64_t p0, int64_t kc, float* dst, int64_t panel) {
  const int64_t col = j0 + panel * NR, cols = std::min(NR, n - col);
  float* d = dst + panel * NR * kc;
  if (B.trans) pack_transposed(B.p + col * B.ld + p0, B.ld, cols, NR, kc, d);
  else pack_direct(B.p + p0 * B.ld + col, B.ld, cols, NR, kc, d);
}

// C = alpha * ACC + beta * C on R rows x COLS (at most NR), every row through masks: the
// micro-kernels' epilogue where masked stores cost nothing (AVX-512). Inlined, so that every index
// into ACC stays a constant and the accumulators stay in registers.
template <int R>
[[gnu::always_inline]] inline void store_tile_masked(const Vec (&acc)[R][2], float* c, int64_t ldc, float alpha,
                                                     float beta, int64_t cols) {
  const Vec va = set1(alpha), vb = set1(beta);
  const Mask m0 = mask(lanes(0, cols)), m1 = mask(lanes(0, cols - kLanes));
#pragma GCC unroll 14
  for (int r = 0; r < R; ++r) {
    float* cr = c + r * ldc;
    Vec v0 = mul(acc[r][0], va), v1 = mul(acc[r][1], va);
    if (beta != 0.f) {
      v0 = fmadd(load_masked(m0, reinterpret_cast<uintptr_t>(cr)), vb, v0);
      v1 = fmadd(load_masked(m1, reinterpret_cast<uintptr_t>(cr + kLanes)), vb, v1);
    }
    store_masked(cr, m0, v0);
    store_masked(cr + kLanes, m1, v1);
  }
}

// acc = a_panel (kc x MR, of which the first R rows are used) ^T * b_panel (kc x NR, rows LDB
// floats apart: NR when packed, the matrix's own stride when read in place); then
// C = alpha * acc + beta * C on R rows x COLS. R is a template parameter so that a panel of
// fewer rows costs only its rows of FMAs. The k loop is
// unrolled twice to halve its bookkeeping uops (the loop body is close to the front end's 4 per
// cycle); 14 rows instead of 12 gained 1-3% on every shape of the tutorial in AVX-512.
template <int R>
void micro_kernel(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, float alpha,
                  float beta, int64_t cols) {
  Vec acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = zero();
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const Vec b0 = load(b + k * ldb), b1 = load(b + k * ldb + kLanes);
    prefetch(b + (k + 8) * ldb);
    if (ldb != NR) prefetch(b + (k + 8) * ldb + kLanes);
#pragma GCC unroll 14
    for (int r = 0; r < R; ++r) {
      const Vec av = set1(a[k * MR + r]);
      acc[r][0] = fmadd(av, b0, acc[r][0]);
      acc[r][1] = fmadd(av, b1, acc[r][1]);
    }
  }
  // Every index into acc is a constant after unrolling, so the accumulators stay in registers
  // (a loop up to a runtime row count made the compiler keep them on the stack). One path of
  // stores either way: with a second one the compiler kept the row pointers on the stack, and
  // the tutorial's products of depth 10 ran 1.9x slower. AVX-512 stores every tile through
  // masks. AVX2's masked stores are slow on AMD's cores (42 uops on a Zen 3), so there a
  // partial tile (the last columns of C) is computed in a buffer and copied.
  if constexpr (!kCheapMasks) {
    const Vec va = set1(alpha), vb = set1(beta);
    alignas(64) float buffer[R * NR];
    const bool partial = cols < NR;
    if (partial && beta != 0.f)
      for (int r = 0; r < R; ++r) std::memcpy(buffer + r * NR, c + r * ldc, size_t(cols) * sizeof(float));
#pragma GCC unroll 14
    for (int r = 0; r < R; ++r) {
      float* out = partial ? buffer + r * NR : c + r * ldc;
      Vec v0 = mul(acc[r][0], va), v1 = mul(acc[r][1], va);
      if (beta != 0.f) {
        v0 = fmadd(load(out), vb, v0);
        v1 = fmadd(load(out + kLanes), vb, v1);
      }
      store(out, v0);
      store(out + kLanes, v1);
    }
    if (partial)
      for (int r = 0; r < R; ++r) std::memcpy(c + r * ldc, buffer + r * NR, size_t(cols) * sizeof(float));
    return;
  }
  store_tile_masked<R>(acc, c, ldc, alpha, beta, cols);
}

// A micro-kernel over panels of P (floats, or pairs of bfloat16 in 32 bits).
template <class P>
using MicroKernelOf = void (*)(int64_t, const P*, const P*, int64_t, float*, int64_t, float, float, int64_t);
using MicroKernel = MicroKernelOf<float>;
template <size_t... R>
constexpr std::array<MicroKernel, MR> make_kernels(std::index_sequence<R...>) {
  return {&micro_kernel<int(R) + 1>...};
}
// kMicroKernels[rows - 1] computes a tile of ROWS rows.
constexpr std::array<MicroKernel, MR> kMicroKernels = make_kernels(std::make_index_sequence<MR>());

// C (R x COLS, rows LDC apart, half) = SUMS (rows LDS apart, alpha * A B in float32) + BETA * C,
// rounded once.
template <class TC>
void round_tile(const float* sums, int64_t lds, TC* c, int64_t ldc, int64_t rows, int64_t cols, float beta) {
  for (int64_t r = 0; r < rows; ++r) {
    if (beta == 0.f) {
      narrow_half(sums + r * lds, c + r * ldc, cols);
      continue;
    }
    float row[NR];
    widen_half(c + r * ldc, row, cols);
    for (int64_t j = 0; j < cols; ++j) row[j] = std::fma(beta, row[j], sums[r * lds + j]);
    narrow_half(row, c + r * ldc, cols);
  }
}

// Few columns with B transposed (n <= 16; the forward of a Linear layer with few outputs):
// both operands run along k, so every element of C is a dot product of two contiguous rows.
// The packed path pads such a product to a panel's columns and, having one chunk of columns,
// runs it on one thread; here the rows of C are split over the team. J columns at a time, one
// vector accumulator per column, summed across lanes at the end: a fixed order per element,
// whatever the thread count.
//
// Half operands (T) are widened as they are loaded; their C is rounded once per element.
template <int J, class T>
void dot_columns(int64_t k, const T* a, const T* b, int64_t ldb, float alpha, float beta, float* c) {
  const int64_t kfull = k / kLanes * kLanes;
  const Mask tail = mask(lanes(0, k - kfull));
  Vec acc[J];
  for (int j = 0; j < J; ++j) acc[j] = zero();
  for (int64_t p = 0; p < kfull; p += kLanes) {
    const Vec av = load_elems(a + p);
    for (int j = 0; j < J; ++j) acc[j] = fmadd(av, load_elems(b + j * ldb + p), acc[j]);
  }
  if (k > kfull) {
    const Vec av = load_elems_masked(tail, k - kfull, a + kfull);
    for (int j = 0; j < J; ++j) acc[j] = fmadd(av, load_elems_masked(tail, k - kfull, b + j * ldb + kfull), acc[j]);
  }
  for (int j = 0; j < J; ++j) {
    const float v = alpha * lane_sum(acc[j]);
    c[j] = beta != 0.f ? v + beta * c[j] : v;
  }
}

template <class T>
using DotColumns = void (*)(int64_t, const T*, const T*, int64_t, float, float, float*);
constexpr int kDotColumns = 8;  // accumulators per pass: 8 + the A vector, loads stay near 1 per FMA
template <class T, size_t... J>
constexpr std::array<DotColumns<T>, kDotColumns> make_dot_columns(std::index_sequence<J...>) {
  return {&dot_columns<int(J) + 1, T>...};
}

// C (m x n, rows LDC apart; float, or T's half type) = alpha * A B^T + beta * C by dot_columns.
template <class T, class TC>
void small_n_gemm_nt(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, float alpha,
                     float beta, TC* c, int64_t ldc) {
  static constexpr auto kernels = make_dot_columns<T>(std::make_index_sequence<kDotColumns>());
  parallel_for(m, std::max<int64_t>(1, 16384 / (n * k)), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      for (int64_t j = 0; j < n; j += kDotColumns) {
        const int64_t cols = std::min<int64_t>(kDotColumns, n - j);
        if constexpr (std::is_same_v<TC, float>) {
          kernels[cols - 1](k, a + i * lda, b + j * ldb, ldb, alpha, beta, c + i * ldc + j);
        } else {
          float sums[kDotColumns];
          kernels[cols - 1](k, a + i * lda, b + j * ldb, ldb, alpha, 0.f, sums);
          round_tile(sums, kDotColumns, c + i * ldc + j, ldc, 1, cols, beta);
        }
      }
  });
}

// A 64-byte aligned buffer of at least FLOATS floats, kept per thread and grown as needed.
float* thread_buffer(std::unique_ptr<float, decltype(&std::free)>& buf, size_t& capacity, size_t floats) {
  if (!buf || capacity < floats) {
    buf.reset(static_cast<float*>(std::aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64)));
    if (!buf) throw std::bad_alloc();
    capacity = floats;
  }
  return buf.get();
}

// How a product's operands become panels, and the micro-kernels that read them. FloatPanels:
// panels of floats, one row per k, T (float, float16 or bfloat16) widened while packing, read by
// the FMA micro-kernels. Bf16PairPanels (the avx512_bf16 family) further below.
template <class T>
struct FloatPanels {
  using Elem = T;
  using Panel = float;
  // Whether a full panel of an untransposed B may be read in place (float B only).
  static constexpr bool kInPlaceB = std::is_same_v<T, float>;
  // Panel rows for a slice of depth KC.
  static int64_t depth(int64_t kc) { return kc; }
  static void pack_a_panel(const Operand<T>& A, int64_t m, int64_t panels, int64_t p0, int64_t kc, float* dst,
                           int64_t panel) {
    pack_a(A, m, panels, p0, kc, dst, panel);
  }
  static void pack_b_panel(const Operand<T>& B, int64_t n, int64_t j0, int64_t p0, int64_t kc, float* dst, int64_t panel) {
    pack_b(B, n, j0, p0, kc, dst, panel);
  }
  static MicroKernel kernel(int64_t rows) { return kMicroKernels[rows - 1]; }
};

// C (m x n) = alpha * op(A) (m x k) * op(B) (k x n) + beta * C on the team of num_threads(), with
// SCHEME's panels and micro-kernels; C of float, or of a half type (TC).
//
// op(A) is packed once, by the team, into MR-row micro-panels per KC-deep slice (at most a few
// MB for our shapes; it is read from L2/L3). The columns of C are then cut into chunks of CW
// columns that the threads take as they come (parallel_tasks): each thread packs the chunk's B
// (KC x CW, kept in its L2) and runs the micro-kernel with one A micro-panel in L1 while the
// chunk's B micro-panels stream past. Dynamic chunks keep both cores busy when one is slowed by
// the machine (a static half each left the faster one waiting ~8% of an epoch here). Every
// element of C is still computed by one micro-kernel sequence in a fixed order, so results do
// not depend on timing or on the number of threads.
//
// A half C is rounded once: the slices' sums go to a float32 buffer of the chunk's columns (per
// thread), and each tile is rounded into C with beta's term right after its last slice, while
// it is still in L1.
template <class Scheme, class TC>
void packed_gemm(int64_t m, int64_t n, int64_t k, const Operand<typename Scheme::Elem>& A,
                 const Operand<typename Scheme::Elem>& B, float alpha, float beta, TC* C, int64_t ldc) {
  using P = typename Scheme::Panel;
  static_assert(sizeof(P) == sizeof(float));
  constexpr bool half_c = !std::is_same_v<TC, float>;
  const int64_t KC = blocking().kc, CW = blocking().cw;
  const int64_t mpanels = (m + MR - 1) / MR, slices = (k + KC - 1) / KC, chunks = (n + CW - 1) / CW;
  // Slices of equal depth (a multiple of 16 for the transposing packer, and even for pairs of k):
  // 784 = 4 x 196 runs as 208, 208, 208, 160 instead of 256, 256, 256, 16, whose last slice was
  // all overhead.
  const int64_t kslice = std::min(KC, ((k + slices - 1) / slices + 15) / 16 * 16);
  const int64_t slice_elems = mpanels * MR * Scheme::depth(kslice);
  thread_local std::unique_ptr<float, decltype(&std::free)> abuf(nullptr, &std::free);
  thread_local size_t acap = 0;
  P* pa = reinterpret_cast<P*>(thread_buffer(abuf, acap, size_t(slices * slice_elems)));
  const int threads = int(std::max<int64_t>(1, std::min<int64_t>(num_threads(), chunks)));
  // 1. Pack op(A): its (slice, panel) units in a few tasks per thread.
  const int64_t units = slices * mpanels, tasks = std::min<int64_t>(int64_t(threads) * 4, units);
  parallel_tasks(tasks, threads, [&](int64_t task) {
    for (int64_t u = units * task / tasks; u < units * (task + 1) / tasks; ++u) {
      const int64_t s = u / mpanels, ip = u % mpanels, p0 = s * kslice;
      Scheme::pack_a_panel(A, m, mpanels, p0, std::min(kslice, k - p0), pa + s * slice_elems, ip);
    }
  });
  // 2. Chunks of columns, first come first served.
  parallel_tasks(chunks, threads, [&](int64_t c) {
    thread_local std::unique_ptr<float, decltype(&std::free)> bbuf(nullptr, &std::free), cbuf(nullptr, &std::free);
    thread_local size_t bcap = 0, ccap = 0;
    P* pb = reinterpret_cast<P*>(thread_buffer(bbuf, bcap, size_t(KC * CW)));
    float* sums = half_c ? thread_buffer(cbuf, ccap, size_t(m * CW)) : nullptr;
    const int64_t j0 = c * CW, nc = std::min(CW, n - j0), npanels = (nc + NR - 1) / NR;
    for (int64_t s = 0; s < slices; ++s) {
      const int64_t p0 = s * kslice, kc = std::min(kslice, k - p0), depth = Scheme::depth(kc);
      const float beta_pass = s > 0 ? 1.f : half_c ? 0.f : beta;
      // With few row panels (a batch of 100 in AVX-512: 8) each B micro-panel is read only that
      // often, so packing it costs more than it saves: a full-width panel of an untransposed B
      // is read in place (rows of NR floats, a stride apart). 1.09x faster on the tutorial's
      // gx2 = gy W2 on the Zen 5 machine (docs/performance.md); transposed B must be packed.
      const bool in_place = Scheme::kInPlaceB && !B.trans && mpanels <= 8 && kc >= 64;
      auto full = [&](int64_t jp) { return nc - jp * NR >= NR; };
      for (int64_t jp = 0; jp < npanels; ++jp)
        if (!in_place || !full(jp)) Scheme::pack_b_panel(B, n, j0, p0, kc, pb, jp);
      const P* a_slice = pa + s * slice_elems;
      for (int64_t ip = 0; ip < mpanels; ++ip) {
        const int64_t row = panel_row(ip, mpanels, m), rows = panel_row(ip + 1, mpanels, m) - row;
        const auto kernel = Scheme::kernel(rows);
        for (int64_t jp = 0; jp < npanels; ++jp) {
          const P* bp = pb + jp * NR * depth;
          int64_t ldb = NR;
          if constexpr (Scheme::kInPlaceB) {
            if (in_place && full(jp)) bp = B.p + p0 * B.ld + j0 + jp * NR, ldb = B.ld;
          }
          const int64_t cols = std::min(NR, nc - jp * NR);
          if constexpr (half_c) {
            float* tile = sums + row * CW + jp * NR;
            kernel(depth, a_slice + ip * MR * depth, bp, ldb, tile, CW, alpha, beta_pass, cols);
            if (s == slices - 1) round_tile(tile, CW, C + row * ldc + j0 + jp * NR, ldc, rows, cols, beta);
          } else {
            kernel(depth, a_slice + ip * MR * depth, bp, ldb, C + row * ldc + j0 + jp * NR, ldc, alpha, beta_pass, cols);
          }
        }
      }
    }
  });
}

#if defined(CHAINER_ISA_AVX512_BF16)
// bfloat16 x bfloat16 with AVX512_BF16's vdpbf16ps: in each 32-bit lane it adds to a float32
// accumulator the products of a pair of bfloat16 from each operand, so a panel holds pairs of k
// (a[i, k], a[i, k+1]) in 32 bits: A's broadcast, B's interleaved across the columns, an odd last
// k paired with zero. The tile is float32's (14 x 32, two accumulators per row) at half the
// iterations over k. The products are exact in float32 (8-bit significands); Intel's pseudocode
// adds the pair's odd product, then its even one, to the accumulator, each addition rounded to
// nearest even, denormal inputs and results flushed to zero.

// The bits of the pair (p[0], p[1] when SECOND, else 0), p[0] in the low half.
inline uint32_t pair_bits(const bfloat16* p, bool second) {
  return uint32_t(p[0].bits) | (second ? uint32_t(p[1].bits) << 16 : 0u);
}

// dst[q * width + r] = the pair of k = 2q, 2q+1 of row r of SRC (rows LD apart, along k) for
// r < rows (zero for rows <= r < width), q < ceil(kc / 2): pack_transposed with a pair as its
// element (A not transposed, B transposed).
void pack_pairs_along(const bfloat16* src, int64_t ld, int64_t rows, int64_t width, int64_t kc, uint32_t* dst) {
  const int64_t whole = kc / 2, depth = (kc + 1) / 2;
  float* d = reinterpret_cast<float*>(dst);
  for (int64_t r0 = 0; r0 < width; r0 += kLanes) {
    const int64_t group = std::min<int64_t>(kLanes, width - r0);
    const Mask store_mask = mask(lanes(0, group));
    int64_t q0 = 0;
    for (; q0 + kLanes <= whole; q0 += kLanes) {
      Vec r[kLanes];
      for (int64_t i = 0; i < kLanes; ++i)
        r[i] = r0 + i < rows ? _mm512_castsi512_ps(_mm512_loadu_si512(src + (r0 + i) * ld + 2 * q0)) : zero();
      transpose(r);
      for (int64_t q = 0; q < kLanes; ++q)
        store_panel_row(d + (q0 + q) * width + r0, store_mask, group, r[q], q0 + q == depth - 1);
    }
    for (; q0 < depth; ++q0)
      for (int64_t i = 0; i < group; ++i)
        dst[q0 * width + r0 + i] = r0 + i < rows ? pair_bits(src + (r0 + i) * ld + 2 * q0, 2 * q0 + 1 < kc) : 0u;
  }
}

// dst[q * width + c] = the pair (src[2q, c], src[2q+1, c]) of SRC's rows (LD apart, along the
// panel's width) for c < cols (zero for cols <= c < width): two rows' 16 bfloat16 widened to 32
// bits and the second shifted over the first (A transposed, B not transposed). The rows 16 ahead
// are prefetched, as pack_direct does.
void pack_pairs_across(const bfloat16* src, int64_t ld, int64_t cols, int64_t width, int64_t kc, uint32_t* dst) {
  constexpr int64_t kMaxGroups = NR / kLanes;
  const int64_t groups = (width + kLanes - 1) / kLanes, depth = (kc + 1) / 2;
  Mask load_mask[kMaxGroups], store_mask[kMaxGroups];
  for (int64_t g = 0; g < groups; ++g) {
    load_mask[g] = mask(lanes(0, cols - g * kLanes));
    store_mask[g] = mask(lanes(0, width - g * kLanes));
  }
  for (int64_t q = 0; q < depth; ++q) {
    const bfloat16* even = src + 2 * q * ld;
    const bool odd = 2 * q + 1 < kc;
    prefetch(even + 16 * ld);
    prefetch(even + 17 * ld);
    for (int64_t g = 0; g < groups; ++g) {
      const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(load_mask[g], even + g * kLanes));
      const __m512i hi = odd ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(load_mask[g], even + ld + g * kLanes))
                             : _mm512_setzero_si512();
      _mm512_mask_storeu_epi32(dst + q * width + g * kLanes, store_mask[g], _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
  }
}

// acc = the pairs of a_panel (DEPTH x MR, first R rows used) times b_panel (DEPTH x NR), then
// C = alpha * acc + beta * C on R rows x COLS, as micro_kernel (LDB unused: B is always packed).
template <int R>
void micro_kernel_bf16(int64_t depth, const uint32_t* a, const uint32_t* b, int64_t, float* c, int64_t ldc, float alpha,
                       float beta, int64_t cols) {
  Vec acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = zero();
#pragma GCC unroll 2
  for (int64_t q = 0; q < depth; ++q) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + q * NR), b1 = (__m512bh)_mm512_loadu_si512(b + q * NR + kLanes);
    prefetch(b + (q + 8) * NR);
#pragma GCC unroll 14
    for (int r = 0; r < R; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(int32_t(a[q * MR + r]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
    }
  }
  store_tile_masked<R>(acc, c, ldc, alpha, beta, cols);
}

template <size_t... R>
constexpr std::array<MicroKernelOf<uint32_t>, MR> make_bf16_kernels(std::index_sequence<R...>) {
  return {&micro_kernel_bf16<int(R) + 1>...};
}

struct Bf16PairPanels {
  using Elem = bfloat16;
  using Panel = uint32_t;
  static constexpr bool kInPlaceB = false;
  static int64_t depth(int64_t kc) { return (kc + 1) / 2; }
  static void pack_a_panel(const Operand<bfloat16>& A, int64_t m, int64_t panels, int64_t p0, int64_t kc, uint32_t* dst,
                           int64_t panel) {
    const int64_t row = panel_row(panel, panels, m), rows = panel_row(panel + 1, panels, m) - row;
    uint32_t* d = dst + panel * MR * depth(kc);
    if (A.trans) pack_pairs_across(A.p + p0 * A.ld + row, A.ld, rows, MR, kc, d);
    else pack_pairs_along(A.p + row * A.ld + p0, A.ld, rows, MR, kc, d);
  }
  static void pack_b_panel(const Operand<bfloat16>& B, int64_t n, int64_t j0, int64_t p0, int64_t kc, uint32_t* dst,
                           int64_t panel) {
    const int64_t col = j0 + panel * NR, cols = std::min(NR, n - col);
    uint32_t* d = dst + panel * NR * depth(kc);
    if (B.trans) pack_pairs_along(B.p + col * B.ld + p0, B.ld, cols, NR, kc, d);
    else pack_pairs_across(B.p + p0 * B.ld + col, B.ld, cols, NR, kc, d);
  }
  static MicroKernelOf<uint32_t> kernel(int64_t rows) {
    static constexpr auto kernels = make_bf16_kernels(std::make_index_sequence<MR>());
    return kernels[rows - 1];
  }
};
#endif
}  // namespace

// The implicit convolutions are avx512's in the avx512_bf16 family (core/cpu/kernels.h).
#if !defined(CHAINER_ISA_AVX512_BF16)
void sgemm_filled_b(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a, GemmPanelFill fill,
                    const void* context, float alpha, float beta, float* c, int64_t ldc, int64_t k_align) {
  CHAINER_ASSERT(k > 0, "sgemm_filled_b: an empty product (k = 0)");
  if (m == 0 || n == 0) return;
  const int64_t KC = blocking().kc, CW = blocking().cw;
  // Slices of equal depth, a multiple of 16 (the transposing packer's blocks) or of K_ALIGN.
  const int64_t align = k_align > 1 && k_align <= KC ? k_align : 16, most = align == 16 ? KC : KC / align * align;
  const int64_t fewest = (k + most - 1) / most, even = (k + fewest - 1) / fewest;
  const int64_t kslice = std::min(most, (even + align - 1) / align * align);
  const int64_t mpanels = (m + MR - 1) / MR, slices = (k + kslice - 1) / kslice;
  const int64_t slice_floats = mpanels * MR * kslice;
  thread_local std::unique_ptr<float, decltype(&std::free)> abuf(nullptr, &std::free), bbuf(nullptr, &std::free);
  thread_local size_t acap = 0, bcap = 0;
  float* pa = thread_buffer(abuf, acap, size_t(slices * slice_floats));
  float* pb = thread_buffer(bbuf, bcap, size_t(KC * CW));
  const Operand<float> A{a, lda, trans_a};
  for (int64_t s = 0; s < slices; ++s) {
    const int64_t p0 = s * kslice;
    for (int64_t ip = 0; ip < mpanels; ++ip) pack_a(A, m, mpanels, p0, std::min(kslice, k - p0), pa + s * slice_floats, ip);
  }
  for (int64_t j0 = 0; j0 < n; j0 += CW) {
    const int64_t nc = std::min(CW, n - j0), npanels = (nc + NR - 1) / NR;
    for (int64_t s = 0; s < slices; ++s) {
      const int64_t p0 = s * kslice, kc = std::min(kslice, k - p0);
      for (int64_t jp = 0; jp < npanels; ++jp) fill(context, p0, kc, j0 + jp * NR, pb + jp * NR * kc);
      const float* a_slice = pa + s * slice_floats;
      for (int64_t ip = 0; ip < mpanels; ++ip) {
        const int64_t row = panel_row(ip, mpanels, m);
        const MicroKernel kernel = kMicroKernels[panel_row(ip + 1, mpanels, m) - row - 1];
        for (int64_t jp = 0; jp < npanels; ++jp)
          kernel(kc, a_slice + ip * MR * kc, pb + jp * NR * kc, NR, c + row * ldc + j0 + jp * NR, ldc, alpha,
                 s == 0 ? beta : 1.f, std::min(NR, nc - jp * NR));
      }
    }
  }
}

void gemm_panel_from_rows(const float* rows, int64_t ld, int64_t count, int64_t kc, float* panel) {
  pack_transposed(rows, ld, count, NR, kc, panel);
}
#endif

std::string gemm_blocking() { return "KC " + std::to_string(blocking().kc) + ", CW " + std::to_string(blocking().cw); }
#else
std::string gemm_blocking() { return "Eigen's"; }
#endif

const char* gemm_backend() {
#if defined(CHAINER_ISA_PACKED)
  static const bool eigen = [] {
    const char* v = std::getenv("CHAINER_GEMM");
    return v && std::strcmp(v, "eigen") == 0;
  }();
#if defined(CHAINER_ISA_AVX512_BF16)
  return eigen ? "eigen" : "packed-avx512_bf16";
#elif defined(CHAINER_ISA_AVX512)
  return eigen ? "eigen" : "packed-avx512";
#else
  return eigen ? "eigen" : "packed-avx2";
#endif
#else
  return "eigen";
#endif
}

namespace {
// Whether this family's products take the packed GEMM (not Eigen's: the generic family, or
// CHAINER_GEMM=eigen).
bool packed_backend() { return gemm_backend()[0] == 'p'; }
}  // namespace

#if defined(CHAINER_ISA_PACKED)
namespace {
// A half product (T: float16 or bfloat16) in the packed GEMM, m, n and k > 0, into C of T
// (rounded once) or of float (TC: the sums themselves).
template <class T, class TC>
void packed_half_gemm(int64_t m, int64_t n, int64_t k, const Tensor& a, bool trans_a, const Tensor& b, bool trans_b,
                      float alpha, float beta, Tensor& c) {
  const Operand<T> A{a.data<T>(), a.size(1), trans_a}, B{b.data<T>(), b.size(1), trans_b};
  if (trans_b && !trans_a && n <= 16) {  // as float32's: the rows of C over the team
    small_n_gemm_nt(m, n, k, A.p, A.ld, B.p, B.ld, alpha, beta, c.data<TC>(), n);
    return;
  }
#if defined(CHAINER_ISA_AVX512_BF16)
  if constexpr (std::is_same_v<T, bfloat16>) {
    packed_gemm<Bf16PairPanels>(m, n, k, A, B, alpha, beta, c.data<TC>(), n);
    return;
  }
#endif
  packed_gemm<FloatPanels<T>>(m, n, k, A, B, alpha, beta, c.data<TC>(), n);
}

template <class T>
void packed_half_gemm(int64_t m, int64_t n, int64_t k, const Tensor& a, bool trans_a, const Tensor& b, bool trans_b,
                      float alpha, float beta, Tensor& c) {
  if (c.dtype() == DType::Float32) packed_half_gemm<T, float>(m, n, k, a, trans_a, b, trans_b, alpha, beta, c);
  else packed_half_gemm<T, T>(m, n, k, a, trans_a, b, trans_b, alpha, beta, c);
}
}  // namespace
#endif

void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c) {
#if defined(CHAINER_ISA_PACKED)
  // Half operands are widened while packed and a half C rounded once from float32 sums (a
  // float32 C gets the sums); every shape takes the packed path.
  if (is_half(a.dtype()) && packed_backend()) {
    const int64_t m = c.size(0), n = c.size(1), k = trans_a ? a.size(0) : a.size(1);
    if (m == 0 || n == 0) return;
    if (k > 0) {
      if (a.dtype() == DType::Float16)
        packed_half_gemm<float16>(m, n, k, a, trans_a, b, trans_b, float(alpha), float(beta), c);
      else
        packed_half_gemm<bfloat16>(m, n, k, a, trans_a, b, trans_b, float(alpha), float(beta), c);
      return;
    }
  }
#endif
  // Otherwise float32 products of the widened operands, rounded once.
  const auto in_float32 = [&](Tensor& c32) { gemm(widened(a), trans_a, widened(b), trans_b, alpha, beta, c32); };
  if (through_float32(c, in_float32, beta != 0)) return;
  if (is_half(a.dtype())) return in_float32(c);  // a float32 C of half operands
#if defined(CHAINER_ISA_PACKED)
  if (c.dtype() == DType::Float32 && packed_backend()) {
    const int64_t m = c.size(0), n = c.size(1), k = trans_a ? a.size(0) : a.size(1);
    if (m == 0 || n == 0) return;
    if (k == 0) {
      if (beta == 0) c.fill_(0.0);
      else affine(c, beta, 0.0, c);
      return;
    }
    const Operand<float> A{a.data<float>(), a.size(1), trans_a};
    if (trans_b && !trans_a && n <= 16)
      small_n_gemm_nt(m, n, k, A.p, A.ld, b.data<float>(), b.size(1), float(alpha), float(beta), c.data<float>(), n);
    else
      packed_gemm<FloatPanels<float>>(m, n, k, A, {b.data<float>(), b.size(1), trans_b}, float(alpha), float(beta),
                                      c.data<float>(), n);
    return;
  }
#endif
  eigen_gemm(a, trans_a, b, trans_b, alpha, beta, c);
}

// The products of a batch (the lowered convolutions: one per image and group). Enough groups to
// share among the team run one group per task, each product a single-threaded GEMM (nested
// parallel calls run inline): the products of a convolution are small (32 x 784 x 288 for the
// second layer of the Fashion-MNIST network) and split poorly over threads one at a time, while
// whole products keep each thread on its own operands. Fewer groups than threads run in order,
// each product on the whole team. Either way a group adds its products in order, so results do
// not depend on the thread count.
void batched_gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta,
                  Tensor& c) {
  const int64_t batch = std::max(a.size(0), b.size(0)), groups = c.size(0);
  // Half products go to gemm one per C when the packed GEMM runs; a group of several products
  // (summed into one C) and Eigen's family sum in float32 first, so that C is rounded once.
  if (groups < batch || !packed_backend()) {
    const auto in_float32 = [&](Tensor& c32) {
      batched_gemm(widened(a), trans_a, widened(b), trans_b, alpha, beta, c32);
    };
    if (through_float32(c, in_float32, beta != 0)) return;
    if (is_half(a.dtype())) return in_float32(c);  // a float32 C: each operand widened once, not per product
  }
  auto group = [&](int64_t g) {
    Tensor cg = c[g];
    for (int64_t i = g * batch / groups; i < (g + 1) * batch / groups; ++i)
      gemm(a[a.size(0) == 1 ? 0 : i], trans_a, b[b.size(0) == 1 ? 0 : i], trans_b, alpha,
           i == g * batch / groups ? beta : 1.0, cg);
  };
  if (groups >= num_threads()) {
    parallel_tasks(groups, num_threads(), group);
  } else {
    for (int64_t g = 0; g < groups; ++g) group(g);
  }
}

}  // namespace chainer::cpu::CHAINER_ISA
