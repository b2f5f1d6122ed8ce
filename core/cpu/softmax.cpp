// The softmax family: softmax and log-softmax along any axis, and their gradient.
#include <algorithm>
#include <cmath>

#include "core/cpu/kernels.h"
#include "core/util/parallel.h"

namespace chainer::cpu::CHAINER_ISA {

void softmax(const Tensor& x, int64_t axis, bool log, Tensor& out) {
  CHAINER_DISPATCH_FLOATING(x.dtype(), "softmax", [&] {
    using T = scalar_t;
    const Tensor xc = x.contiguous();
    const T* px = xc.data<T>();
    T* po = out.data<T>();
    const auto [outer, len, inner] = axis_view(x.shape(), axis);
    parallel_for(outer * inner, 64, [&](int64_t s, int64_t e) {
      for (int64_t r = s; r < e; ++r) {
        const int64_t o = r / inner, i = r % inner;
        const T* p = px + o * len * inner + i;
        T* q = po + o * len * inner + i;
        T m = p[0];
        for (int64_t k = 1; k < len; ++k) m = std::max(m, p[k * inner]);
        T z = 0;
        for (int64_t k = 0; k < len; ++k) z += std::exp(p[k * inner] - m);
        if (log) {
          const T lz = m + std::log(z);
          for (int64_t k = 0; k < len; ++k) q[k * inner] = p[k * inner] - lz;
        } else {
          const T inv = T(1) / z;
          for (int64_t k = 0; k < len; ++k) q[k * inner] = std::exp(p[k * inner] - m) * inv;
        }
      }
    });
  });
}

void softmax_grad(const Tensor& y, const Tensor& gy, int64_t axis, bool log, Tensor& gx) {
  CHAINER_DISPATCH_FLOATING(y.dtype(), "softmax_grad", [&] {
    using T = scalar_t;
    const Tensor yc = y.contiguous(), gc = gy.contiguous();
    const T* py = yc.data<T>();
    const T* pg = gc.data<T>();
    T* po = gx.data<T>();
    const AxisView v = axis_view(y.shape(), axis);
    const int64_t st = v.inner;  // stride between classes
    parallel_for(v.outer * v.inner, row_grain(v.len), [&](int64_t s, int64_t e) {
      for (int64_t r = s; r < e; ++r) {
        const int64_t base = (r / v.inner) * v.len * v.inner + r % v.inner;
        const T* yr = py + base;
        const T* gr = pg + base;
        T* o = po + base;
        T acc = 0;
        if (log) {  // y = log softmax: gx = gy - softmax * sum(gy)
          for (int64_t k = 0; k < v.len; ++k) acc += gr[k * st];
          for (int64_t k = 0; k < v.len; ++k) o[k * st] = gr[k * st] - std::exp(yr[k * st]) * acc;
        } else {  // y = softmax: gx = y * (gy - sum(gy * y))
          for (int64_t k = 0; k < v.len; ++k) acc += gr[k * st] * yr[k * st];
          for (int64_t k = 0; k < v.len; ++k) o[k * st] = yr[k * st] * (gr[k * st] - acc);
        }
      }
    });
  });
}

}  // namespace chainer::cpu::CHAINER_ISA
