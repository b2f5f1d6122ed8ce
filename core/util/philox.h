// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
// counter-based generator. Element i of a random tensor is a pure function of (key, i), so a CPU
// loop, any split over threads and any CUDA launch configuration produce the same values.
// Compiled by g++ and nvcc alike.
#pragma once
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define CHAINER_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define CHAINER_HOST_DEVICE inline
#endif

namespace chainer::philox {

struct Block {
  uint32_t v[4];
};

CHAINER_HOST_DEVICE void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = uint64_t(a) * uint64_t(b);
  hi = uint32_t(p >> 32);
  lo = uint32_t(p);
}

// The 4 words of block COUNTER under KEY (10 rounds, the published constants).
CHAINER_HOST_DEVICE Block block(uint64_t key, uint64_t counter) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(0xD2511F53u, c0, hi0, lo0);
    mulhilo(0xCD9E8D57u, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Block{{c0, c1, c2, c3}};
}

// A uniform double in [0, 1) for element I: word i % 4 of block i / 4, times 2^-32.
CHAINER_HOST_DEVICE double uniform(uint64_t key, uint64_t i) {
  const Block b = block(key, i >> 2);
  return double(b.v[i & 3]) * (1.0 / 4294967296.0);
}

// Four standard normals for block COUNTER under KEY: Box-Muller on the block's two pairs of
// words (u1 = (w0 + 1) 2^-32 in (0, 1], so the logarithm is finite; u2 = w1 2^-32), in double.
CHAINER_HOST_DEVICE void normal4(uint64_t key, uint64_t counter, double out[4]) {
  const Block b = block(key, counter);
  for (int pair = 0; pair < 2; ++pair) {
    const double u1 = (double(b.v[2 * pair]) + 1.0) * (1.0 / 4294967296.0);
    const double u2 = double(b.v[2 * pair + 1]) * (1.0 / 4294967296.0);
    const double r = sqrt(-2.0 * log(u1)), theta = 6.283185307179586 * u2;
    out[2 * pair] = r * cos(theta);
    out[2 * pair + 1] = r * sin(theta);
  }
}

}  // namespace chainer::philox
