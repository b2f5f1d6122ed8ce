// 2-D pooling over NCHW planes: max pooling and its gradient, the window sums of average pooling
// and their transpose. Each plane (one n, one c) is one task of the team, so the work splits
// evenly whatever N and C are; within a plane each output reads its window clipped to the image,
// which is where the padding goes (zero for the sums, never the maximum).
#include <algorithm>
#include <limits>
#include <vector>

#include "core/cpu/kernels.h"
#include "core/parallel.h"

namespace chainer::cpu {

namespace {
constexpr int64_t kGrain = 1 << 15;

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
}  // namespace

void max_pooling_2d(const Tensor& x, const Window2D& w, Tensor& out, Tensor& indexes) {
  CHAINER_DISPATCH_FLOATING(x.dtype(), "max_pooling_2d", [&] {
    using T = scalar_t;
    const Tensor xc = x.contiguous();
    const int64_t H = x.size(2), W = x.size(3), oh = out.size(2), ow = out.size(3);
    const T* px = xc.data<T>();
    T* py = out.data<T>();
    int32_t* pi = indexes.data<int32_t>();
    std::vector<Span> cols(static_cast<size_t>(ow));
    for (int64_t ox = 0; ox < ow; ++ox) cols[size_t(ox)] = window_span(ox, w.kw, w.sx, w.pw, W);
    parallel_for(planes(x), plane_grain(H * W), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T* plane = px + p * H * W;
        T* y = py + p * oh * ow;
        int32_t* idx = pi + p * oh * ow;
        for (int64_t oy = 0; oy < oh; ++oy) {
          const Span rows = window_span(oy, w.kh, w.sy, w.ph, H);
          for (int64_t ox = 0; ox < ow; ++ox) {
            const Span c = cols[size_t(ox)];
            T best = -std::numeric_limits<T>::infinity();
            int64_t at = -1;
            for (int64_t iy = rows.lo; iy < rows.hi; ++iy)
              for (int64_t ix = c.lo; ix < c.hi; ++ix) {
                const T v = plane[iy * W + ix];
                // The first maximum, or the first NaN (numpy's max and argmax).
                if (v > best || (v != v && best == best)) best = v, at = iy * W + ix;
              }
            y[oy * ow + ox] = best;
            idx[oy * ow + ox] = int32_t(at);
          }
        }
      }
    });
  });
}

void max_pooling_2d_grad(const Tensor& gy, const Tensor& indexes, const Window2D&, Tensor& gx) {
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

void window_sum_2d(const Tensor& x, const Window2D& w, double scale, Tensor& out) {
  CHAINER_DISPATCH_FLOATING(x.dtype(), "window_sum_2d", [&] {
    using T = scalar_t;
    const Tensor xc = x.contiguous();
    const int64_t H = x.size(2), W = x.size(3), oh = out.size(2), ow = out.size(3);
    const T* px = xc.data<T>();
    T* py = out.data<T>();
    const T k = T(scale);
    std::vector<Span> cols(static_cast<size_t>(ow));
    for (int64_t ox = 0; ox < ow; ++ox) cols[size_t(ox)] = window_span(ox, w.kw, w.sx, w.pw, W);
    parallel_for(planes(x), plane_grain(H * W), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T* plane = px + p * H * W;
        T* y = py + p * oh * ow;
        for (int64_t oy = 0; oy < oh; ++oy) {
          const Span rows = window_span(oy, w.kh, w.sy, w.ph, H);
          for (int64_t ox = 0; ox < ow; ++ox) {
            const Span c = cols[size_t(ox)];
            T sum = 0;
            for (int64_t iy = rows.lo; iy < rows.hi; ++iy)
              for (int64_t ix = c.lo; ix < c.hi; ++ix) sum += plane[iy * W + ix];
            y[oy * ow + ox] = sum * k;
          }
        }
      }
    });
  });
}

void window_spread_2d(const Tensor& y, const Window2D& w, double scale, Tensor& out) {
  CHAINER_DISPATCH_FLOATING(y.dtype(), "window_spread_2d", [&] {
    using T = scalar_t;
    const Tensor yc = y.contiguous();
    const int64_t H = out.size(2), W = out.size(3), oh = y.size(2), ow = y.size(3);
    const T* py = yc.data<T>();
    T* po = out.data<T>();
    const T k = T(scale);
    std::vector<Span> cols(static_cast<size_t>(W));
    for (int64_t ix = 0; ix < W; ++ix) cols[size_t(ix)] = covering_span(ix, w.kw, w.sx, w.pw, ow);
    // Each element gathers from the windows that hold it (no scatter, so no zeroing and no
    // order between planes' writes).
    parallel_for(planes(out), plane_grain(H * W), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T* g = py + p * oh * ow;
        T* plane = po + p * H * W;
        for (int64_t iy = 0; iy < H; ++iy) {
          const Span rows = covering_span(iy, w.kh, w.sy, w.ph, oh);
          for (int64_t ix = 0; ix < W; ++ix) {
            const Span c = cols[size_t(ix)];
            T sum = 0;
            for (int64_t oy = rows.lo; oy < rows.hi; ++oy)
              for (int64_t ox = c.lo; ox < c.hi; ++ox) sum += g[oy * ow + ox];
            plane[iy * W + ix] = sum * k;
          }
        }
      }
    });
  });
}

}  // namespace chainer::cpu
