// 2-D pooling over NCHW planes, the twins of core/cpu/pooling.cpp: one thread per output element
// for the forward passes and one per input element for the gradients, which gather from the
// windows that hold their element (in the CPU's order) instead of scattering: no atomics, and
// the same sums as the CPU's. Float16 and bfloat16 planes are read as floats, summed and
// compared in float, and each output rounded once (core/cuda/half.cuh), as the CPU's.
#include <cstdint>

#include "core/cuda/common.cuh"
#include "core/cuda/half.cuh"
#include "core/cuda/kernels.h"

namespace chainer::cuda {

namespace {

struct Planes {
  int64_t h, w, oh, ow;  // input and output plane sizes
};

// Input rows [lo, hi) of output row O's window along one axis, clipped to the image.
__device__ void window_span(int64_t o, int64_t k, int64_t s, int64_t p, int64_t size, int64_t& lo, int64_t& hi) {
  const int64_t start = o * s - p;
  lo = start > 0 ? start : 0;
  hi = start + k < size ? start + k : size;
}
// Output rows [lo, hi) whose windows hold input row I along one axis.
__device__ void covering_span(int64_t i, int64_t k, int64_t s, int64_t p, int64_t out_size, int64_t& lo,
                              int64_t& hi) {
  const int64_t padded = i + p;
  lo = padded < k ? 0 : (padded - k) / s + 1;
  hi = padded / s + 1 < out_size ? padded / s + 1 : out_size;
}

template <class T>
__global__ void max_pooling_kernel(const T* x, Planes g, Window2D w, int64_t total, T* y, int32_t* indexes) {
  CHAINER_GRID_STRIDE_LOOP(i, total) {
    const int64_t ox = i % g.ow, oy = i / g.ow % g.oh, plane = i / (g.ow * g.oh);
    int64_t y0, y1, x0, x1;
    window_span(oy, w.kh, w.sy, w.ph, g.h, y0, y1);
    window_span(ox, w.kw, w.sx, w.pw, g.w, x0, x1);
    const T* p = x + plane * g.h * g.w;
    using C = compute_t<T>;
    C best = -C(INFINITY);
    int64_t at = -1;
    for (int64_t iy = y0; iy < y1; ++iy)
      for (int64_t ix = x0; ix < x1; ++ix) {
        const C v = load(p[iy * g.w + ix]);
        if (v > best || (v != v && best == best)) best = v, at = iy * g.w + ix;
      }
    y[i] = convert<T>(best);
    indexes[i] = int32_t(at);
  }
}

template <class T>
__global__ void max_pooling_grad_kernel(const T* gy, const int32_t* indexes, Planes g, Window2D w, int64_t total,
                                        T* gx) {
  CHAINER_GRID_STRIDE_LOOP(i, total) {
    const int64_t ix = i % g.w, iy = i / g.w % g.h, plane = i / (g.w * g.h);
    int64_t y0, y1, x0, x1;
    covering_span(iy, w.kh, w.sy, w.ph, g.oh, y0, y1);
    covering_span(ix, w.kw, w.sx, w.pw, g.ow, x0, x1);
    const int64_t base = plane * g.oh * g.ow, self = iy * g.w + ix;
    compute_t<T> sum = 0;
    for (int64_t oy = y0; oy < y1; ++oy)
      for (int64_t ox = x0; ox < x1; ++ox)
        if (indexes[base + oy * g.ow + ox] == self) sum += load(gy[base + oy * g.ow + ox]);
    gx[i] = convert<T>(sum);
  }
}

template <class T>
__global__ void window_sum_kernel(const T* x, Planes g, Window2D w, compute_t<T> scale, int64_t total, T* y) {
  CHAINER_GRID_STRIDE_LOOP(i, total) {
    const int64_t ox = i % g.ow, oy = i / g.ow % g.oh, plane = i / (g.ow * g.oh);
    int64_t y0, y1, x0, x1;
    window_span(oy, w.kh, w.sy, w.ph, g.h, y0, y1);
    window_span(ox, w.kw, w.sx, w.pw, g.w, x0, x1);
    const T* p = x + plane * g.h * g.w;
    compute_t<T> sum = 0;
    for (int64_t iy = y0; iy < y1; ++iy)
      for (int64_t ix = x0; ix < x1; ++ix) sum += load(p[iy * g.w + ix]);
    y[i] = convert<T>(sum * scale);
  }
}

template <class T>
__global__ void window_spread_kernel(const T* y, Planes g, Window2D w, compute_t<T> scale, int64_t total, T* out) {
  CHAINER_GRID_STRIDE_LOOP(i, total) {
    const int64_t ix = i % g.w, iy = i / g.w % g.h, plane = i / (g.w * g.h);
    int64_t y0, y1, x0, x1;
    covering_span(iy, w.kh, w.sy, w.ph, g.oh, y0, y1);
    covering_span(ix, w.kw, w.sx, w.pw, g.ow, x0, x1);
    const T* p = y + plane * g.oh * g.ow;
    compute_t<T> sum = 0;
    for (int64_t oy = y0; oy < y1; ++oy)
      for (int64_t ox = x0; ox < x1; ++ox) sum += load(p[oy * g.ow + ox]);
    out[i] = convert<T>(sum * scale);
  }
}

// The planes of input X (N, C, H, W) and output Y (N, C, out_h, out_w).
Planes planes_of(const Tensor& x, const Tensor& y) { return {x.size(2), x.size(3), y.size(2), y.size(3)}; }

}  // namespace

void max_pooling_2d(const Tensor& x, const Window2D& window, Tensor& out, Tensor& indexes) {
  const int64_t total = out.numel();
  if (total == 0) return;
  const Tensor xc = x.contiguous();
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(x.dtype(), "max_pooling_2d", [&] {
    using T = scalar_t;
    max_pooling_kernel<T><<<blocks_for(total), kThreads, 0, compute_stream()>>>(
        elements<T>(xc), planes_of(x, out), window, total, elements<T>(out), indexes.data<int32_t>());
    CHAINER_CUDA_CHECK_LAUNCH(max_pooling_kernel);
  });
}

void max_pooling_2d_grad(const Tensor& gy, const Tensor& indexes, const Window2D& window, Tensor& gx) {
  const int64_t total = gx.numel();
  if (total == 0) return;
  const Tensor gc = gy.contiguous();
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(gx.dtype(), "max_pooling_2d_grad", [&] {
    using T = scalar_t;
    max_pooling_grad_kernel<T><<<blocks_for(total), kThreads, 0, compute_stream()>>>(
        elements<T>(gc), indexes.data<int32_t>(), planes_of(gx, gy), window, total, elements<T>(gx));
    CHAINER_CUDA_CHECK_LAUNCH(max_pooling_grad_kernel);
  });
}

void window_sum_2d(const Tensor& x, const Window2D& window, double scale, Tensor& out) {
  const int64_t total = out.numel();
  if (total == 0) return;
  const Tensor xc = x.contiguous();
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(x.dtype(), "window_sum_2d", [&] {
    using T = scalar_t;
    window_sum_kernel<T><<<blocks_for(total), kThreads, 0, compute_stream()>>>(
        elements<T>(xc), planes_of(x, out), window, compute_t<T>(scale), total, elements<T>(out));
    CHAINER_CUDA_CHECK_LAUNCH(window_sum_kernel);
  });
}

void window_spread_2d(const Tensor& y, const Window2D& window, double scale, Tensor& out) {
  const int64_t total = out.numel();
  if (total == 0) return;
  const Tensor yc = y.contiguous();
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(y.dtype(), "window_spread_2d", [&] {
    using T = scalar_t;
    window_spread_kernel<T><<<blocks_for(total), kThreads, 0, compute_stream()>>>(
        elements<T>(yc), planes_of(out, y), window, compute_t<T>(scale), total, elements<T>(out));
    CHAINER_CUDA_CHECK_LAUNCH(window_spread_kernel);
  });
}

}  // namespace chainer::cuda
