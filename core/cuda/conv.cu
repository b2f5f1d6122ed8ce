// The lowering of 2-D convolutions (im2col and its adjoint col2im), the twins of
// core/cpu/conv.cpp: one thread per element written. col2im gathers instead of scattering: each
// pixel sums the window positions that read it, so no atomics are needed and the sums run in a
// fixed order.
#include <cstdint>

#include "core/cuda/common.cuh"
#include "core/cuda/kernels.h"

namespace chainer::cuda {

namespace {

template <class T>
__global__ void im2col_kernel(const T* x, int64_t h, int64_t w, Conv2dGeometry g, int64_t total, T* col) {
  const int64_t cols = g.out_h * g.out_w;
  CHAINER_GRID_STRIDE_LOOP(k, total) {
    // k = ((plane * kh + i) * kw + j) * cols + oy * out_w + ox
    const int64_t ox = k % g.out_w, oy = (k / g.out_w) % g.out_h, r = k / cols;
    const int64_t j = r % g.kw, i = (r / g.kw) % g.kh, plane = r / (g.kw * g.kh);
    const int64_t iy = oy * g.sy - g.ph + i * g.dy, ix = ox * g.sx - g.pw + j * g.dx;
    col[k] = iy >= 0 && iy < h && ix >= 0 && ix < w ? x[(plane * h + iy) * w + ix] : T(0);
  }
}

template <class T>
__global__ void col2im_kernel(const T* col, int64_t h, int64_t w, Conv2dGeometry g, int64_t total, T* x) {
  const int64_t cols = g.out_h * g.out_w;
  CHAINER_GRID_STRIDE_LOOP(k, total) {
    const int64_t ix = k % w, iy = (k / w) % h, plane = k / (w * h);
    T sum = 0;
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t ty = iy + g.ph - i * g.dy;  // oy * sy
      if (ty < 0 || ty % g.sy != 0 || ty / g.sy >= g.out_h) continue;
      const int64_t oy = ty / g.sy;
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t tx = ix + g.pw - j * g.dx;
        if (tx < 0 || tx % g.sx != 0 || tx / g.sx >= g.out_w) continue;
        sum += col[((plane * g.kh + i) * g.kw + j) * cols + oy * g.out_w + tx / g.sx];
      }
    }
    x[k] = sum;
  }
}

}  // namespace

void im2col(const Tensor& x, const Conv2dGeometry& g, Tensor& col) {
  const int64_t total = col.numel();
  if (total == 0) return;
  if (x.dtype() == DType::Float32) {
    im2col_kernel<float><<<blocks_for(total), kThreads, 0, compute_stream()>>>(x.data<float>(), x.size(2), x.size(3), g,
                                                                              total, col.data<float>());
  } else {
    im2col_kernel<double><<<blocks_for(total), kThreads, 0, compute_stream()>>>(
        x.data<double>(), x.size(2), x.size(3), g, total, col.data<double>());
  }
  CHAINER_CUDA_CHECK_LAUNCH(im2col_kernel);
}

void col2im(const Tensor& col, const Conv2dGeometry& g, Tensor& x) {
  const int64_t total = x.numel();
  if (total == 0) return;
  const Tensor cc = col.contiguous();
  if (x.dtype() == DType::Float32) {
    col2im_kernel<float><<<blocks_for(total), kThreads, 0, compute_stream()>>>(cc.data<float>(), x.size(2), x.size(3), g,
                                                                              total, x.data<float>());
  } else {
    col2im_kernel<double><<<blocks_for(total), kThreads, 0, compute_stream()>>>(
        cc.data<double>(), x.size(2), x.size(3), g, total, x.data<double>());
  }
  CHAINER_CUDA_CHECK_LAUNCH(col2im_kernel);
}

}  // namespace chainer::cuda
