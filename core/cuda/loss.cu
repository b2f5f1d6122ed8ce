// The losses and metrics on CUDA (core/cpu/loss.cpp is their twin, with the same formulas):
// softmax cross entropy and its gradient, accuracy, sigmoid cross entropy and its gradient.
// Per-row sums use fixed shuffle trees; the sums over all rows (the reduced loss, the accuracy)
// run on one block, or on blocks that write partials and a warp that adds them, the partition a
// function of the row count alone; never atomics, so results depend only on the inputs. Nothing
// is read on the host.
#include <cmath>
#include <type_traits>

#include "core/cuda/common.cuh"
#include "core/cuda/kernels.h"
#include "core/cuda/reduce.cuh"
#include "core/cuda/rows.cuh"

namespace chainer::cuda {

namespace {

// Whether a label takes part in the loss: not ignored and one of the C classes.
__device__ bool counted(int32_t label, int64_t ignore_label, int64_t classes) {
  return label != ignore_label && label >= 0 && label < classes;
}

// ---- softmax_cross_entropy ----

// A warp per row: the log-sum-exp and the loss; a bad label is reported and its row ignored.
template <class T>
__global__ void cross_entropy_rows_kernel(const T* x, const int32_t* t, int64_t n, int64_t classes,
                                          int64_t ignore_label, T* loss, T* lse, DeviceErrorRecord* error) {
  const int lane = int(threadIdx.x) % 32;
  CHAINER_ROW_LOOP(i, n, 32) {
    const T* row = x + i * classes;
    T m = -T(INFINITY);
    for (int64_t j = lane; j < classes; j += 32) m = fmax(m, row[j]);
    m = group_max<32>(m);
    T z = 0;
    for (int64_t j = lane; j < classes; j += 32) z += exp(row[j] - m);
    z = group_sum<32>(z);
    if (lane == 0) {
      const T log_z = log(z);
      lse[i] = m + log_z;
      const int32_t label = t[i];
      const bool use = counted(label, ignore_label, classes);
      if (!use && label != ignore_label)
        report_device_error(error, kLabelOutOfRange, i, label, classes, ignore_label);
      // (m - x_t) + log z rather than lse - x_t: no cancellation when logits are large.
      loss[i] = use ? (m - row[label]) + log_z : T(0);
    }
  }
}

// The sums over all rows: one block per kRowsPerPartial rows, at most kMaxPartials blocks.
constexpr int64_t kRowsPerPartial = 2048;
constexpr int64_t kMaxPartials = 128;

// From the loss summed over the rows (in double) and the count of rows used: the scale, and the
// reduced loss (the sum rounded to T, times T(scale), as the CPU). REDUCED is null for
// LossReduction::None.
template <class T>
__device__ void finish_loss(double sum, int64_t used, int64_t n, LossReduction reduction, T* reduced, double* scale) {
  const double s = reduction == LossReduction::MeanOverValid   ? 1.0 / double(used > 1 ? used : 1)
                   : reduction == LossReduction::MeanOverBatch ? 1.0 / double(n > 1 ? n : 1)
                                                               : 1.0;
  *scale = s;
  if (reduced) *reduced = T(sum) * T(s);
}

// Each block sums the loss and counts the rows used over its grid-stride share of the rows. One
// block finishes at once; several write PARTIALS (the sums, then the counts as doubles, exact
// below 2^53) for cross_entropy_finish_kernel.
template <class T>
__global__ void cross_entropy_sum_kernel(const T* loss, const int32_t* t, int64_t n, int64_t classes,
                                         int64_t ignore_label, LossReduction reduction, T* reduced, double* scale,
                                         double* partials) {
  double sum = 0;
  int64_t used = 0;
  CHAINER_GRID_STRIDE_LOOP(i, n) {
    sum += double(loss[i]);
    used += counted(t[i], ignore_label, classes);
  }
  sum = block_sum(sum);
  used = block_sum(used);
  if (threadIdx.x != 0) return;
  if (gridDim.x == 1) {
    finish_loss(sum, used, n, reduction, reduced, scale);
  } else {
    partials[blockIdx.x] = sum;
    partials[gridDim.x + blockIdx.x] = double(used);
  }
}

// One warp: the blocks' sums and counts in a fixed tree, then the scale and the reduced loss.
template <class T>
__global__ void cross_entropy_finish_kernel(const double* partials, int64_t blocks, int64_t n,
                                            LossReduction reduction, T* reduced, double* scale) {
  const double sum = warp_sum_of(partials, blocks), used = warp_sum_of(partials + blocks, blocks);
  if (threadIdx.x == 0) finish_loss(sum, int64_t(used), n, reduction, reduced, scale);
}

template <class T>
__global__ void cross_entropy_grad_kernel(const T* x, const int32_t* t, const T* lse, const T* gloss, bool per_row,
                                          const double* scale, int64_t n, int64_t classes, int64_t ignore_label,
                                          T* gx) {
  CHAINER_GRID_STRIDE_LOOP(idx, n * classes) {
    const int64_t i = idx / classes, j = idx - i * classes;
    const int32_t label = t[i];
    T v = 0;
    if (counted(label, ignore_label, classes)) {
      const T coeff = T(double(gloss[per_row ? i : 0]) * *scale);
      v = coeff * exp(x[idx] - lse[i]);
      if (j == label) v -= coeff;
    }
    gx[idx] = v;
  }
}

// ---- accuracy ----

// A thread per row finds the first maximum as the CPU loop does (strict >); each block counts
// the rows it saw and those classified correctly. One block finishes at once; several write
// PARTIALS (the correct counts, then the totals) for accuracy_finish_kernel.
template <class T>
__global__ void accuracy_kernel(const T* y, const int32_t* t, int64_t rows, int64_t len, int64_t inner,
                                int64_t ignore_label, T* out, int64_t* partials) {
  int64_t correct = 0, total = 0;
  CHAINER_GRID_STRIDE_LOOP(r, rows) {
    if (t[r] == ignore_label) continue;
    ++total;
    const T* p = y + row_base(r, len, inner);
    int64_t best = 0;
    for (int64_t k = 1; k < len; ++k)
      if (p[k * inner] > p[best * inner]) best = k;
    correct += best == t[r];
  }
  correct = block_sum(correct);
  total = block_sum(total);
  if (threadIdx.x != 0) return;
  if (gridDim.x == 1) {
    *out = T(total == 0 ? 0.0 : double(correct) / double(total));
  } else {
    partials[blockIdx.x] = correct;
    partials[gridDim.x + blockIdx.x] = total;
  }
}

// One warp: the blocks' counts (integers, so any order gives the same), then the ratio.
template <class T>
__global__ void accuracy_finish_kernel(const int64_t* partials, int64_t blocks, T* out) {
  const int64_t correct = warp_sum_of(partials, blocks), total = warp_sum_of(partials + blocks, blocks);
  if (threadIdx.x == 0) *out = T(total == 0 ? 0.0 : double(correct) / double(total));
}

// ---- sigmoid cross entropy ----

// One thread an element, the CPU's formulas (core/cpu/loss.cpp).
template <class T>
__global__ void sigmoid_cross_entropy_kernel(const T* x, const int32_t* t, int64_t n, T* loss) {
  CHAINER_GRID_STRIDE_LOOP(i, n) {
    const T v = x[i];
    loss[i] = t[i] == -1 ? T(0) : log1p(exp(-fabs(v))) - v * (T(t[i]) - T(v >= T(0)));
  }
}

template <class T>
__global__ void sigmoid_cross_entropy_grad_kernel(const T* x, const int32_t* t, const T* gy, bool shared, int64_t n,
                                                  T* gx) {
  CHAINER_GRID_STRIDE_LOOP(i, n) {
    const T y = T(0.5) * tanh(T(0.5) * x[i]) + T(0.5);
    gx[i] = t[i] == -1 ? T(0) : gy[shared ? 0 : i] * (y - T(t[i]));
  }
}

}  // namespace

int64_t softmax_cross_entropy(const Tensor& x, const Tensor& t, int64_t ignore_label, LossReduction reduction,
                              Tensor& loss, Tensor& lse, Tensor& reduced, Tensor& scale) {
  const Tensor xc = x.contiguous(), tc = t.contiguous();
  const int64_t n = x.size(0), c = x.size(1);
  CHAINER_DISPATCH_FLOATING(x.dtype(), "softmax_cross_entropy", [&] {
    using T = scalar_t;
    if (n > 0) {
      cross_entropy_rows_kernel<T><<<blocks_for(n, kWarps), kThreads, 0, compute_stream()>>>(
          xc.data<T>(), tc.data<int32_t>(), n, c, ignore_label, loss.data<T>(), lse.data<T>(), device_error_record());
      CHAINER_CUDA_CHECK_LAUNCH(cross_entropy_rows_kernel);
    }
    // Also with no rows: SCALE and REDUCED must be written.
    const unsigned blocks = partial_blocks(n, kRowsPerPartial, kMaxPartials);
    Tensor partials;
    if (blocks > 1)
      partials = Tensor::empty({2 * int64_t(blocks)}, DType::Float64, Device::cuda(current_device_index()));
    double* pp = blocks > 1 ? partials.data<double>() : nullptr;
    T* pr = reduced.defined() ? reduced.data<T>() : nullptr;
    cross_entropy_sum_kernel<T><<<blocks, kThreads, 0, compute_stream()>>>(
        loss.data<T>(), tc.data<int32_t>(), n, c, ignore_label, reduction, pr, scale.data<double>(), pp);
    CHAINER_CUDA_CHECK_LAUNCH(cross_entropy_sum_kernel);
    if (blocks > 1) {
      cross_entropy_finish_kernel<T><<<1, 32, 0, compute_stream()>>>(pp, blocks, n, reduction, pr,
                                                                     scale.data<double>());
      CHAINER_CUDA_CHECK_LAUNCH(cross_entropy_finish_kernel);
    }
  });
  return -1;  // a bad label is reported at the next host read
}

void softmax_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss,
                                const Tensor& scale, int64_t ignore_label, Tensor& gx) {
  const int64_t n = x.size(0), c = x.size(1);
  if (n * c == 0) return;
  const Tensor xc = x.contiguous(), tc = t.contiguous(), zc = lse.contiguous(), gc = gloss.contiguous();
  CHAINER_DISPATCH_FLOATING(x.dtype(), "softmax_cross_entropy_grad", [&] {
    using T = scalar_t;
    cross_entropy_grad_kernel<T><<<blocks_for(n * c), kThreads, 0, compute_stream()>>>(
        xc.data<T>(), tc.data<int32_t>(), zc.data<T>(), gc.data<T>(), gloss.numel() != 1, scale.data<double>(), n, c,
        ignore_label, gx.data<T>());
    CHAINER_CUDA_CHECK_LAUNCH(cross_entropy_grad_kernel);
  });
}

void accuracy(const Tensor& y, const Tensor& t, int64_t ignore_label, Tensor& out) {
  const AxisView v = axis_view(y.shape(), 1);
  const Tensor yc = y.contiguous(), tc = t.contiguous();
  CHAINER_DISPATCH_FLOATING(y.dtype(), "accuracy", [&] {
    using T = scalar_t;
    const unsigned blocks = partial_blocks(v.rows(), kRowsPerPartial, kMaxPartials);
    Tensor partials;
    if (blocks > 1) partials = Tensor::empty({2 * int64_t(blocks)}, DType::Int64, Device::cuda(current_device_index()));
    int64_t* pp = blocks > 1 ? partials.data<int64_t>() : nullptr;
    accuracy_kernel<T><<<blocks, kThreads, 0, compute_stream()>>>(yc.data<T>(), tc.data<int32_t>(), v.rows(), v.len,
                                                                 v.inner, ignore_label, out.data<T>(), pp);
    CHAINER_CUDA_CHECK_LAUNCH(accuracy_kernel);
    if (blocks > 1) {
      accuracy_finish_kernel<T><<<1, 32, 0, compute_stream()>>>(pp, blocks, out.data<T>());
      CHAINER_CUDA_CHECK_LAUNCH(accuracy_finish_kernel);
    }
  });
}

void sigmoid_cross_entropy(const Tensor& x, const Tensor& t, Tensor& loss) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const Tensor xc = x.contiguous(), tc = t.contiguous();
  CHAINER_DISPATCH_FLOATING(x.dtype(), "sigmoid_cross_entropy", [&] {
    using T = scalar_t;
    sigmoid_cross_entropy_kernel<T><<<blocks_for(n), kThreads, 0, compute_stream()>>>(xc.data<T>(), tc.data<int32_t>(),
                                                                                       n, loss.data<T>());
    CHAINER_CUDA_CHECK_LAUNCH(sigmoid_cross_entropy_kernel);
  });
}

void sigmoid_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& gy, Tensor& gx) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const Tensor xc = x.contiguous(), tc = t.contiguous(), gc = gy.contiguous();
  const bool shared = gy.numel() == 1 && n != 1;  // one gradient for every element
  CHAINER_DISPATCH_FLOATING(x.dtype(), "sigmoid_cross_entropy_grad", [&] {
    using T = scalar_t;
    sigmoid_cross_entropy_grad_kernel<T><<<blocks_for(n), kThreads, 0, compute_stream()>>>(
        xc.data<T>(), tc.data<int32_t>(), gc.data<T>(), shared, n, gx.data<T>());
    CHAINER_CUDA_CHECK_LAUNCH(sigmoid_cross_entropy_grad_kernel);
  });
}

}  // namespace chainer::cuda
