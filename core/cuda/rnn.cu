// Recurrent cells on CUDA: the fused LSTM and GRU steps and their gradients, a thread per unit of the batch
// (the formulas are core/ops/elementwise_formulas.h's, shared with core/cpu/rnn.cpp).
#include "core/cuda/common.cuh"
#include "core/cuda/kernels.h"
#include "core/ops/elementwise_formulas.h"

namespace chainer::cuda {

namespace {

template <class T>
__global__ void lstm_kernel(const T* x, const T* c_prev, T* c, T* h, int64_t n) {
  CHAINER_GRID_STRIDE_LOOP(k, n) {
    const T* g = x + 4 * k;
    formulas::lstm_cell<T>(g[0], g[1], g[2], g[3], c_prev[k], c[k], h[k]);
  }
}

template <class T>
__global__ void lstm_grad_kernel(const T* x, const T* c_prev, const T* c, const T* gc, const T* gh, T* gx, T* gc_prev,
                                 int64_t n) {
  CHAINER_GRID_STRIDE_LOOP(k, n) {
    const T* g = x + 4 * k;
    formulas::lstm_cell_grad<T>(g[0], g[1], g[2], g[3], c_prev[k], c[k], gc ? gc[k] : T(0), gh ? gh[k] : T(0),
                                gx + 4 * k, gc_prev[k]);
  }
}

template <class T>
__global__ void gru_kernel(const T* xg, const T* hg, const T* h, T* y, int64_t n) {
  CHAINER_GRID_STRIDE_LOOP(k, n) {
    const T* x = xg + 3 * k;
    const T* g = hg + 3 * k;
    y[k] = formulas::gru_cell<T>(x[0], x[1], x[2], g[0], g[1], g[2], h[k]);
  }
}

template <class T>
__global__ void gru_grad_kernel(const T* xg, const T* hg, const T* h, const T* gy, T* gxg, T* ghg, T* gh, int64_t n) {
  CHAINER_GRID_STRIDE_LOOP(k, n) {
    const T* x = xg + 3 * k;
    const T* g = hg + 3 * k;
    formulas::gru_cell_grad<T>(x[0], x[1], x[2], g[0], g[1], g[2], h[k], gy[k], gxg + 3 * k, ghg + 3 * k, gh[k]);
  }
}

}  // namespace

void lstm(const Tensor& x, const Tensor& c_prev, Tensor& c, Tensor& h) {
  const int64_t n = c.numel();
  if (n == 0) return;
  const Tensor cp = c_prev.contiguous();
  CHAINER_DISPATCH_FLOATING(x.dtype(), "lstm", [&] {
    using T = scalar_t;
    lstm_kernel<T><<<blocks_for(n), kThreads, 0, compute_stream()>>>(x.data<T>(), cp.data<T>(), c.data<T>(),
                                                                     h.data<T>(), n);
    CHAINER_CUDA_CHECK_LAUNCH(lstm_kernel);
  });
}

void lstm_grad(const Tensor& x, const Tensor& c_prev, const Tensor& c, const Tensor& gc, const Tensor& gh, Tensor& gx,
               Tensor& gc_prev) {
  const int64_t n = c.numel();
  if (n == 0) return;
  const Tensor cp = c_prev.contiguous(), cc = c.contiguous();
  const Tensor gcc = gc.defined() ? gc.contiguous() : Tensor(), ghc = gh.defined() ? gh.contiguous() : Tensor();
  CHAINER_DISPATCH_FLOATING(x.dtype(), "lstm", [&] {
    using T = scalar_t;
    lstm_grad_kernel<T><<<blocks_for(n), kThreads, 0, compute_stream()>>>(
        x.data<T>(), cp.data<T>(), cc.data<T>(), gcc.defined() ? gcc.data<T>() : nullptr,
        ghc.defined() ? ghc.data<T>() : nullptr, gx.data<T>(), gc_prev.data<T>(), n);
    CHAINER_CUDA_CHECK_LAUNCH(lstm_grad_kernel);
  });
}

void gru(const Tensor& xg, const Tensor& hg, const Tensor& h, Tensor& y) {
  const int64_t n = y.numel();
  if (n == 0) return;
  const Tensor hc = h.contiguous();
  CHAINER_DISPATCH_FLOATING(xg.dtype(), "gru", [&] {
    using T = scalar_t;
    gru_kernel<T><<<blocks_for(n), kThreads, 0, compute_stream()>>>(xg.data<T>(), hg.data<T>(), hc.data<T>(),
                                                                    y.data<T>(), n);
    CHAINER_CUDA_CHECK_LAUNCH(gru_kernel);
  });
}

void gru_grad(const Tensor& xg, const Tensor& hg, const Tensor& h, const Tensor& gy, Tensor& gxg, Tensor& ghg,
              Tensor& gh) {
  const int64_t n = gh.numel();
  if (n == 0) return;
  const Tensor hc = h.contiguous(), gyc = gy.contiguous();
  CHAINER_DISPATCH_FLOATING(xg.dtype(), "gru", [&] {
    using T = scalar_t;
    gru_grad_kernel<T><<<blocks_for(n), kThreads, 0, compute_stream()>>>(
        xg.data<T>(), hg.data<T>(), hc.data<T>(), gyc.data<T>(), gxg.data<T>(), ghg.data<T>(), gh.data<T>(), n);
    CHAINER_CUDA_CHECK_LAUNCH(gru_grad_kernel);
  });
}

}  // namespace chainer::cuda
