// The per-channel kernels of batch normalization and local response normalization, the twins of
// core/cpu/normalization.cpp. The channel sums are split over several blocks per channel in two
// passes with the fixed reductions of reduce.cuh, the partition fixed by the shape, so they depend
// only on the inputs and the shape; the affine pass and local response normalization are one
// thread per element (per column of channels for the latter).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/cuda/channel_split.h"
#include "core/cuda/common.cuh"
#include "core/cuda/kernels.h"
#include "core/cuda/reduce.cuh"

namespace chainer::cuda {

namespace {

// ---- Channel sums ----

// A channel of an (outer, channels, inner) view is OUTER rows of INNER contiguous elements, rows
// CHANNELS * INNER apart. One block per channel leaves most of the device idle on a CNN's few
// channels (32 blocks for 32 channels of 128 x 28 x 28 on 132 SMs, ~0.5 ms a step), so each
// channel is cut into pieces, a block each, as core/cuda/reduce.cu's "Split sums": pass 1 sums
// piece j of output o (o = c for sum a, channels + c for the second sum) into
// partials[o * pieces + j] (double), pass 2 adds each output's partials by warp_sum_of. A piece
// is ROWS consecutive rows, or, when a channel has fewer rows than pieces are wanted (a batch of
// one large image), a run of WIDTH elements of one row. The partition is a function of the shape
// alone, so the rounding is the same on every device and every run; a channel that needs one
// piece (a small problem, or enough channels to fill the device) takes one pass.
static_assert(kChannelThreads == kThreads, "channel_split.h walks pieces with the kernels' block size");

// Block (c, j) sums piece j of channel c: [sum a, sum a (b - center[c])], or [sum a, sum a^2]
// without B, into OUT[c * gridDim.y + j] and OUT[(channels + c) * gridDim.y + j]: with one piece
// the sums themselves, else the partials.
template <class T>
__global__ void channel_sums_kernel(const T* a, const T* b, const T* center, int64_t outer, int64_t channels,
                                    int64_t inner, ChannelSplit split, double* out) {
  const int64_t c = blockIdx.x, j = blockIdx.y;
  const double m = center ? double(center[c]) : 0.0;
  double s1 = 0, s2 = 0;
  for_each_in_piece(split, outer, channels, inner, c, j, int(threadIdx.x), [&](int64_t at) {
    const double av = double(a[at]);
    s1 += av;
    s2 += b ? av * (double(b[at]) - m) : av * av;
  });
  s1 = block_sum(s1);
  s2 = block_sum(s2);
  if (threadIdx.x == 0) out[c * gridDim.y + j] = s1, out[(channels + c) * gridDim.y + j] = s2;
}

// Pass 2: a warp per output adds its PIECES partials in a fixed order.
__global__ void channel_sums_finish_kernel(const double* partials, int64_t outputs, int64_t pieces, double* sums) {
  for (int64_t o = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; o < outputs;
       o += int64_t(gridDim.x) * blockDim.x / 32) {
    const double s = warp_sum_of(partials + o * pieces, pieces);
    if (threadIdx.x % 32 == 0) sums[o] = s;
  }
}

// ---- Affine pass and local response normalization ----

template <class T>
__global__ void channel_affine_kernel(const T* u, const T* s, const T* v, const T* t, const T* m, const T* d,
                                      int64_t channels, int64_t inner, int64_t total, T* out) {
  CHAINER_GRID_STRIDE_LOOP(i, total) {
    const int64_t c = (i / inner) % channels;
    T r = d[c];
    if (u) r += s[c] * u[i];
    if (v) r += t[c] * (v[i] - m[c]);
    out[i] = r;
  }
}

// One thread per (n, s) column of X seen as (N, C, S), walking its channels.
template <class T>
__global__ void lrn_kernel(const T* x, int64_t C, int64_t S, int64_t half, T k, T alpha, T beta, int64_t columns,
                           T* y, T* unit_scale) {
  CHAINER_GRID_STRIDE_LOOP(col, columns) {
    const int64_t base = (col / S) * C * S + col % S;
    for (int64_t c = 0; c < C; ++c) {
      T sum = 0;
      for (int64_t j = c - half < 0 ? 0 : c - half; j <= (c + half < C ? c + half : C - 1); ++j) {
        const T xj = x[base + j * S];
        sum += xj * xj;
      }
      const T us = k + alpha * sum;
      unit_scale[base + c * S] = us;
      y[base + c * S] = x[base + c * S] * pow(us, -beta);
    }
  }
}

template <class T>
__global__ void lrn_grad_kernel(const T* x, const T* y, const T* unit_scale, const T* gy, int64_t C, int64_t S,
                                int64_t half, T beta, T coeff, int64_t columns, T* gx) {
  CHAINER_GRID_STRIDE_LOOP(col, columns) {
    const int64_t base = (col / S) * C * S + col % S;
    for (int64_t c = 0; c < C; ++c) {
      T sum = 0;
      for (int64_t j = c - half < 0 ? 0 : c - half; j <= (c + half < C ? c + half : C - 1); ++j) {
        const int64_t at = base + j * S;
        sum += y[at] * gy[at] / unit_scale[at];
      }
      const int64_t at = base + c * S;
      gx[at] = gy[at] * pow(unit_scale[at], -beta) - coeff * x[at] * sum;
    }
  }
}

template <class T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

// Half arrays (and their float32 or half coefficients) run the float32 kernels on float32 copies
// (chainer::widened).
void channel_sums(const Tensor& a, const Tensor& b, const Tensor& center, const ChannelView& view, Tensor& sums) {
  if (view.outer * view.channels * view.inner == 0) return;  // SUMS stays zero
  if (is_half(a.dtype())) return channel_sums(widened(a), widened(b), widened(center), view, sums);
  const ChannelSplit split = channel_split(view);
  const int64_t pieces = split.pieces(), outputs = 2 * view.channels;
  Tensor partials;
  if (pieces > 1) partials = Tensor::empty({outputs * pieces}, DType::Float64, Device::cuda(current_device_index()));
  double* out = pieces > 1 ? partials.data<double>() : sums.data<double>();
  CHAINER_DISPATCH_FLOATING(a.dtype(), "channel_sums", [&] {
    using T = scalar_t;
    const dim3 grid(unsigned(view.channels), unsigned(pieces));
    channel_sums_kernel<T><<<grid, kThreads, 0, compute_stream()>>>(a.data<T>(), data_or_null<T>(b),
                                                                    data_or_null<T>(center), view.outer,
                                                                    view.channels, view.inner, split, out);
    CHAINER_CUDA_CHECK_LAUNCH(channel_sums_kernel);
  });
  if (pieces == 1) return;
  channel_sums_finish_kernel<<<blocks_for(outputs, kWarps), kThreads, 0, compute_stream()>>>(
      partials.data<double>(), outputs, pieces, sums.data<double>());
  CHAINER_CUDA_CHECK_LAUNCH(channel_sums_finish_kernel);
}

void channel_affine(const ChannelAffine& args, const ChannelView& view, Tensor& out) {
  const int64_t total = out.numel();
  if (total == 0) return;
  if (is_half(out.dtype())) {
    Tensor out32 = Tensor::empty(out.shape(), DType::Float32, out.device());
    channel_affine({widened(args.u), widened(args.s), widened(args.v), widened(args.t), widened(args.m), widened(args.d)},
                   view, out32);
    out.copy_(out32);
    return;
  }
  CHAINER_DISPATCH_FLOATING(out.dtype(), "channel_affine", [&] {
    using T = scalar_t;
    channel_affine_kernel<T><<<blocks_for(total), kThreads, 0, compute_stream()>>>(
        data_or_null<T>(args.u), data_or_null<T>(args.s), data_or_null<T>(args.v), data_or_null<T>(args.t),
        data_or_null<T>(args.m), args.d.data<T>(), view.channels, view.inner, total, out.data<T>());
    CHAINER_CUDA_CHECK_LAUNCH(channel_affine_kernel);
  });
}

void local_response_normalization(const Tensor& x, int64_t n, double k, double alpha, double beta, Tensor& out,
                                  Tensor& unit_scale) {
  const int64_t N = x.size(0), C = x.size(1);
  if (x.numel() == 0) return;
  const int64_t S = x.numel() / (N * C), columns = N * S;
  const Tensor xc = x.contiguous();
  CHAINER_DISPATCH_FLOATING(x.dtype(), "local_response_normalization", [&] {
    using T = scalar_t;
    lrn_kernel<T><<<blocks_for(columns), kThreads, 0, compute_stream()>>>(
        xc.data<T>(), C, S, n / 2, T(k), T(alpha), T(beta), columns, out.data<T>(), unit_scale.data<T>());
    CHAINER_CUDA_CHECK_LAUNCH(lrn_kernel);
  });
}

void local_response_normalization_grad(const Tensor& x, const Tensor& y, const Tensor& unit_scale, const Tensor& gy,
                                       int64_t n, double alpha, double beta, Tensor& gx) {
  const int64_t N = x.size(0), C = x.size(1);
  if (x.numel() == 0) return;
  const int64_t S = x.numel() / (N * C), columns = N * S;
  const Tensor xc = x.contiguous(), yc = y.contiguous(), uc = unit_scale.contiguous(), gc = gy.contiguous();
  CHAINER_DISPATCH_FLOATING(x.dtype(), "local_response_normalization_grad", [&] {
    using T = scalar_t;
    lrn_grad_kernel<T><<<blocks_for(columns), kThreads, 0, compute_stream()>>>(
        xc.data<T>(), yc.data<T>(), uc.data<T>(), gc.data<T>(), C, S, n / 2, T(beta), T(2 * alpha * beta), columns,
        gx.data<T>());
    CHAINER_CUDA_CHECK_LAUNCH(lrn_grad_kernel);
  });
}

}  // namespace chainer::cuda
