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
// The packed GEMM's blocking: the depth of a packed slice (KC) and the columns of C per work
// chunk (CW), chosen at run time from the CPU's caches as OpenBLAS and oneDNN choose per
// microarchitecture. The Zen 5 machines here (48 KiB L1d, 1 MiB L2) get 256 and 128, the blocking
// measured best there; a Zen 4 (32 KiB L1d) gets 192 and 160.
struct GemmBlocking {
  int64_t kc, cw;
};
// The blocking for an L1d and an L2 of these sizes; KC_OVERRIDE (CHAINER_GEMM_KC, for measuring;
// null or empty: none) sets KC, a multiple of 16 from 16 to 512, else chainer::Error.
GemmBlocking gemm_blocking_for(int64_t l1d_bytes, int64_t l2_bytes, const char* kc_override);
// This CPU's blocking as text, "KC 256, CW 128" (Eigen's where the packed GEMM is not built).
std::string gemm_blocking();

}  // namespace chainer::cpu
