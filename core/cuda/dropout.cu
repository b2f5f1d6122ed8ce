// Random tensors on CUDA from Philox (core/util/philox.h): dropout masks, the CPU's bit for bit,
// and normal samples, the CPU's up to the last bits of log, sin and cos; for any launch
// configuration. The key is read on the device. Float16 and bfloat16 tensors get the float32
// values rounded once (core/cuda/half.cuh), as the CPU's: the same masks, and the samples up to
// the float32 sample's last bits.
#include "core/cuda/common.cuh"
#include "core/cuda/half.cuh"
#include "core/cuda/kernels.h"
#include "core/util/philox.h"
#include "core/util/random.h"

namespace chainer::cuda {

namespace {

// ---- dropout_mask ----

// A thread per Philox block of 4 elements; the key is read on the device (a graph replay
// uploads a fresh one before it runs). SCALE is the float32 scale for the half types.
template <class T>
__global__ void dropout_kernel(const uint64_t* key, double ratio, compute_t<T> scale_value, T* mask, int64_t n) {
  const T scale = convert<T>(scale_value), zero = convert<T>(compute_t<T>(0));
  const uint64_t k = *key;
  const int64_t blocks = (n + 3) / 4;
  CHAINER_GRID_STRIDE_LOOP(b, blocks) {
    const philox::Block r = philox::block(k, uint64_t(b));
    for (int64_t e = 0; e < 4 && 4 * b + e < n; ++e)
      mask[4 * b + e] = double(r.v[e]) * (1.0 / 4294967296.0) >= ratio ? scale : zero;
  }
}

// ---- random_normal ----

template <class T>
__global__ void normal_kernel(const uint64_t* key, double mean, double stddev, T* out, int64_t n) {
  const uint64_t k = *key;
  const int64_t blocks = (n + 3) / 4;
  CHAINER_GRID_STRIDE_LOOP(b, blocks) {
    double z[4];
    philox::normal4(k, uint64_t(b), z);
    for (int64_t e = 0; e < 4 && 4 * b + e < n; ++e)
      out[4 * b + e] = convert<T>(compute_t<T>(mean + stddev * z[e]));  // via float for the half types
  }
}

}  // namespace

void random_normal(double mean, double stddev, Generator& gen, Tensor& out) {
  const auto* key = static_cast<const uint64_t*>(
      step_scalars(sizeof(uint64_t), [&gen](void* host) { *static_cast<uint64_t*>(host) = gen.next_u64(); }));
  const int64_t n = out.numel();
  if (n == 0) return;
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(out.dtype(), "random_normal", [&] {
    using T = scalar_t;
    normal_kernel<T><<<blocks_for((n + 3) / 4), kThreads, 0, compute_stream()>>>(key, mean, stddev, elements<T>(out),
                                                                                 n);
    CHAINER_CUDA_CHECK_LAUNCH(normal_kernel);
  });
}

void dropout_mask(double ratio, Generator& gen, Tensor& mask) {
  // Drawn even for an empty mask, so the generator advances as on the CPU.
  const auto* key = static_cast<const uint64_t*>(
      step_scalars(sizeof(uint64_t), [&gen](void* host) { *static_cast<uint64_t*>(host) = gen.next_u64(); }));
  const int64_t n = mask.numel();
  if (n == 0) return;
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(mask.dtype(), "dropout", [&] {
    using T = scalar_t;
    dropout_kernel<T><<<blocks_for((n + 3) / 4), kThreads, 0, compute_stream()>>>(
        key, ratio, compute_t<T>(1.0 / (1.0 - ratio)), elements<T>(mask), n);
    CHAINER_CUDA_CHECK_LAUNCH(dropout_kernel);
  });
}

}  // namespace chainer::cuda
