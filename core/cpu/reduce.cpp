#include <limits>

#include "core/cpu/kernels.h"
#include "core/parallel.h"

namespace chainer::cpu {

// Views the reduction as (outer, reduced..., inner) blocks by walking every element once and
// accumulating into its output slot; double accumulators keep float32 sums accurate.
void sum_axes(const Tensor& a, const std::vector<bool>& reduce, Tensor& out) {
  CHAINER_DISPATCH_ALL(a.dtype(), "sum", [&] {
    using T = scalar_t;
    const Tensor ac = a.contiguous();
    const T* pa = ac.data<T>();
    const int64_t nd = a.ndim();
    const Shape& shape = a.shape();
    // Fast path: reduce the leading axis of a 2-D-like view (bias gradients).
    int64_t lead = 0;
    while (lead < nd && reduce[size_t(lead)]) ++lead;
    bool rest_kept = true;
    for (int64_t d = lead; d < nd; ++d) rest_kept &= !reduce[size_t(d)];
    std::vector<double> acc(size_t(out.numel()), 0.0);
    if (rest_kept) {
      int64_t rows = 1, cols = 1;
      for (int64_t d = 0; d < lead; ++d) rows *= shape[size_t(d)];
      for (int64_t d = lead; d < nd; ++d) cols *= shape[size_t(d)];
      // Columns split over the team (each column still summed row by row, in order: the
      // result does not depend on the thread count); serial, this was ~1% of a tutorial step.
      parallel_for(cols, std::max<int64_t>(16, (1 << 15) / std::max<int64_t>(rows, 1)), [&](int64_t j0, int64_t j1) {
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = j0; j < j1; ++j) acc[size_t(j)] += double(pa[r * cols + j]);
      });
    } else {
      std::vector<int64_t> ostr(size_t(nd), 0);
      int64_t s = 1;
      for (int64_t d = nd - 1; d >= 0; --d) {
        if (!reduce[size_t(d)]) {
          ostr[size_t(d)] = s;
          s *= shape[size_t(d)];
        }
      }
      for_each_offset(shape, ostr, [&, k = int64_t(0)](int64_t o) mutable { acc[size_t(o)] += double(pa[k++]); });
    }
    T* po = out.data<T>();
    for (size_t i = 0; i < acc.size(); ++i) po[i] = T(acc[i]);
  });
}

namespace {
// The max (IS_MAX) or min of A along AXIS and its first index: the running extreme starts at
// element 0 and is replaced only on a strict improvement, so ties keep the first.
template <bool IS_MAX>
void extreme_axis(const char* op, const Tensor& a, int64_t axis, Tensor& out, Tensor* index) {
  CHAINER_DISPATCH_ALL(a.dtype(), op, [&] {
    using T = scalar_t;
    const Tensor ac = a.contiguous();
    const T* pa = ac.data<T>();
    const auto [outer, len, inner] = axis_view(a.shape(), axis);
    T* po = out.defined() ? out.data<T>() : nullptr;
    int32_t* pi = index ? index->data<int32_t>() : nullptr;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* p = pa + o * len * inner + i;
        T best = p[0];
        int64_t at = 0;
        for (int64_t k = 1; k < len; ++k)
          if (IS_MAX ? p[k * inner] > best : p[k * inner] < best) best = p[k * inner], at = k;
        if (po) po[o * inner + i] = best;
        if (pi) pi[o * inner + i] = int32_t(at);
      }
  });
}
}  // namespace

void max_axis(const Tensor& a, int64_t axis, Tensor& out, Tensor* argmax) {
  extreme_axis<true>("max", a, axis, out, argmax);
}

void min_axis(const Tensor& a, int64_t axis, Tensor& out, Tensor* argmin) {
  extreme_axis<false>("min", a, axis, out, argmin);
}

void sum_of_squares(const std::vector<Tensor>& xs, Tensor& out) {
  double total = 0;
  for (const Tensor& x : xs) {
    double s = 0;  // per tensor, then added: the order GradientClipping always used
    CHAINER_DISPATCH_FLOATING(x.dtype(), "sum_of_squares", [&] {
      const Tensor c = x.contiguous();
      const scalar_t* p = c.data<scalar_t>();
      for (int64_t i = 0, n = c.numel(); i < n; ++i) s += double(p[i]) * double(p[i]);
    });
    total += s;
  }
  *out.data<double>() = total;
}

}  // namespace chainer::cpu
