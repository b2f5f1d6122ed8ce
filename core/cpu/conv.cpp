// The CPU's three convolution entries and the kernels they choose among. Maps smaller than a
// GEMM panel make one product over the whole batch (im2row below); other float32 convolutions
// are implicit GEMMs (conv_implicit.cpp); the rest goes through the lowering of
// core/ops/conv_lowering.cpp over im2col and its adjoint col2im (the products through
// batched_gemm). im2col and col2im run one task per image channel, each writing only its own
// rows of COL (or its own plane of X), so no two threads touch one element and the sums of col2im
// run in a fixed order. Depthwise convolutions, whose products would have one row, are computed
// directly: each window tap adds a weighted shifted copy of the input plane to the output plane
// (held in L1).
#include <algorithm>
#include <cstring>

#include "core/ops/conv_lowering.h"
#include "core/cpu/kernels.h"
#include "core/util/parallel.h"

namespace chainer::cpu::CHAINER_ISA {

namespace {
// The output columns [lo, hi) whose input column `ox * s - p + off` lies in [0, w).
inline void valid_range(int64_t out, int64_t w, int64_t s, int64_t p, int64_t off, int64_t& lo, int64_t& hi) {
  // ox * s >= p - off and ox * s <= w - 1 + p - off.
  const int64_t first = p - off, last = w - 1 + p - off;
  lo = first <= 0 ? 0 : (first + s - 1) / s;
  hi = last < 0 ? 0 : std::min(out, last / s + 1);
  if (hi < lo) hi = lo;
}

// FN(tap, oy, base, lo, hi) for every tap (i, j) of a depthwise window, tap = i * kw + j, and
// every output row OY whose tap row lies in the H x W image: the outputs [lo, hi) of that row
// meet the input pixels base + ox * sx.
template <class Fn>
void for_each_tap_row(const Conv2dGeometry& g, int64_t h, int64_t w, Fn&& fn) {
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      int64_t lo, hi;
      valid_range(g.out_w, w, g.sx, g.pw, j * g.dx, lo, hi);
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        const int64_t iy = oy * g.sy - g.ph + i * g.dy;
        if (iy < 0 || iy >= h) continue;
        fn(i * g.kw + j, oy, iy * w - g.pw + j * g.dx, lo, hi);
      }
    }
}

// fn(p) for every channel plane p of PLANES, in tasks of about 64K elements of COL each (a few
// per thread at most), split evenly.
template <class Fn>
void for_planes(int64_t planes, const Conv2dGeometry& g, Fn&& fn) {
  const int64_t per_plane = std::max<int64_t>(1, g.kh * g.kw * g.out_h * g.out_w);
  const int64_t tasks = std::clamp<int64_t>(planes * per_plane >> 16, 1, std::min<int64_t>(planes, 4 * num_threads()));
  parallel_tasks(tasks, num_threads(), [&](int64_t t) {
    for (int64_t p = planes * t / tasks; p < planes * (t + 1) / tasks; ++p) fn(p);
  });
}

template <class T>
void im2col_plane(const T* x, int64_t h, int64_t w, const Conv2dGeometry& g, T* col) {
  const int64_t ow = g.out_w, cols = g.out_h * ow;
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      T* row = col + (i * g.kw + j) * cols;
      int64_t lo, hi;
      valid_range(ow, w, g.sx, g.pw, j * g.dx, lo, hi);
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        T* out = row + oy * ow;
        const int64_t iy = oy * g.sy - g.ph + i * g.dy;
        if (iy < 0 || iy >= h || lo == hi) {
          std::fill(out, out + ow, T(0));
          continue;
        }
        const int64_t base = iy * w - g.pw + j * g.dx;  // x[base + ox * sx]: pixel (iy, ox * sx - pw + j * dx)
        std::fill(out, out + lo, T(0));
        if (g.sx == 1) std::memcpy(out + lo, x + base + lo, size_t(hi - lo) * sizeof(T));
        else
          for (int64_t ox = lo; ox < hi; ++ox) out[ox] = x[base + ox * g.sx];
        std::fill(out + hi, out + ow, T(0));
      }
    }
}

template <class T>
void col2im_plane(const T* col, int64_t h, int64_t w, const Conv2dGeometry& g, T* x) {
  const int64_t ow = g.out_w, cols = g.out_h * ow;
  std::fill(x, x + h * w, T(0));
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      const T* row = col + (i * g.kw + j) * cols;
      int64_t lo, hi;
      valid_range(ow, w, g.sx, g.pw, j * g.dx, lo, hi);
      if (lo == hi) continue;
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        const int64_t iy = oy * g.sy - g.ph + i * g.dy;
        if (iy < 0 || iy >= h) continue;
        const T* in = row + oy * ow;
        const int64_t base = iy * w - g.pw + j * g.dx;
        for (int64_t ox = lo; ox < hi; ++ox) x[base + ox * g.sx] += in[ox];
      }
    }
}
}  // namespace

void im2col(const Tensor& x, const Conv2dGeometry& g, Tensor& col) {
  CHAINER_DISPATCH_FLOATING_AND_HALF(x.dtype(), "im2col", [&] {
    using T = scalar_t;
    const int64_t planes = x.size(0) * x.size(1), h = x.size(2), w = x.size(3);
    const T* px = x.data<T>();
    T* pc = col.data<T>();
    const int64_t per_plane = g.kh * g.kw * g.out_h * g.out_w;
    for_planes(planes, g, [&](int64_t p) { im2col_plane(px + p * h * w, h, w, g, pc + p * per_plane); });
  });
}

void col2im(const Tensor& col, const Conv2dGeometry& g, Tensor& x) {
  CHAINER_DISPATCH_FLOATING(x.dtype(), "col2im", [&] {
    using T = scalar_t;
    const int64_t planes = x.size(0) * x.size(1), h = x.size(2), w = x.size(3);
    const Tensor cc = col.contiguous();
    const T* pc = cc.data<T>();
    T* px = x.data<T>();
    const int64_t per_plane = g.kh * g.kw * g.out_h * g.out_w;
    for_planes(planes, g, [&](int64_t p) { col2im_plane(pc + p * per_plane, h, w, g, px + p * h * w); });
  });
}

namespace {
// fn(p) for every P in [0, COUNT), in about 4 tasks per thread.
template <class Fn>
void for_each_index(int64_t count, Fn&& fn) {
  const int64_t tasks = std::min<int64_t>(count, 4 * num_threads());
  parallel_tasks(tasks, num_threads(), [&](int64_t t) {
    for (int64_t p = count * t / tasks; p < count * (t + 1) / tasks; ++p) fn(p);
  });
}
}  // namespace

void depthwise_conv(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y) {
  CHAINER_DISPATCH_FLOATING(x.dtype(), "depthwise_conv", [&] {
    using T = scalar_t;
    const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3), c_out = y.size(1), m = c_out / c;
    const int64_t taps = g.kh * g.kw, plane = g.out_h * g.out_w;
    const T* px = x.data<T>();
    const T* pw = W.data<T>();
    const Tensor bc = b.defined() ? b.contiguous() : Tensor();
    const T* pb = bc.defined() ? bc.data<T>() : nullptr;
    T* py = y.data<T>();
    for_each_index(n * c_out, [&](int64_t p) {
      const int64_t o = p % c_out;
      const T* in = px + (p / c_out * c + o / m) * h * w;
      T* out = py + p * plane;
      std::fill(out, out + plane, pb ? pb[o] : T(0));
      for_each_tap_row(g, h, w, [&](int64_t tap, int64_t oy, int64_t base, int64_t lo, int64_t hi) {
        const T wt = pw[o * taps + tap];
        T* row = out + oy * g.out_w;
        if (g.sx == 1)
          for (int64_t ox = lo; ox < hi; ++ox) row[ox] += wt * in[base + ox];
        else
          for (int64_t ox = lo; ox < hi; ++ox) row[ox] += wt * in[base + ox * g.sx];
      });
    });
  });
}

void depthwise_conv_grad_data(const Tensor& gy, const Tensor& W, const Conv2dGeometry& g, Tensor& gx) {
  CHAINER_DISPATCH_FLOATING(gx.dtype(), "depthwise_conv_grad_data", [&] {
    using T = scalar_t;
    const int64_t n = gx.size(0), c = gx.size(1), h = gx.size(2), w = gx.size(3), c_out = gy.size(1), m = c_out / c;
    const int64_t taps = g.kh * g.kw, plane = g.out_h * g.out_w;
    const T* pg = gy.data<T>();
    const T* pw = W.data<T>();
    T* px = gx.data<T>();
    for_each_index(n * c, [&](int64_t p) {
      const int64_t ch = p % c;
      T* out = px + p * h * w;
      std::fill(out, out + h * w, T(0));
      for (int64_t k = 0; k < m; ++k) {
        const int64_t o = ch * m + k;
        const T* in = pg + (p / c * c_out + o) * plane;
        for_each_tap_row(g, h, w, [&](int64_t tap, int64_t oy, int64_t base, int64_t lo, int64_t hi) {
          const T wt = pw[o * taps + tap];
          const T* row = in + oy * g.out_w;
          for (int64_t ox = lo; ox < hi; ++ox) out[base + ox * g.sx] += wt * row[ox];
        });
      }
    });
  });
}

void depthwise_conv_grad_filter(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW) {
  CHAINER_DISPATCH_FLOATING(x.dtype(), "depthwise_conv_grad_filter", [&] {
    using T = scalar_t;
    const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3), c_out = gy.size(1), m = c_out / c;
    const int64_t taps = g.kh * g.kw, plane = g.out_h * g.out_w;
    const T* px = x.data<T>();
    const T* pg = gy.data<T>();
    T* pw = gW.data<T>();
    // One task per output channel: its kh * kw sums over the batch, in order.
    for_each_index(c_out, [&](int64_t o) {
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) {
          int64_t lo, hi;
          valid_range(g.out_w, w, g.sx, g.pw, j * g.dx, lo, hi);
          // 16 running sums, one per lane, so that the products vectorize; added up at the end.
          constexpr int kLanes = 16;
          T lanes[kLanes] = {}, rest = 0;
          for (int64_t b = 0; b < n; ++b) {
            const T* in = px + (b * c + o / m) * h * w;
            const T* grad = pg + (b * c_out + o) * plane;
            for (int64_t oy = 0; oy < g.out_h; ++oy) {
              const int64_t iy = oy * g.sy - g.ph + i * g.dy;
              if (iy < 0 || iy >= h || lo == hi) continue;
              const T* row = grad + oy * g.out_w + lo;
              const T* src = in + iy * w - g.pw + j * g.dx + lo * g.sx;  // src[k * sx]: output lo + k's pixel
              const int64_t len = hi - lo;
              int64_t k = 0;
              if (g.sx == 1)
                for (; k + kLanes <= len; k += kLanes)
                  for (int l = 0; l < kLanes; ++l) lanes[l] += row[k + l] * src[k + l];
              for (; k < len; ++k) rest += row[k] * src[k * g.sx];
            }
          }
          T sum = rest;
          for (int l = 0; l < kLanes; ++l) sum += lanes[l];
          pw[o * taps + i * g.kw + j] = sum;
        }
    });
  });
}

namespace {
const ConvLoweringKernels kLowering{.convolution_2d = convolution_2d,
                                   .im2col = im2col,
                                   .col2im = col2im,
                                   .batched_gemm = batched_gemm,
                                   .depthwise_conv = depthwise_conv,
                                   .depthwise_conv_grad_data = depthwise_conv_grad_data,
                                   .depthwise_conv_grad_filter = depthwise_conv_grad_filter};
}  // namespace

// Small maps: fewer output pixels per image than a GEMM panel's columns (a net's last layers
// on small images: nin's 4 x 4, 2 x 2 and 1 x 1 maps at 40 pixels). Products per image would
// fill a panel with a few columns, so the whole batch is one product whose rows are the
// (image, pixel) pairs: the windows of all images as an (N * P, depth) matrix.
namespace {
bool small_maps(int64_t n, int64_t c, const Conv2dGeometry& g, DType dtype) {
  const int64_t pixels = g.out_h * g.out_w, depth = c * g.kh * g.kw;
  return g.groups == 1 && pixels < kGemmPanelWidth && n * pixels * depth * dtype_size(dtype) <= (int64_t(64) << 20);
}

// ROWS (N * P, C * kh * kw): row (image, oy, ox) is the window of that output pixel, 0 outside
// the image (im2col's matrix transposed, written directly).
template <class T>
void im2row(const T* x, int64_t n, int64_t c, int64_t h, int64_t w, const Conv2dGeometry& g, T* rows) {
  const int64_t pixels = g.out_h * g.out_w, depth = c * g.kh * g.kw;
  parallel_for(n * pixels, std::max<int64_t>(1, 4096 / depth), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t image = r / pixels, oy = r % pixels / g.out_w, ox = r % g.out_w;
      T* row = rows + r * depth;
      for (int64_t ch = 0; ch < c; ++ch) {
        const T* plane = x + (image * c + ch) * h * w;
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t iy = oy * g.sy - g.ph + i * g.dy;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t ix = ox * g.sx - g.pw + j * g.dx;
            *row++ = iy >= 0 && iy < h && ix >= 0 && ix < w ? plane[iy * w + ix] : T(0);
          }
        }
      }
    }
  });
}

// X (N, C, H, W) = im2row's adjoint of ROWS: every element added back where im2row took it,
// each image's in row order (one task per image).
template <class T>
void row2im(const T* rows, int64_t n, int64_t c, int64_t h, int64_t w, const Conv2dGeometry& g, T* x) {
  const int64_t pixels = g.out_h * g.out_w, depth = c * g.kh * g.kw;
  parallel_tasks(n, num_threads(), [&](int64_t image) {
    T* planes = x + image * c * h * w;
    std::fill(planes, planes + c * h * w, T(0));
    for (int64_t p = 0; p < pixels; ++p) {
      const int64_t oy = p / g.out_w, ox = p % g.out_w;
      const T* row = rows + (image * pixels + p) * depth;
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t iy = oy * g.sy - g.ph + i * g.dy;
          for (int64_t j = 0; j < g.kw; ++j, ++row) {
            const int64_t ix = ox * g.sx - g.pw + j * g.dx;
            if (iy >= 0 && iy < h && ix >= 0 && ix < w) planes[(ch * h + iy) * w + ix] += *row;
          }
        }
    }
  });
}

// DST[b] = SRC[b]^T for N blocks of R x C (row-major): (N, R, C) -> (N, C, R).
template <class T>
void transpose_blocks(const T* src, int64_t n, int64_t r, int64_t c, T* dst) {
  parallel_for(n, std::max<int64_t>(1, 16384 / std::max<int64_t>(r * c, 1)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < c; ++j) dst[(b * c + j) * r + i] = src[(b * r + i) * c + j];
  });
}

// The windows of X (N, C, H, W) as rows: (1, N * P, depth).
Tensor window_rows(const Tensor& x, const Conv2dGeometry& g) {
  const int64_t n = x.size(0), c = x.size(1), depth = c * g.kh * g.kw, pixels = g.out_h * g.out_w;
  Tensor rows = Tensor::empty({1, n * pixels, depth}, x.dtype(), Device::cpu());
  const Tensor xc = x.contiguous();
  CHAINER_DISPATCH_FLOATING(x.dtype(), "convolution_2d", [&] {
    im2row(xc.data<scalar_t>(), n, c, x.size(2), x.size(3), g, rows.data<scalar_t>());
  });
  return rows;
}

// GY (N, C_out, P) as rows (1, N * P, C_out).
Tensor output_rows(const Tensor& gy) {
  const int64_t n = gy.size(0), c_out = gy.size(1), pixels = gy.numel() / std::max<int64_t>(n * c_out, 1);
  Tensor rows = Tensor::empty({1, n * pixels, c_out}, gy.dtype(), Device::cpu());
  const Tensor gc = gy.contiguous();
  CHAINER_DISPATCH_FLOATING(gy.dtype(), "convolution_2d", [&] {
    transpose_blocks(gc.data<scalar_t>(), n, c_out, pixels, rows.data<scalar_t>());
  });
  return rows;
}
}  // namespace

void convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y) {
  if (through_float32(y, [&](Tensor& y32) { convolution_2d(widened(x), widened(W), widened(b), g, y32); })) return;
  const int64_t n = x.size(0), c_out = W.size(0), pixels = g.out_h * g.out_w;
  if (small_maps(n, x.size(1), g, x.dtype())) {
    Tensor rows = Tensor::empty({1, n * pixels, c_out}, x.dtype(), Device::cpu());
    batched_gemm(window_rows(x, g), false, W.contiguous().reshape({1, c_out, -1}), true, 1.0, 0.0, rows);
    CHAINER_DISPATCH_FLOATING(y.dtype(), "convolution_2d", [&] {
      using T = scalar_t;
      T* py = y.data<T>();
      transpose_blocks(rows.data<T>(), n, pixels, c_out, py);
      if (!b.defined()) return;
      const Tensor bc = b.contiguous();
      const T* pb = bc.data<T>();
      for (int64_t i = 0; i < n; ++i)
        for (int64_t o = 0; o < c_out; ++o)
          for (int64_t p = 0; p < pixels; ++p) py[(i * c_out + o) * pixels + p] += pb[o];
    });
    return;
  }
  if (implicit_conv_applies(x, g)) implicit_convolution_2d(x, W, b, g, y);
  else lowered_convolution_2d(kLowering, x, W, b, g, y);
}

void convolution_2d_grad_data(const Tensor& gy, const Tensor& W, const Conv2dGeometry& g, Tensor& gx) {
  if (through_float32(gx, [&](Tensor& gx32) { convolution_2d_grad_data(widened(gy), widened(W), g, gx32); })) return;
  const int64_t n = gx.size(0), depth = W.numel() / W.size(0), pixels = g.out_h * g.out_w;
  if (small_maps(n, gx.size(1), g, gx.dtype())) {
    Tensor rows = Tensor::empty({1, n * pixels, depth}, gx.dtype(), Device::cpu());
    batched_gemm(output_rows(gy), false, W.contiguous().reshape({1, W.size(0), depth}), false, 1.0, 0.0, rows);
    CHAINER_DISPATCH_FLOATING(gx.dtype(), "convolution_2d_grad_data", [&] {
      row2im(rows.data<scalar_t>(), n, gx.size(1), gx.size(2), gx.size(3), g, gx.data<scalar_t>());
    });
    return;
  }
  lowered_convolution_2d_grad_data(kLowering, gy, W, g, gx);
}

void convolution_2d_grad_filter(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW) {
  if (through_float32(gW, [&](Tensor& gW32) { convolution_2d_grad_filter(widened(x), widened(gy), g, gW32); })) return;
  if (small_maps(x.size(0), x.size(1), g, x.dtype())) {
    Tensor out = gW.reshape({1, gW.size(0), -1});
    batched_gemm(output_rows(gy), true, window_rows(x, g), false, 1.0, 0.0, out);
    return;
  }
  // Fewer than a panel's window rows (a first layer's 1 x 3 x 3) would leave most of the
  // implicit product's panel empty: the lowering's transposed im2col is faster there (measured).
  const bool narrow = x.size(1) / g.groups * g.kh * g.kw < kGemmPanelWidth;
  if (implicit_conv_applies(x, g) && !narrow) implicit_convolution_2d_grad_filter(x, gy, g, gW);
  else lowered_convolution_2d_grad_filter(kLowering, x, gy, g, gW);
}

}  // namespace chainer::cpu::CHAINER_ISA
