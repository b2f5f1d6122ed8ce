// Matrix products of 2-D tensors and of batches of them: the shape checks of gemm, matmul and
// batched_matmul. The kernels are in core/cpu/gemm.cpp and core/cuda/gemm.cu.
#include "core/ops/ops.h"

#include <algorithm>

#include "core/ops/checks.h"
#include "core/ops/kernels.h"

namespace chainer::ops {

using detail::require_same_device;
using detail::require_same_dtype;
using detail::require_floating_or_half;

void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c) {
  const Device device = require_same_device("matmul", {&a, &b, &c});
  require_floating_or_half("matmul", a);
  require_same_dtype("matmul", a, b);
  if (!(is_half(a.dtype()) && c.dtype() == DType::Float32)) require_same_dtype("matmul", a, c);
  if (a.ndim() != 2 || b.ndim() != 2)
    throw Error(str("matmul: expected 2-D arrays, got shapes ", shape_str(a.shape()), " and ", shape_str(b.shape())));
  const int64_t m = trans_a ? a.size(1) : a.size(0), k = trans_a ? a.size(0) : a.size(1);
  const int64_t k2 = trans_b ? b.size(1) : b.size(0), n = trans_b ? b.size(0) : b.size(1);
  if (k != k2)
    throw Error(str("matmul: shapes ", shape_str(a.shape()), trans_a ? "^T" : "", " and ", shape_str(b.shape()),
                    trans_b ? "^T" : "", " are not aligned (", k, " != ", k2, ")"));
  if (c.shape() != Shape{m, n} || !c.is_contiguous())
    throw Error(str("matmul: output has shape ", shape_str(c.shape()), " but the product has shape ", shape_str({m, n})));
  kernels_for(device).gemm(a.contiguous(), trans_a, b.contiguous(), trans_b, alpha, beta, c);
}

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  const Device device = require_same_device("matmul", {&a, &b});
  if (a.ndim() != 2 || b.ndim() != 2)
    throw Error(str("matmul: expected 2-D arrays, got shapes ", shape_str(a.shape()), " and ", shape_str(b.shape())));
  Tensor c = Tensor::empty({trans_a ? a.size(1) : a.size(0), trans_b ? b.size(0) : b.size(1)}, a.dtype(), device);
  gemm(a, trans_a, b, trans_b, 1.0, 0.0, c);
  return c;
}

Tensor batched_matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  const Device device = require_same_device("matmul", {&a, &b});
  require_floating_or_half("matmul", a);
  require_same_dtype("matmul", a, b);
  if (a.ndim() != 3 || b.ndim() != 3)
    throw Error(str("matmul: expected 3-D arrays, got shapes ", shape_str(a.shape()), " and ", shape_str(b.shape())));
  const int64_t batch = std::max(a.size(0), b.size(0));
  if ((a.size(0) != batch && a.size(0) != 1) || (b.size(0) != batch && b.size(0) != 1))
    throw Error(str("matmul: batches of ", a.size(0), " and ", b.size(0), " matrices do not broadcast (shapes ",
                    shape_str(a.shape()), " and ", shape_str(b.shape()), ")"));
  const int64_t m = trans_a ? a.size(2) : a.size(1), k = trans_a ? a.size(1) : a.size(2);
  const int64_t k2 = trans_b ? b.size(2) : b.size(1), n = trans_b ? b.size(1) : b.size(2);
  if (k != k2)
    throw Error(str("matmul: shapes ", shape_str(a.shape()), trans_a ? "^T" : "", " and ", shape_str(b.shape()),
                    trans_b ? "^T" : "", " are not aligned (", k, " != ", k2, ")"));
  Tensor c = Tensor::empty({batch, m, n}, a.dtype(), device);
  if (batch > 0) kernels_for(device).batched_gemm(a.contiguous(), trans_a, b.contiguous(), trans_b, 1.0, 0.0, c);
  return c;
}

}  // namespace chainer::ops
