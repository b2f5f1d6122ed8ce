// Matrix products through cuBLAS, one handle per device bound to its compute stream. FP32
// products compute in FP32 unless TF32 is allowed (core/cuda.h, set_allow_tf32).
#include <cublas_v2.h>

#include <mutex>

#include "core/cuda.h"
#include "core/cuda/common.cuh"
#include "core/cuda/kernels.h"

#define CHAINER_CUBLAS_CHECK(call)                                                                    \
  do {                                                                                                \
    const cublasStatus_t chainer_status_ = (call);                                                    \
    if (chainer_status_ != CUBLAS_STATUS_SUCCESS)                                                     \
      throw ::chainer::Error(::chainer::str("cuBLAS error: ", #call, " failed: ",                     \
                                            cublasGetStatusString(chainer_status_), " at ", __FILE__, \
                                            ":", __LINE__));                                          \
  } while (0)

namespace chainer::cuda {

namespace {
// A workspace of our own: without one cuBLAS allocates on first use with cudaMalloc, which a
// captured CUDA graph cannot do. 32 MiB is what cuBLAS recommends for Hopper.
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

struct Handle {
  cublasHandle_t handle = nullptr;
  bool tf32 = false;
};
Handle g_handles[64];
std::mutex g_mutex;

cublasHandle_t handle() {
  const int device = current_device_index();
  std::lock_guard<std::mutex> lock(g_mutex);
  Handle& h = g_handles[device];
  if (!h.handle) {
    CHAINER_CUBLAS_CHECK(cublasCreate(&h.handle));
    void* workspace = nullptr;
    cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;  // creation may happen inside a capture
    CHAINER_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&relaxed));
    const cudaError_t status = cudaMalloc(&workspace, kWorkspaceBytes);
    CHAINER_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&relaxed));
    CHAINER_CUDA_CHECK(status);
    CHAINER_CUBLAS_CHECK(cublasSetWorkspace(h.handle, workspace, kWorkspaceBytes));
    CHAINER_CUBLAS_CHECK(cublasSetMathMode(h.handle, CUBLAS_DEFAULT_MATH));
  }
  if (h.tf32 != allow_tf32()) {
    h.tf32 = allow_tf32();
    CHAINER_CUBLAS_CHECK(cublasSetMathMode(h.handle, h.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  }
  CHAINER_CUBLAS_CHECK(cublasSetStream(h.handle, compute_stream()));
  return h.handle;
}
}  // namespace

// Row-major C (m, n) is column-major C^T (n, m) = op(B)^T op(A)^T: cuBLAS multiplies B's view by
// A's view. A row-major (r, c) array read column-major is its transpose with leading dimension c,
// so each operand keeps its flag and its row length as leading dimension.
void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c) {
  const int64_t m = c.size(0), n = c.size(1), k = trans_a ? a.size(0) : a.size(1);
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: C = beta C, without relying on how cuBLAS treats k = 0
    if (beta == 0.0) fill(c, 0.0);
    else affine(c, beta, 0.0, c);
    return;
  }
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t lda = std::max<int64_t>(a.size(1), 1), ldb = std::max<int64_t>(b.size(1), 1);
  if (c.dtype() == DType::Float32) {
    const float al = float(alpha), be = float(beta);
    CHAINER_CUBLAS_CHECK(cublasSgemm_64(handle(), op_b, op_a, n, m, k, &al, b.data<float>(), ldb, a.data<float>(), lda,
                                        &be, c.data<float>(), n));
    CHAINER_CUDA_CHECK_LAUNCH(cublasSgemm);
  } else {
    CHAINER_CUBLAS_CHECK(cublasDgemm_64(handle(), op_b, op_a, n, m, k, &alpha, b.data<double>(), ldb,
                                        a.data<double>(), lda, &beta, c.data<double>(), n));
    CHAINER_CUDA_CHECK_LAUNCH(cublasDgemm);
  }
}

}  // namespace chainer::cuda
