// Random tensors from Philox: dropout masks and normal samples. The kernels are in
// core/cpu/dropout.cpp and core/cuda/dropout.cu.
#include "core/ops/ops.h"

#include <cmath>

#include "core/ops/kernels.h"

namespace chainer::ops {

Tensor dropout_mask(const Shape& shape, double ratio, DType dtype, Device device, Generator& gen) {
  if (!(ratio >= 0.0 && ratio < 1.0)) throw Error(str("dropout: ratio ", ratio, " is outside [0, 1)"));
  if (!is_floating(dtype))
    throw Error(str("dropout: dtype ", dtype_name(dtype), " is not supported (expected float32 or float64)"));
  Tensor mask = Tensor::empty(shape, dtype, device);
  kernels_for(device).dropout_mask(ratio, gen, mask);
  return mask;
}

Tensor random_normal(const Shape& shape, double mean, double stddev, DType dtype, Device device, Generator& gen) {
  if (!(stddev >= 0.0) || !std::isfinite(stddev) || !std::isfinite(mean))
    throw Error(str("random_normal: mean ", mean, " and stddev ", stddev,
                    " are not valid (expected finite values and stddev >= 0)"));
  if (!is_floating(dtype))
    throw Error(str("random_normal: dtype ", dtype_name(dtype), " is not supported (expected float32 or float64)"));
  Tensor out = Tensor::empty(shape, dtype, device);
  kernels_for(device).random_normal(mean, stddev, gen, out);
  return out;
}

}  // namespace chainer::ops
