// CPU kernels behind core/ops.h, collected in the CPU kernel table (core/kernels.h states the
// contract: arguments already checked, outputs preallocated and contiguous). Files:
// elementwise.cpp, reduce.cpp, gemm.cpp (+ gemm_eigen.cpp), softmax.cpp, nn.cpp, update.cpp,
// indexing.cpp, conv.cpp, pooling.cpp, normalization.cpp.
#pragma once
#include <string>
#include <vector>

#include "core/kernels.h"

namespace chainer::cpu {

#include "core/kernel_functions.inc"

// Eigen's product: the fallback of gemm (float64, CPUs without AVX-512, CHAINER_GEMM=eigen).
void eigen_gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c);
// Which float32 path gemm takes: "packed-avx512" or "eigen".
const char* gemm_backend();
// The packed GEMM's blocking on this CPU, "KC 256, CW 128" (chosen from its caches: gemm.cpp).
std::string gemm_blocking();

}  // namespace chainer::cpu
