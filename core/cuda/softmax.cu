// The softmax family on CUDA (core/cpu/softmax.cpp is its twin, with the same formulas):
// softmax and log-softmax along any axis and their gradient. Per-row sums use fixed shuffle
// trees, never atomics. Nothing is read on the host.
#include <cmath>
#include <type_traits>

#include "core/cuda/common.cuh"
#include "core/cuda/kernels.h"
#include "core/cuda/reduce.cuh"
#include "core/cuda/rows.cuh"

namespace chainer::cuda {

namespace {

// ---- softmax, softmax_grad ----

template <class T, int L>
__global__ void softmax_kernel(const T* x, T* y, int64_t rows, int64_t len, int64_t inner, bool take_log) {
  const int lane = int(threadIdx.x) % L;
  CHAINER_ROW_LOOP(row, rows, L) {
    const int64_t base = row_base(row, len, inner);
    const T* p = x + base;
    T* o = y + base;
    T m = -T(INFINITY);
    for (int64_t k = lane; k < len; k += L) m = fmax(m, p[k * inner]);
    m = group_max<L>(m);
    T z = 0;
    for (int64_t k = lane; k < len; k += L) z += exp(p[k * inner] - m);
    z = group_sum<L>(z);
    if (take_log) {
      const T lz = m + log(z);
      for (int64_t k = lane; k < len; k += L) o[k * inner] = p[k * inner] - lz;
    } else {
      const T inv = T(1) / z;
      for (int64_t k = lane; k < len; k += L) o[k * inner] = exp(p[k * inner] - m) * inv;
    }
  }
}

template <class T, int L>
__global__ void softmax_grad_kernel(const T* y, const T* gy, T* gx, int64_t rows, int64_t len, int64_t inner,
                                    bool take_log) {
  const int lane = int(threadIdx.x) % L;
  CHAINER_ROW_LOOP(row, rows, L) {
    const int64_t base = row_base(row, len, inner);
    const T* yr = y + base;
    const T* gr = gy + base;
    T* o = gx + base;
    T acc = 0;
    if (take_log) {  // y = log softmax: gx = gy - softmax * sum(gy)
      for (int64_t k = lane; k < len; k += L) acc += gr[k * inner];
      acc = group_sum<L>(acc);
      for (int64_t k = lane; k < len; k += L) o[k * inner] = gr[k * inner] - exp(yr[k * inner]) * acc;
    } else {  // y = softmax: gx = y * (gy - sum(gy * y))
      for (int64_t k = lane; k < len; k += L) acc += gr[k * inner] * yr[k * inner];
      acc = group_sum<L>(acc);
      for (int64_t k = lane; k < len; k += L) o[k * inner] = yr[k * inner] * (gr[k * inner] - acc);
    }
  }
}

}  // namespace

void softmax(const Tensor& x, int64_t axis, bool log, Tensor& out) {
  const AxisView v = axis_view(x.shape(), axis);
  if (x.numel() == 0) return;
  const Tensor xc = x.contiguous();
  CHAINER_DISPATCH_FLOATING(x.dtype(), "softmax", [&] {
    using T = scalar_t;
    launch_rows(v, [&](auto lanes, unsigned blocks) {
      softmax_kernel<T, decltype(lanes)::value><<<blocks, kThreads, 0, compute_stream()>>>(
          xc.data<T>(), out.data<T>(), v.rows(), v.len, v.inner, log);
      CHAINER_CUDA_CHECK_LAUNCH(softmax_kernel);
    });
  });
}

void softmax_grad(const Tensor& y, const Tensor& gy, int64_t axis, bool log, Tensor& gx) {
  const AxisView v = axis_view(y.shape(), axis);
  if (y.numel() == 0) return;
  const Tensor yc = y.contiguous(), gc = gy.contiguous();
  CHAINER_DISPATCH_FLOATING(y.dtype(), "softmax_grad", [&] {
    using T = scalar_t;
    launch_rows(v, [&](auto lanes, unsigned blocks) {
      softmax_grad_kernel<T, decltype(lanes)::value><<<blocks, kThreads, 0, compute_stream()>>>(
          yc.data<T>(), gc.data<T>(), gx.data<T>(), v.rows(), v.len, v.inner, log);
      CHAINER_CUDA_CHECK_LAUNCH(softmax_grad_kernel);
    });
  });
}

}  // namespace chainer::cuda
