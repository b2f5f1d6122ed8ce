// 2-D pooling over NCHW planes: max pooling and its gradient, the window sums of average pooling
// and their transpose. Each plane (one n, one c) is one task of the team, so the work splits
// evenly whatever N and C are; within a plane each output reads its window clipped to the image,
// which is where the padding goes (zero for the sums, never the maximum).
#include <algorithm>
#include <limits>
#include <vector>

#include "core/cpu/kernels.h"
#include "core/util/parallel.h"

namespace chainer::cpu::CHAINER_ISA {

namespace {
// The planes of an (N, C, H, W) array, and the planes per parallel chunk: about kGrain elements.
int64_t planes(const Tensor& t) { return t.size(0) * t.size(1); }
int64_t plane_grain(int64_t plane_size) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(plane_size, 1)); }

// The input rows [lo, hi) of output row O's window along an axis of SIZE: start o s - p, clipped.
struct Span {
  int64_t lo, hi;
};
Span window_span(int64_t o, int64_t k, int64_t s, int64_t p, int64_t size) {
  const int64_t start = o * s - p;
  return {std::max<int64_t>(start, 0), std::min(start + k, size)};
}

// The output rows [lo, hi) whose windows hold input row I along an axis: o s - p <= i < o s - p + k.
Span covering_span(int64_t i, int64_t k, int64_t s, int64_t p, int64_t out_size) {
  const int64_t padded = i + p;
  const int64_t lo = padded < k ? 0 : (padded - k) / s + 1;
  return {lo, std::min(out_size, padded / s + 1)};
}

// The outputs [lo, hi) along an axis whose windows lie wholly inside the image.
Span interior(int64_t k, int64_t s, int64_t p, int64_t size, int64_t out_size) {
  const int64_t lo = std::min(out_size, (p + s - 1) / s);  // o s - p >= 0
  const int64_t hi = size + p - k < 0 ? 0 : std::min(out_size, (size + p - k) / s + 1);  // o s - p + k <= size
  return {lo, std::max(lo, hi)};
}

// The candidate V at OFFSET replaces the running maximum BEST (at AT) when larger, or when it is
// the first NaN: numpy's max and argmax. Selects, not branches (hence | and & rather than || and
// &&): the outcome is data-dependent, and the mispredicted branches made max pooling 3x slower.
template <class T>
inline void consider(T v, int32_t offset, T& best, int32_t& at) {
  const bool take = (v > best) | ((v != v) & (best == best));
  best = take ? v : best;
  at = take ? offset : at;
}

// One output row of max pooling: the outputs INSIDE (whole windows) together, one window element
// at a time across the row, which vectorizes (SX: the column stride, 0 for any); the border
// outputs one by one. 256-bit vectors: the reference network's rows are 14 outputs, which 512-bit
// ones would leave to the scalar remainder (2x slower, measured on Zen 5).
template <class T, int SX>
__attribute__((target("prefer-vector-width=256"))) void max_pool_row(const T* plane, int64_t W, const Window2D& w,
                                                                     Span rows, Span inside,
                                                                     const std::vector<Span>& cols, int64_t ow, T* y,
                                                                     int32_t* idx) {
  const int64_t sx = SX ? SX : w.sx;
  for (int64_t ox = inside.lo; ox < inside.hi; ++ox) y[ox] = -std::numeric_limits<T>::infinity(), idx[ox] = -1;
  for (int64_t iy = rows.lo; iy < rows.hi; ++iy)
    for (int64_t kx = 0; kx < w.kw; ++kx) {
      const int64_t first = iy * W + kx - w.pw;  // the offset of this element of window 0
      const T* src = plane + first;
      for (int64_t ox = inside.lo; ox < inside.hi; ++ox)
        consider(src[ox * sx], int32_t(first + ox * sx), y[ox], idx[ox]);
    }
  for (int64_t ox = 0; ox < ow; ++ox) {
    if (ox == inside.lo) ox = std::max(ox, inside.hi);
    if (ox >= ow) break;
    const Span c = cols[size_t(ox)];
    T best = -std::numeric_limits<T>::infinity();
    int32_t at = -1;
    for (int64_t iy = rows.lo; iy < rows.hi; ++iy)
      for (int64_t ix = c.lo; ix < c.hi; ++ix) consider(plane[iy * W + ix], int32_t(iy * W + ix), best, at);
    y[ox] = best, idx[ox] = at;
  }
}
}  // namespace

void max_pooling_2d(const Tensor& x, const Window2D& w, Tensor& out, Tensor& indexes) {
  if (through_float32(out, [&](Tensor& out32) { max_pooling_2d(widened(x), w, out32, indexes); })) return;
  CHAINER_DISPATCH_FLOATING(x.dtype(), "max_pooling_2d", [&] {
    using T = scalar_t;
    const Tensor xc = x.contiguous();
    const int64_t H = x.size(2), W = x.size(3), oh = out.size(2), ow = out.size(3);
    const T* px = xc.data<T>();
    T* py = out.data<T>();
    int32_t* pi = indexes.data<int32_t>();
    std::vector<Span> cols(static_cast<size_t>(ow));
    for (int64_t ox = 0; ox < ow; ++ox) cols[size_t(ox)] = window_span(ox, w.kw, w.sx, w.pw, W);
    const Span inside = interior(w.kw, w.sx, w.pw, W, ow);
    const auto row = w.sx == 1 ? max_pool_row<T, 1> : w.sx == 2 ? max_pool_row<T, 2> : max_pool_row<T, 0>;
    parallel_for(planes(x), plane_grain(H * W), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t oy = 0; oy < oh; ++oy)
          row(px + p * H * W, W, w, window_span(oy, w.kh, w.sy, w.ph, H), inside, cols, ow,
              py + (p * oh + oy) * ow, pi + (p * oh + oy) * ow);
    });
  });
}

void max_pooling_2d_grad(const Tensor& gy, const Tensor& indexes, const Window2D& w, Tensor& gx) {
  if (through_float32(gx, [&](Tensor& gx32) { max_pooling_2d_grad(widened(gy), indexes, w, gx32); })) return;
  CHAINER_DISPATCH_FLOATING(gx.dtype(), "max_pooling_2d_grad", [&] {
    using T = scalar_t;
    const Tensor gc = gy.contiguous();
    const int64_t hw = gx.size(2) * gx.size(3), ohw = gy.size(2) * gy.size(3);
    const T* pg = gc.data<T>();
    const int32_t* pi = indexes.data<int32_t>();
    T* po = gx.data<T>();
    // A plane's outputs in order, each adding into its maximum: overlapping windows add in the
    // same order every run.
    parallel_for(planes(gx), plane_grain(hw), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        T* plane = po + p * hw;
        std::fill(plane, plane + hw, T(0));
        const T* g = pg + p * ohw;
        const int32_t* idx = pi + p * ohw;
        for (int64_t o = 0; o < ohw; ++o)
          if (idx[o] >= 0) plane[idx[o]] += g[o];
      }
    });
  });
}

// DST (planes, dh, dw) = K times the sum of SRC (planes, sh, sw) over the rectangle
// ROWS_OF(r) x COLS_OF(c) of each destination element (r, c): the window sums and their
// transpose, which gathers from the windows that hold each element (no scatter, so no zeroing
// and no order between planes' writes).
template <class T, class RowsOf, class ColsOf>
void sum_over_spans(const T* src, int64_t sh, int64_t sw, T* dst, int64_t dh, int64_t dw, int64_t nplanes, T k,
                    RowsOf&& rows_of, ColsOf&& cols_of) {
  std::vector<Span> cols(static_cast<size_t>(dw));
  for (int64_t c = 0; c < dw; ++c) cols[size_t(c)] = cols_of(c);
  parallel_for(nplanes, plane_grain(std::max(sh * sw, dh * dw)), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const T* plane = src + p * sh * sw;
      T* out = dst + p * dh * dw;
      for (int64_t r = 0; r < dh; ++r) {
        const Span rows = rows_of(r);
        for (int64_t c = 0; c < dw; ++c) {
          const Span cs = cols[size_t(c)];
          T sum = 0;
          for (int64_t iy = rows.lo; iy < rows.hi; ++iy)
            for (int64_t ix = cs.lo; ix < cs.hi; ++ix) sum += plane[iy * sw + ix];
          out[r * dw + c] = sum * k;
        }
      }
    }
  });
}

void window_sum_2d(const Tensor& x, const Window2D& w, double scale, Tensor& out) {
  if (through_float32(out, [&](Tensor& out32) { window_sum_2d(widened(x), w, scale, out32); })) return;
  CHAINER_DISPATCH_FLOATING(x.dtype(), "window_sum_2d", [&] {
    using T = scalar_t;
    const Tensor xc = x.contiguous();
    const int64_t H = x.size(2), W = x.size(3);
    sum_over_spans(xc.data<T>(), H, W, out.data<T>(), out.size(2), out.size(3), planes(x), T(scale),
                   [&](int64_t oy) { return window_span(oy, w.kh, w.sy, w.ph, H); },
                   [&](int64_t ox) { return window_span(ox, w.kw, w.sx, w.pw, W); });
  });
}

void window_spread_2d(const Tensor& y, const Window2D& w, double scale, Tensor& out) {
  if (through_float32(out, [&](Tensor& out32) { window_spread_2d(widened(y), w, scale, out32); })) return;
  CHAINER_DISPATCH_FLOATING(y.dtype(), "window_spread_2d", [&] {
    using T = scalar_t;
    const Tensor yc = y.contiguous();
    const int64_t oh = y.size(2), ow = y.size(3);
    sum_over_spans(yc.data<T>(), oh, ow, out.data<T>(), out.size(2), out.size(3), planes(out), T(scale),
                   [&](int64_t iy) { return covering_span(iy, w.kh, w.sy, w.ph, oh); },
                   [&](int64_t ix) { return covering_span(ix, w.kw, w.sx, w.pw, ow); });
  });
}

}  // namespace chainer::cpu::CHAINER_ISA
