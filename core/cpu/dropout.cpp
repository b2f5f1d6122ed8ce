// Random tensors from Philox (core/util/philox.h): dropout masks and normal samples, the same
// values on every device for a key.
#include "core/cpu/kernels.h"
#include "core/util/parallel.h"
#include "core/util/philox.h"
#include "core/util/random.h"

namespace chainer::cpu::CHAINER_ISA {

void dropout_mask(double ratio, Generator& gen, Tensor& mask) {
  if (through_float32(mask, [&](Tensor& mask32) { dropout_mask(ratio, gen, mask32); })) return;
  const uint64_t key = gen.next_u64();  // one draw per mask; the elements come from Philox
  CHAINER_DISPATCH_FLOATING(mask.dtype(), "dropout", [&] {
    using T = scalar_t;
    const T scale = T(1.0 / (1.0 - ratio));
    T* p = mask.data<T>();
    const int64_t n = mask.numel();
    parallel_for((n + 3) / 4, kGrain / 4, [&](int64_t s, int64_t e) {
      for (int64_t b = s; b < e; ++b) {
        const philox::Block r = philox::block(key, uint64_t(b));
        for (int64_t k = 0; k < 4 && 4 * b + k < n; ++k)
          p[4 * b + k] = double(r.v[k]) * (1.0 / 4294967296.0) >= ratio ? scale : T(0);
      }
    });
  });
}

void random_normal(double mean, double stddev, Generator& gen, Tensor& out) {
  if (through_float32(out, [&](Tensor& out32) { random_normal(mean, stddev, gen, out32); })) return;
  const uint64_t key = gen.next_u64();  // one draw per tensor, as dropout_mask
  CHAINER_DISPATCH_FLOATING(out.dtype(), "random_normal", [&] {
    using T = scalar_t;
    T* p = out.data<T>();
    const int64_t n = out.numel();
    parallel_for((n + 3) / 4, kGrain / 16, [&](int64_t s, int64_t e) {
      double z[4];
      for (int64_t b = s; b < e; ++b) {
        philox::normal4(key, uint64_t(b), z);
        for (int64_t k = 0; k < 4 && 4 * b + k < n; ++k) p[4 * b + k] = T(mean + stddev * z[k]);
      }
    });
  });
}

}  // namespace chainer::cpu::CHAINER_ISA
