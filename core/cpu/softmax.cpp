#include <cmath>

#include "core/cpu/kernels.h"
#include "core/parallel.h"

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

}  // namespace chainer::cpu::CHAINER_ISA
