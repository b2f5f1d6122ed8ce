// Gather and scatter-add along an axis (ops::take, ops::scatter_add_). Both see their operands
// as (outer, extent, inner) around the axis (core/tensor/shape.h, AxisView): entry j of the indices
// moves INNER consecutive elements per outer row. The op has checked the indices on the host.
#include <algorithm>
#include <cstring>

#include "core/cpu/kernels.h"
#include "core/util/parallel.h"

namespace chainer::cpu::CHAINER_ISA {

namespace {
int64_t wrap(int64_t index, int64_t extent) { return index < 0 ? index + extent : index; }
}  // namespace

void take(const Tensor& a, const Tensor& indices, int64_t axis, Tensor& out) {
  const Tensor src = a.contiguous();
  const AxisView v = axis_view(src.shape(), axis);
  const int64_t n = indices.numel(), bytes = v.inner * int64_t(src.itemsize());
  const int64_t* idx = indices.data<int64_t>();
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(out.raw_data());
  // One output row (outer o, index j) per step: a byte copy, so every dtype alike.
  parallel_for(v.outer * n, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, v.inner)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t o = r / n, j = r - o * n;
      std::memcpy(d + r * bytes, s + (o * v.len + wrap(idx[j], v.len)) * bytes, size_t(bytes));
    }
  });
}

void scatter_add(Tensor& a, const Tensor& indices, int64_t axis, const Tensor& values) {
  const Tensor vals = values.contiguous();
  const AxisView v = axis_view(a.shape(), axis);
  const int64_t n = indices.numel();
  const int64_t* idx = indices.data<int64_t>();
  CHAINER_DISPATCH_FLOATING(a.dtype(), "scatter_add", [&] {
    using T = scalar_t;
    T* pa = a.data<T>();
    const T* pv = vals.data<T>();
    // Threads own disjoint (outer, inner) columns of A and add every index's value into them in
    // index order: repeated indices need no atomics, and the sums are the same run to run.
    parallel_for(v.outer * v.inner, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, n)), [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e;) {
        const int64_t o = c / v.inner, i0 = c - o * v.inner, i1 = std::min(v.inner, i0 + (e - c));
        for (int64_t j = 0; j < n; ++j) {
          T* dst = pa + (o * v.len + wrap(idx[j], v.len)) * v.inner;
          const T* src = pv + (o * n + j) * v.inner;
          for (int64_t i = i0; i < i1; ++i) dst[i] += src[i];
        }
        c += i1 - i0;
      }
    });
  });
}

}  // namespace chainer::cpu::CHAINER_ISA
