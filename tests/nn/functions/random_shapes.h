// Random shapes and axes for the tests that run a function over random sizes: extents in [1, 5]
// (so extent 1 comes up often), negative axes too. Header-only.
#pragma once

#include <cstdint>

#include "core/tensor/tensor.h"
#include "core/util/random.h"

namespace chainer::testing {

/// A random extent in [1, 5] for tests over random shapes.
inline int64_t dim(Generator& gen) { return 1 + int64_t(gen.below(5)); }

/// A random shape of rank in [LO, HI] with extents from dim (so extent 1 comes up often).
inline Shape random_shape(Generator& gen, int LO, int HI) {
  Shape s(size_t(LO + int(gen.below(uint64_t(HI - LO + 1)))));
  for (int64_t& d : s) d = dim(gen);
  return s;
}

/// A random axis in [-ndim, ndim): negative ones count from the end.
inline int64_t random_axis(Generator& gen, int64_t ndim) { return int64_t(gen.below(uint64_t(2 * ndim))) - ndim; }

/// A random shape with as many elements as S (its prime factors spread over a random rank in
/// [1, 4]), one extent sometimes left as -1 for reshape to infer.
inline Shape random_reshape(Generator& gen, const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  Shape t(size_t(1 + gen.below(4)), 1);
  for (int64_t p = 2; n > 1; ++p)
    for (; n % p == 0; n /= p) t[size_t(gen.below(t.size()))] *= p;
  if (gen.below(2)) t[size_t(gen.below(t.size()))] = -1;
  return t;
}

}  // namespace chainer::testing
