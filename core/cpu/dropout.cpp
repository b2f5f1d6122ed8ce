// Dropout masks from Philox (core/util/philox.h): the same mask on every device for a key.
#include "core/cpu/kernels.h"
#include "core/util/parallel.h"
#include "core/util/philox.h"
#include "core/util/random.h"

namespace chainer::cpu::CHAINER_ISA {

void dropout_mask(double ratio, Generator& gen, Tensor& mask) {
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

}  // namespace chainer::cpu::CHAINER_ISA
