// The lowering of 2-D convolutions (im2col and its adjoint col2im) and the direct depthwise
// convolution, the twins of core/cpu/conv.cpp: one thread per element written. col2im and the
// depthwise data gradient gather instead of scattering: each pixel sums the window positions
// that read it, so no atomics are needed and the sums run in a fixed order. The depthwise filter
// gradient is one block per filter tap, reducing over the batch in shared memory.
#include <cstdint>

#include "core/cuda/common.cuh"
#include "core/conv_lowering.h"
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


// The output column read by window tap OFF of input column IX along one axis, or -1 when no
// output position reads it (T = ix + pad - off must be a multiple of the stride).
__device__ inline int64_t reading_output(int64_t ix, int64_t pad, int64_t off, int64_t s, int64_t out) {
  const int64_t t = ix + pad - off;
  if (t < 0 || t % s != 0 || t / s >= out) return -1;
  return t / s;
}

template <class T>
__global__ void depthwise_kernel(const T* x, const T* W, const T* b, int64_t c, int64_t c_out, int64_t h, int64_t w,
                                 Conv2dGeometry g, int64_t total, T* y) {
  const int64_t plane = g.out_h * g.out_w, m = c_out / c;
  CHAINER_GRID_STRIDE_LOOP(k, total) {
    const int64_t ox = k % g.out_w, oy = (k / g.out_w) % g.out_h, o = (k / plane) % c_out, n = k / (plane * c_out);
    const T* in = x + (n * c + o / m) * h * w;
    const T* wt = W + o * g.kh * g.kw;
    T sum = b ? b[o] : T(0);
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t iy = oy * g.sy - g.ph + i * g.dy;
      if (iy < 0 || iy >= h) continue;
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t ix = ox * g.sx - g.pw + j * g.dx;
        if (ix >= 0 && ix < w) sum += wt[i * g.kw + j] * in[iy * w + ix];
      }
    }
    y[k] = sum;
  }
}

template <class T>
__global__ void depthwise_grad_data_kernel(const T* gy, const T* W, int64_t c, int64_t c_out, int64_t h, int64_t w,
                                           Conv2dGeometry g, int64_t total, T* gx) {
  const int64_t plane = g.out_h * g.out_w, m = c_out / c;
  CHAINER_GRID_STRIDE_LOOP(k, total) {
    const int64_t ix = k % w, iy = (k / w) % h, ch = (k / (h * w)) % c, n = k / (h * w * c);
    T sum = 0;
    for (int64_t q = 0; q < m; ++q) {
      const int64_t o = ch * m + q;
      const T* grad = gy + (n * c_out + o) * plane;
      for (int64_t i = 0; i < g.kh; ++i) {
        const int64_t oy = reading_output(iy, g.ph, i * g.dy, g.sy, g.out_h);
        if (oy < 0) continue;
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t ox = reading_output(ix, g.pw, j * g.dx, g.sx, g.out_w);
          if (ox >= 0) sum += W[(o * g.kh + i) * g.kw + j] * grad[oy * g.out_w + ox];
        }
      }
    }
    gx[k] = sum;
  }
}

// Block (o, tap): the sum over the batch and the output grid of gy[o] times the tap's pixels.
template <class T>
__global__ void depthwise_grad_filter_kernel(const T* x, const T* gy, int64_t n, int64_t c, int64_t c_out, int64_t h,
                                             int64_t w, Conv2dGeometry g, T* gW) {
  __shared__ T partial[kThreads];
  const int64_t taps = g.kh * g.kw, o = blockIdx.x / taps, tap = blockIdx.x % taps, i = tap / g.kw, j = tap % g.kw;
  const int64_t plane = g.out_h * g.out_w, m = c_out / c, count = n * plane;
  T sum = 0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    const int64_t b = k / plane, oy = (k % plane) / g.out_w, ox = k % g.out_w;
    const int64_t iy = oy * g.sy - g.ph + i * g.dy, ix = ox * g.sx - g.pw + j * g.dx;
    if (iy >= 0 && iy < h && ix >= 0 && ix < w)
      sum += gy[(b * c_out + o) * plane + oy * g.out_w + ox] * x[((b * c + o / m) * h + iy) * w + ix];
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) gW[o * taps + tap] = partial[0];
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

namespace {
template <class T>
void launch_depthwise(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y) {
  const int64_t total = y.numel();
  depthwise_kernel<T><<<blocks_for(total), kThreads, 0, compute_stream()>>>(
      x.data<T>(), W.data<T>(), b.defined() ? b.data<T>() : nullptr, x.size(1), y.size(1), x.size(2), x.size(3), g,
      total, y.data<T>());
  CHAINER_CUDA_CHECK_LAUNCH(depthwise_kernel);
}
template <class T>
void launch_depthwise_grad_data(const Tensor& gy, const Tensor& W, const Conv2dGeometry& g, Tensor& gx) {
  const int64_t total = gx.numel();
  depthwise_grad_data_kernel<T><<<blocks_for(total), kThreads, 0, compute_stream()>>>(
      gy.data<T>(), W.data<T>(), gx.size(1), gy.size(1), gx.size(2), gx.size(3), g, total, gx.data<T>());
  CHAINER_CUDA_CHECK_LAUNCH(depthwise_grad_data_kernel);
}
template <class T>
void launch_depthwise_grad_filter(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW) {
  const unsigned blocks = unsigned(gW.numel());
  depthwise_grad_filter_kernel<T><<<blocks, kThreads, 0, compute_stream()>>>(
      x.data<T>(), gy.data<T>(), x.size(0), x.size(1), gy.size(1), x.size(2), x.size(3), g, gW.data<T>());
  CHAINER_CUDA_CHECK_LAUNCH(depthwise_grad_filter_kernel);
}
}  // namespace

void depthwise_conv(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y) {
  if (y.numel() == 0) return;
  const Tensor bc = b.defined() ? b.contiguous() : Tensor();
  if (x.dtype() == DType::Float32) launch_depthwise<float>(x, W, bc, g, y);
  else launch_depthwise<double>(x, W, bc, g, y);
}

void depthwise_conv_grad_data(const Tensor& gy, const Tensor& W, const Conv2dGeometry& g, Tensor& gx) {
  if (gx.numel() == 0) return;
  if (gx.dtype() == DType::Float32) launch_depthwise_grad_data<float>(gy, W, g, gx);
  else launch_depthwise_grad_data<double>(gy, W, g, gx);
}

void depthwise_conv_grad_filter(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW) {
  if (gW.numel() == 0) return;
  if (x.dtype() == DType::Float32) launch_depthwise_grad_filter<float>(x, gy, g, gW);
  else launch_depthwise_grad_filter<double>(x, gy, g, gW);
}

}  // namespace chainer::cuda

namespace chainer::cuda {

namespace {
const ConvLoweringKernels kLowering{.convolution_2d = convolution_2d,
                                   .im2col = im2col,
                                   .col2im = col2im,
                                   .batched_gemm = batched_gemm,
                                   .depthwise_conv = depthwise_conv,
                                   .depthwise_conv_grad_data = depthwise_conv_grad_data,
                                   .depthwise_conv_grad_filter = depthwise_conv_grad_filter};
}  // namespace

void convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y) {
  lowered_convolution_2d(kLowering, x, W, b, g, y);
}

void convolution_2d_grad_data(const Tensor& gy, const Tensor& W, const Conv2dGeometry& g, Tensor& gx) {
  lowered_convolution_2d_grad_data(kLowering, gy, W, g, gx);
}

void convolution_2d_grad_filter(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW) {
  lowered_convolution_2d_grad_filter(kLowering, x, gy, g, gW);
}

}  // namespace chainer::cuda
