// The per-channel kernels of batch normalization (sums over a channel, one affine pass) and local
// response normalization. The channel sums are float64 and split into blocks whose edges depend
// only on the shape, added in block order: the result is the same for any thread count.
#if defined(CHAINER_ISA_AVX2) || defined(CHAINER_ISA_AVX512)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/cpu/kernels.h"
#include "core/util/parallel.h"

namespace chainer::cpu::CHAINER_ISA {

namespace {
constexpr int64_t kBlock = 1 << 14;  // elements per block of the channel sums
constexpr int kLanes = 16;           // independent accumulators: the sums vectorize without reassociation

#if defined(CHAINER_ISA_AVX512)
// 8 floats as doubles (the zero-masking form: GCC 12 warns about the plain one's undefined source).
inline __m512d widen(const float* p) { return _mm512_maskz_cvtps_pd(__mmask8(0xff), _mm256_loadu_ps(p)); }
#elif defined(CHAINER_ISA_AVX2)
inline __m256d widen(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
#endif

// [sum a, sum a (b - m)] over N contiguous elements, in float64 lanes then added in lane order.
// Without B, b is a and m is 0: [sum a, sum a^2].
template <class T, bool HAS_B>
void row_sums(const T* a, const T* b, double m, int64_t n, double& s1, double& s2) {
  double l1[kLanes] = {}, l2[kLanes] = {};
  int64_t i = 0;
#if defined(CHAINER_ISA_AVX512)
  if constexpr (std::is_same_v<T, float>) {
    // GCC leaves the generic loop's float-to-double conversions scalar (4x slower, measured):
    // the same lanes, explicitly. Lane j of a vector pair holds elements i + j, as below.
    static_assert(kLanes == 16);
    __m512d s1lo = _mm512_setzero_pd(), s1hi = s1lo, s2lo = s1lo, s2hi = s1lo;
    const __m512d vm = _mm512_set1_pd(m);
    for (; i + kLanes <= n; i += kLanes) {
      const __m512d alo = widen(a + i), ahi = widen(a + i + 8);
      s1lo = _mm512_add_pd(s1lo, alo), s1hi = _mm512_add_pd(s1hi, ahi);
      if constexpr (HAS_B) {
        const __m512d blo = widen(b + i), bhi = widen(b + i + 8);
        s2lo = _mm512_add_pd(s2lo, _mm512_mul_pd(alo, _mm512_sub_pd(blo, vm)));
        s2hi = _mm512_add_pd(s2hi, _mm512_mul_pd(ahi, _mm512_sub_pd(bhi, vm)));
      } else {
        s2lo = _mm512_add_pd(s2lo, _mm512_mul_pd(alo, alo));
        s2hi = _mm512_add_pd(s2hi, _mm512_mul_pd(ahi, ahi));
      }
    }
    _mm512_storeu_pd(l1, s1lo), _mm512_storeu_pd(l1 + 8, s1hi);
    _mm512_storeu_pd(l2, s2lo), _mm512_storeu_pd(l2 + 8, s2hi);
  }
#elif defined(CHAINER_ISA_AVX2)
  if constexpr (std::is_same_v<T, float>) {
    // The same 16 lanes in four vectors of 4 doubles (GCC leaves the conversions scalar here too).
    static_assert(kLanes == 16);
    __m256d s1[4], s2[4];
    for (int q = 0; q < 4; ++q) s1[q] = s2[q] = _mm256_setzero_pd();
    const __m256d vm = _mm256_set1_pd(m);
    for (; i + kLanes <= n; i += kLanes)
      for (int q = 0; q < 4; ++q) {
        const __m256d av = widen(a + i + 4 * q);
        s1[q] = _mm256_add_pd(s1[q], av);
        if constexpr (HAS_B) s2[q] = _mm256_add_pd(s2[q], _mm256_mul_pd(av, _mm256_sub_pd(widen(b + i + 4 * q), vm)));
        else s2[q] = _mm256_add_pd(s2[q], _mm256_mul_pd(av, av));
      }
    for (int q = 0; q < 4; ++q) _mm256_storeu_pd(l1 + 4 * q, s1[q]), _mm256_storeu_pd(l2 + 4 * q, s2[q]);
  }
#endif
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const double av = double(a[i + j]);
      l1[j] += av;
      l2[j] += HAS_B ? av * (double(b[i + j]) - m) : av * av;
    }
  for (int j = 0; i < n; ++i, ++j) {
    const double av = double(a[i]);
    l1[j] += av;
    l2[j] += HAS_B ? av * (double(b[i]) - m) : av * av;
  }
  for (int j = 0; j < kLanes; ++j) s1 += l1[j], s2 += l2[j];
}

template <class T, bool HAS_B>
void channel_sums_impl(const T* a, const T* b, const T* center, const ChannelView& v, double* out) {
  const int64_t P = v.outer, C = v.channels, Q = v.inner;
  std::vector<double> partial;
  if (Q == 1) {
    // (P, C) rows: blocks of rows, each summing every channel (vectorized along the row).
    const int64_t rows = std::max<int64_t>(1, kBlock / std::max<int64_t>(C, 1)), blocks = (P + rows - 1) / rows;
    partial.assign(size_t(blocks * 2 * C), 0.0);
    parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk) {
        double* s1 = partial.data() + blk * 2 * C;
        double* s2 = s1 + C;
        for (int64_t p = blk * rows; p < std::min(P, (blk + 1) * rows); ++p)
          for (int64_t c = 0; c < C; ++c) {
            const double av = double(a[p * C + c]);
            s1[c] += av;
            s2[c] += HAS_B ? av * (double(b[p * C + c]) - (center ? double(center[c]) : 0.0)) : av * av;
          }
      }
    });
    std::fill(out, out + 2 * C, 0.0);
    for (int64_t blk = 0; blk < blocks; ++blk)
      for (int64_t j = 0; j < 2 * C; ++j) out[j] += partial[size_t(blk * 2 * C + j)];
    return;
  }
  // (P, C, Q): a task per channel and block of P, each summing contiguous rows of Q.
  const int64_t rows = std::max<int64_t>(1, kBlock / Q), blocks = (P + rows - 1) / rows;
  partial.assign(size_t(C * blocks * 2), 0.0);
  parallel_for(C * blocks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t c = task / blocks, blk = task % blocks;
      const double m = center ? double(center[c]) : 0.0;
      double s1 = 0, s2 = 0;
      for (int64_t p = blk * rows; p < std::min(P, (blk + 1) * rows); ++p) {
        const int64_t at = (p * C + c) * Q;
        row_sums<T, HAS_B>(a + at, HAS_B ? b + at : nullptr, m, Q, s1, s2);
      }
      partial[size_t(2 * task)] = s1, partial[size_t(2 * task + 1)] = s2;
    }
  });
  for (int64_t c = 0; c < C; ++c) {
    double s1 = 0, s2 = 0;
    for (int64_t blk = 0; blk < blocks; ++blk)
      s1 += partial[size_t(2 * (c * blocks + blk))], s2 += partial[size_t(2 * (c * blocks + blk) + 1)];
    out[c] = s1, out[C + c] = s2;
  }
}

// out = s u + t (v - m) + d along a run of N elements of one channel, or (PER_ELEMENT) along a
// (P, C) row, where the coefficients advance with the element.
template <class T, bool HAS_U, bool HAS_V, bool PER_ELEMENT>
void affine_run(const T* u, const T* v, const T* s, const T* t, const T* m, const T* d, int64_t n, T* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = PER_ELEMENT ? i : 0;
    T r = d[c];
    if constexpr (HAS_U) r += s[c] * u[i];
    if constexpr (HAS_V) r += t[c] * (v[i] - m[c]);
    out[i] = r;
  }
}

template <class T, bool HAS_U, bool HAS_V>
void channel_affine_impl(const ChannelAffine& args, const ChannelView& view, Tensor& out) {
  const T* u = HAS_U ? args.u.data<T>() : nullptr;
  const T* v = HAS_V ? args.v.data<T>() : nullptr;
  const T* s = HAS_U ? args.s.data<T>() : nullptr;
  const T* t = HAS_V ? args.t.data<T>() : nullptr;
  const T* m = HAS_V ? args.m.data<T>() : nullptr;
  const T* d = args.d.data<T>();
  T* o = out.data<T>();
  const int64_t C = view.channels, Q = view.inner;
  if (Q == 1) {  // (P, C): along each row the coefficients change with the element
    parallel_for(view.outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(C, 1)), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p)
        affine_run<T, HAS_U, HAS_V, true>(u + (HAS_U ? p * C : 0), v + (HAS_V ? p * C : 0), s, t, m, d, C, o + p * C);
    });
    return;
  }
  // (P, C, Q): rows of Q with one channel's coefficients.
  parallel_for(view.outer * C, std::max<int64_t>(1, kGrain / Q), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r % C;
      affine_run<T, HAS_U, HAS_V, false>(u + (HAS_U ? r * Q : 0), v + (HAS_V ? r * Q : 0), HAS_U ? s + c : nullptr,
                                         HAS_V ? t + c : nullptr, HAS_V ? m + c : nullptr, d + c, Q, o + r * Q);
    }
  });
}
}  // namespace

void channel_sums(const Tensor& a, const Tensor& b, const Tensor& center, const ChannelView& view, Tensor& sums) {
  if (is_half(a.dtype())) return channel_sums(widened(a), widened(b), widened(center), view, sums);
  CHAINER_DISPATCH_FLOATING(a.dtype(), "channel_sums", [&] {
    using T = scalar_t;
    const T* pc = center.defined() ? center.data<T>() : nullptr;
    if (b.defined()) channel_sums_impl<T, true>(a.data<T>(), b.data<T>(), pc, view, sums.data<double>());
    else channel_sums_impl<T, false>(a.data<T>(), nullptr, pc, view, sums.data<double>());
  });
}

void channel_affine(const ChannelAffine& args, const ChannelView& view, Tensor& out) {
  const auto in_float32 = [&](Tensor& out32) {
    channel_affine({widened(args.u), widened(args.s), widened(args.v), widened(args.t), widened(args.m),
                    widened(args.d)},
                   view, out32);
  };
  if (through_float32(out, in_float32)) return;
  CHAINER_DISPATCH_FLOATING(out.dtype(), "channel_affine", [&] {
    using T = scalar_t;
    const bool has_u = args.u.defined(), has_v = args.v.defined();
    if (has_u && has_v) channel_affine_impl<T, true, true>(args, view, out);
    else if (has_u) channel_affine_impl<T, true, false>(args, view, out);
    else if (has_v) channel_affine_impl<T, false, true>(args, view, out);
    else channel_affine_impl<T, false, false>(args, view, out);
  });
}

namespace {
// X (N, C, S) in tasks of one n and a chunk of S: the channel window sums need every channel.
constexpr int64_t kLrnChunk = 256;

template <class F>
void for_lrn_chunks(int64_t N, int64_t C, int64_t S, F&& f) {
  const int64_t chunks = (S + kLrnChunk - 1) / kLrnChunk;
  parallel_for(N * chunks, std::max<int64_t>(1, kGrain / (C * std::min(S, kLrnChunk))), [&](int64_t t0, int64_t t1) {
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t n = task / chunks, s0 = (task % chunks) * kLrnChunk;
      f(n, s0, std::min(S, s0 + kLrnChunk) - s0);
    }
  });
}
}  // namespace

void local_response_normalization(const Tensor& x, int64_t n, double k, double alpha, double beta, Tensor& out,
                                  Tensor& unit_scale) {
  CHAINER_DISPATCH_FLOATING(x.dtype(), "local_response_normalization", [&] {
    using T = scalar_t;
    const Tensor xc = x.contiguous();
    const int64_t N = x.size(0), C = x.size(1), S = N * C > 0 ? x.numel() / (N * C) : 0, half = n / 2;
    const T* px = xc.data<T>();
    T* py = out.data<T>();
    T* pu = unit_scale.data<T>();
    const T tk = T(k), ta = T(alpha), tb = T(beta);
    for_lrn_chunks(N, C, S, [&](int64_t b, int64_t s0, int64_t len) {
      std::vector<T> sum(static_cast<size_t>(len));
      for (int64_t c = 0; c < C; ++c) {
        std::fill(sum.begin(), sum.end(), T(0));
        for (int64_t j = std::max<int64_t>(0, c - half); j <= std::min(C - 1, c + half); ++j) {
          const T* xj = px + (b * C + j) * S + s0;
          for (int64_t i = 0; i < len; ++i) sum[size_t(i)] += xj[i] * xj[i];
        }
        const int64_t at = (b * C + c) * S + s0;
        for (int64_t i = 0; i < len; ++i) {
          const T us = tk + ta * sum[size_t(i)];
          pu[at + i] = us;
          py[at + i] = px[at + i] * std::pow(us, -tb);
        }
      }
    });
  });
}

void local_response_normalization_grad(const Tensor& x, const Tensor& y, const Tensor& unit_scale, const Tensor& gy,
                                       int64_t n, double alpha, double beta, Tensor& gx) {
  CHAINER_DISPATCH_FLOATING(x.dtype(), "local_response_normalization_grad", [&] {
    using T = scalar_t;
    const Tensor xc = x.contiguous(), yc = y.contiguous(), uc = unit_scale.contiguous(), gc = gy.contiguous();
    const int64_t N = x.size(0), C = x.size(1), S = N * C > 0 ? x.numel() / (N * C) : 0, half = n / 2;
    const T *px = xc.data<T>(), *py = yc.data<T>(), *pu = uc.data<T>(), *pg = gc.data<T>();
    T* po = gx.data<T>();
    const T tb = T(beta), coeff = T(2 * alpha * beta);
    for_lrn_chunks(N, C, S, [&](int64_t b, int64_t s0, int64_t len) {
      // summand = y gy / unit_scale for every channel of the chunk, then its window sums.
      std::vector<T> summand(static_cast<size_t>(C * len)), sum(static_cast<size_t>(len));
      for (int64_t c = 0; c < C; ++c) {
        const int64_t at = (b * C + c) * S + s0;
        for (int64_t i = 0; i < len; ++i) summand[size_t(c * len + i)] = py[at + i] * pg[at + i] / pu[at + i];
      }
      for (int64_t c = 0; c < C; ++c) {
        std::fill(sum.begin(), sum.end(), T(0));
        for (int64_t j = std::max<int64_t>(0, c - half); j <= std::min(C - 1, c + half); ++j)
          for (int64_t i = 0; i < len; ++i) sum[size_t(i)] += summand[size_t(j * len + i)];
        const int64_t at = (b * C + c) * S + s0;
        for (int64_t i = 0; i < len; ++i)
          po[at + i] = pg[at + i] * std::pow(pu[at + i], -tb) - coeff * px[at + i] * sum[size_t(i)];
      }
    });
  });
}

}  // namespace chainer::cpu::CHAINER_ISA
