// Eigen's matrix product, compiled once for baseline x86-64 and shared by every kernel family
// (core/cpu/family.h): the generic family's products, and float64's (gradient checks) in all.
#pragma once
#include "core/tensor/tensor.h"

namespace chainer::cpu {

// C = alpha op(A) op(B) + beta C: the contract of the gemm kernel (core/ops/kernels.h), any float dtype.
void eigen_gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c);

}  // namespace chainer::cpu
