// Gather and scatter-add along an axis (ops::take, ops::scatter_add_), the twins of
// core/cpu/indexing.cpp: operands seen as (outer, extent, inner) around the axis, one thread
// per element of the gathered shape. Indices that lived on the host were checked by the op;
// indices made on the device are checked here and an index out of range is recorded as a device
// error (common.cuh), reported at the next host read.
#include <cstdint>

#include "core/cuda/common.cuh"
#include "core/cuda/kernels.h"

namespace chainer::cuda {

namespace {

// Element K of the gathered shape (outer, n, inner) reads A's element at the returned offset;
// -1 (and a recorded error) for an index out of range.
__device__ int64_t gathered_offset(int64_t k, const int64_t* idx, int64_t n, int64_t len, int64_t inner, int64_t axis,
                                   int code, DeviceErrorRecord* error) {
  const int64_t r = k / inner, i = k - r * inner, o = r / n, j = r - o * n;
  int64_t x = idx[j];
  if (x < -len || x >= len) {
    report_device_error(error, code, j, x, len, axis);
    return -1;
  }
  if (x < 0) x += len;
  return (o * len + x) * inner + i;
}

// T: an unsigned integer of the element's size (the gather only moves bytes).
template <class T>
__global__ void take_kernel(const T* a, const int64_t* idx, int64_t n, int64_t len, int64_t inner, int64_t axis,
                            int64_t total, T* out, DeviceErrorRecord* error) {
  CHAINER_GRID_STRIDE_LOOP(k, total) {
    const int64_t at = gathered_offset(k, idx, n, len, inner, axis, kTakeIndexOutOfRange, error);
    out[k] = at < 0 ? T(0) : a[at];
  }
}

// Repeated indices make several threads add into one element of A: atomicAdd makes that
// correct without sorting the indices first. Giving each thread a column of A and the indices in
// order (the CPU's way, which is deterministic) leaves only outer * inner threads, each looping
// over every index: an embedding's gradient (one column per feature, thousands of indices) would
// run on a few hundred threads. The price is the order of the additions, so float sums may
// differ in the last bits from run to run.
template <class T>
__global__ void scatter_add_kernel(T* a, const int64_t* idx, int64_t n, int64_t len, int64_t inner, int64_t axis,
                                   int64_t total, const T* values, DeviceErrorRecord* error) {
  CHAINER_GRID_STRIDE_LOOP(k, total) {
    const int64_t at = gathered_offset(k, idx, n, len, inner, axis, kScatterAddIndexOutOfRange, error);
    if (at >= 0) atomicAdd(a + at, values[k]);
  }
}

template <class T>
void launch_take(const Tensor& src, const Tensor& indices, int64_t axis, Tensor& out) {
  const AxisView v = axis_view(src.shape(), axis);
  const int64_t total = out.numel();
  take_kernel<T><<<blocks_for(total), kThreads, 0, compute_stream()>>>(
      static_cast<const T*>(src.raw_data()), indices.data<int64_t>(), indices.numel(), v.len, v.inner, axis, total,
      static_cast<T*>(out.raw_data()), device_error_record());
  CHAINER_CUDA_CHECK_LAUNCH(take_kernel);
}

}  // namespace

void take(const Tensor& a, const Tensor& indices, int64_t axis, Tensor& out) {
  if (out.numel() == 0) return;
  const Tensor src = a.contiguous();
  switch (src.itemsize()) {
    case 1: return launch_take<uint8_t>(src, indices, axis, out);
    case 2: return launch_take<uint16_t>(src, indices, axis, out);
    case 4: return launch_take<uint32_t>(src, indices, axis, out);
    case 8: return launch_take<uint64_t>(src, indices, axis, out);
    default: CHAINER_ASSERT(false, "take: no element type of ", src.itemsize(), " bytes");
  }
}

void scatter_add(Tensor& a, const Tensor& indices, int64_t axis, const Tensor& values) {
  const int64_t total = values.numel();
  if (total == 0) return;
  const Tensor vals = values.contiguous();
  const AxisView v = axis_view(a.shape(), axis);
  CHAINER_DISPATCH_FLOATING(a.dtype(), "scatter_add", [&] {
    using T = scalar_t;
    scatter_add_kernel<T><<<blocks_for(total), kThreads, 0, compute_stream()>>>(
        a.data<T>(), indices.data<int64_t>(), indices.numel(), v.len, v.inner, axis, total, vals.data<T>(),
        device_error_record());
    CHAINER_CUDA_CHECK_LAUNCH(scatter_add_kernel);
  });
}

}  // namespace chainer::cuda
