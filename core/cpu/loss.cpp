// The losses and metrics behind nn/functions: softmax cross entropy and its gradient, accuracy,
// sigmoid cross entropy and its gradient. Each does in one pass what a chain of generic ops would
// do in several passes with temporaries.
#include <algorithm>
#include <cmath>

#include "core/cpu/kernels.h"
#include "core/util/parallel.h"

namespace chainer::cpu::CHAINER_ISA {

int64_t softmax_cross_entropy(const Tensor& x, const Tensor& t, int64_t ignore_label, LossReduction reduction,
                              Tensor& loss, Tensor& lse, Tensor& reduced, Tensor& scale) {
  const Tensor tc = t.contiguous();
  const int32_t* pt = tc.data<int32_t>();
  const int64_t n = x.size(0), c = x.size(1);
  // Labels first (serially, they are few): a bad one must fail before any work is done.
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (pt[i] == ignore_label) continue;
    if (pt[i] < 0 || pt[i] >= c) return i;
    ++count;
  }
  const double coeff = reduction == LossReduction::MeanOverValid   ? 1.0 / double(std::max<int64_t>(count, 1))
                       : reduction == LossReduction::MeanOverBatch ? 1.0 / double(std::max<int64_t>(n, 1))
                                                                   : 1.0;
  *scale.data<double>() = coeff;
  CHAINER_DISPATCH_FLOATING(x.dtype(), "softmax_cross_entropy", [&] {
    using T = scalar_t;
    const Tensor xc = x.contiguous();
    const T* px = xc.data<T>();
    T* pl = loss.data<T>();
    T* pz = lse.data<T>();
    parallel_for(n, row_grain(c), [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) {
        const T* row = px + i * c;
        T m = row[0];
        for (int64_t j = 1; j < c; ++j) m = std::max(m, row[j]);
        T z = 0;
        for (int64_t j = 0; j < c; ++j) z += std::exp(row[j] - m);
        const T log_z = std::log(z);
        pz[i] = m + log_z;
        // (m - x_t) + log z rather than lse - x_t: no cancellation when logits are large.
        pl[i] = pt[i] == ignore_label ? T(0) : (m - row[pt[i]]) + log_z;
      }
    });
    if (reduction != LossReduction::None) {
      double sum = 0;  // in row order, in double, then rounded: as sum() does
      for (int64_t i = 0; i < n; ++i) sum += double(pl[i]);
      *reduced.data<T>() = T(sum) * T(coeff);
    }
  });
  return -1;
}

void softmax_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss,
                                const Tensor& scale, int64_t ignore_label, Tensor& gx) {
  CHAINER_DISPATCH_FLOATING(x.dtype(), "softmax_cross_entropy_grad", [&] {
    using T = scalar_t;
    const Tensor xc = x.contiguous(), tc = t.contiguous(), zc = lse.contiguous(), gc = gloss.contiguous();
    const T* px = xc.data<T>();
    const int32_t* pt = tc.data<int32_t>();
    const T* pz = zc.data<T>();
    const T* pg = gc.data<T>();
    const double coeff_scale = *scale.data<double>();
    const bool per_row = gloss.numel() != 1;
    T* po = gx.data<T>();
    const int64_t n = x.size(0), c = x.size(1);
    parallel_for(n, row_grain(c), [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) {
        const T* row = px + i * c;
        T* o = po + i * c;
        if (pt[i] == ignore_label) {
          std::fill(o, o + c, T(0));
          continue;
        }
        const T coeff = T(double(pg[per_row ? i : 0]) * coeff_scale);
        for (int64_t j = 0; j < c; ++j) o[j] = coeff * std::exp(row[j] - pz[i]);
        o[pt[i]] -= coeff;
      }
    });
  });
}

void accuracy(const Tensor& y, const Tensor& t, int64_t ignore_label, Tensor& out) {
  int64_t correct = 0, total = 0;
  CHAINER_DISPATCH_FLOATING(y.dtype(), "accuracy", [&] {
    using T = scalar_t;
    const Tensor yc = y.contiguous(), tc = t.contiguous();
    const T* py = yc.data<T>();
    const int32_t* pt = tc.data<int32_t>();
    const AxisView v = axis_view(y.shape(), 1);
    for (int64_t r = 0; r < v.outer * v.inner; ++r) {
      if (pt[r] == ignore_label) continue;
      ++total;
      const T* p = py + (r / v.inner) * v.len * v.inner + r % v.inner;
      int64_t best = 0;  // the first maximum, as numpy's argmax
      for (int64_t k = 1; k < v.len; ++k)
        if (p[k * v.inner] > p[best * v.inner]) best = k;
      correct += best == pt[r];
    }
    *out.data<T>() = T(total == 0 ? 0.0 : double(correct) / double(total));
  });
}

void sigmoid_cross_entropy(const Tensor& x, const Tensor& t, Tensor& loss) {
  CHAINER_DISPATCH_FLOATING(x.dtype(), "sigmoid_cross_entropy", [&] {
    using T = scalar_t;
    const Tensor xc = x.contiguous(), tc = t.contiguous();
    const T* px = xc.data<T>();
    const int32_t* pt = tc.data<int32_t>();
    T* pl = loss.data<T>();
    parallel_for(x.numel(), kGrain, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) {
        const T v = px[i];
        pl[i] = pt[i] == -1 ? T(0) : std::log1p(std::exp(-std::abs(v))) - v * (T(pt[i]) - T(v >= T(0)));
      }
    });
  });
}

void sigmoid_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& gy, Tensor& gx) {
  CHAINER_DISPATCH_FLOATING(x.dtype(), "sigmoid_cross_entropy_grad", [&] {
    using T = scalar_t;
    const Tensor xc = x.contiguous(), tc = t.contiguous(), gc = gy.contiguous();
    const T* px = xc.data<T>();
    const int32_t* pt = tc.data<int32_t>();
    const T* pg = gc.data<T>();
    const bool shared = gy.numel() == 1 && x.numel() != 1;  // one gradient for every element
    T* po = gx.data<T>();
    parallel_for(x.numel(), kGrain, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) {
        const T y = T(0.5) * std::tanh(T(0.5) * px[i]) + T(0.5);  // the sigmoid kernel's formula
        po[i] = pt[i] == -1 ? T(0) : pg[shared ? 0 : i] * (y - T(pt[i]));
      }
    });
  });
}

}  // namespace chainer::cpu::CHAINER_ISA
