// Matrix products through cuBLAS, on the calling thread's handle for its current device (the
// policy: core/cuda/blas_handles.h), bound to the device's compute stream with a workspace from
// the caching allocator. FP32 products compute in FP32 unless TF32 is allowed (core/device/cuda.h,
// set_allow_tf32). Float16 and bfloat16 products (cublasGemmEx) read half, compute in FP32 on
// the tensor cores and write half, each output rounded once, as the CPU's (core/cpu/gemm.cpp), or
// float32 (the sums, for a C of float32: core/ops/kernel_list.def): the handles forbid cuBLAS's
// reduced-precision reductions, which would add split-K partial sums in the half output type.
#include <cublas_v2.h>
#include <library_types.h>

#include "core/device/cuda.h"
#include "core/cuda/blas_handles.h"
#include "core/cuda/common.cuh"
#include "core/cuda/kernels.h"
#include "core/cuda/runtime.h"

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

cublasHandle_t as_cublas(BlasHandlePool::Handle handle) { return static_cast<cublasHandle_t>(handle); }

cudaStreamCaptureMode to_cuda(BlasHandlePool::CaptureMode mode) {
  switch (mode) {
    case BlasHandlePool::CaptureMode::Global: return cudaStreamCaptureModeGlobal;
    case BlasHandlePool::CaptureMode::ThreadLocal: return cudaStreamCaptureModeThreadLocal;
    case BlasHandlePool::CaptureMode::Relaxed: return cudaStreamCaptureModeRelaxed;
  }
  return cudaStreamCaptureModeGlobal;
}

BlasHandlePool::CaptureMode from_cuda(cudaStreamCaptureMode mode) {
  switch (mode) {
    case cudaStreamCaptureModeThreadLocal: return BlasHandlePool::CaptureMode::ThreadLocal;
    case cudaStreamCaptureModeRelaxed: return BlasHandlePool::CaptureMode::Relaxed;
    default: return BlasHandlePool::CaptureMode::Global;
  }
}

// The pool's calls, forwarded to cuBLAS, the CUDA runtime and the caching allocator.
// The math mode of a handle: FP32 or TF32 for float32 products, and for half ones always FP32
// accumulation to the end (no split-K reduction in the output's precision).
cublasMath_t math_mode(bool tf32) {
  return cublasMath_t((tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) |
                      CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
}

class Cublas final : public BlasHandlePool::Native {
 public:
  BlasHandlePool::Handle create() override {
    cublasHandle_t handle = nullptr;
    CHAINER_CUBLAS_CHECK(cublasCreate(&handle));
    CHAINER_CUBLAS_CHECK(cublasSetMathMode(handle, math_mode(false)));  // the pool's "FP32" state of a new handle
    return handle;
  }
  void set_stream(BlasHandlePool::Handle handle, BlasHandlePool::Stream stream) override {
    CHAINER_CUBLAS_CHECK(cublasSetStream(as_cublas(handle), static_cast<cudaStream_t>(stream)));
  }
  void set_workspace(BlasHandlePool::Handle handle, void* workspace, size_t bytes) override {
    CHAINER_CUBLAS_CHECK(cublasSetWorkspace(as_cublas(handle), workspace, bytes));
  }
  void set_tf32(BlasHandlePool::Handle handle, bool tf32) override {
    CHAINER_CUBLAS_CHECK(cublasSetMathMode(as_cublas(handle), math_mode(tf32)));
  }
  BlasHandlePool::CaptureMode exchange_capture_mode(BlasHandlePool::CaptureMode mode) override {
    cudaStreamCaptureMode m = to_cuda(mode);
    CHAINER_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&m));
    return from_cuda(m);
  }
  std::shared_ptr<void> allocate_workspace(int device, BlasHandlePool::Stream stream, size_t bytes) override {
    // The runtime's blocks are for the device's compute stream, the only one products run on.
    CHAINER_ASSERT(stream == static_cast<BlasHandlePool::Stream>(compute_stream()),
                   "a cuBLAS workspace asked for a stream other than the compute stream");
    return chainer_cuda_runtime()->allocate(device, bytes);
  }
};

cublasHandle_t handle() {
  static BlasHandlePool* pool = new BlasHandlePool(std::make_unique<Cublas>());  // never destroyed (see its header)
  return as_cublas(pool->get(current_device_index(), compute_stream(), allow_tf32()));
}

// cuBLAS's type of the half dtypes.
cudaDataType_t half_type(DType dtype) { return dtype == DType::Float16 ? CUDA_R_16F : CUDA_R_16BF; }
// C's type for half operands of type T: theirs, or float32 (the sums, kernel_list.def).
cudaDataType_t c_type(DType c, cudaDataType_t t) { return c == DType::Float32 ? CUDA_R_32F : t; }

}  // namespace

void prepare_blas_handle() { handle(); }

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
  if (is_half(a.dtype())) {  // alpha and beta are float for the FP32 compute type
    const float al = float(alpha), be = float(beta);
    const cudaDataType_t t = half_type(a.dtype()), tc = c_type(c.dtype(), t);
    CHAINER_CUBLAS_CHECK(cublasGemmEx_64(handle(), op_b, op_a, n, m, k, &al, b.raw_data(), t, ldb, a.raw_data(), t,
                                         lda, &be, c.raw_data(), tc, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    count_library_launch();
  } else if (c.dtype() == DType::Float32) {
    const float al = float(alpha), be = float(beta);
    CHAINER_CUBLAS_CHECK(cublasSgemm_64(handle(), op_b, op_a, n, m, k, &al, b.data<float>(), ldb, a.data<float>(), lda,
                                        &be, c.data<float>(), n));
    count_library_launch();
  } else {
    CHAINER_CUBLAS_CHECK(cublasDgemm_64(handle(), op_b, op_a, n, m, k, &alpha, b.data<double>(), ldb,
                                        a.data<double>(), lda, &beta, c.data<double>(), n));
    count_library_launch();
  }
}

// One strided-batched cuBLAS call when each group holds one product (matmul over batches; a
// batch axis of 1 is a stride of 0); otherwise each group's products in order, the first with
// BETA and the rest adding to it, as the CPU's.
void batched_gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta,
                  Tensor& c) {
  const int64_t batch = std::max(a.size(0), b.size(0)), groups = c.size(0);
  const int64_t m = c.size(1), n = c.size(2), k = trans_a ? a.size(1) : a.size(2);
  if (groups == 0 || m == 0 || n == 0) return;
  if (groups != batch || k == 0) {
    for (int64_t g = 0; g < groups; ++g) {
      Tensor cg = c[g];
      for (int64_t i = g * batch / groups; i < (g + 1) * batch / groups; ++i)
        gemm(a[a.size(0) == 1 ? 0 : i], trans_a, b[b.size(0) == 1 ? 0 : i], trans_b, alpha,
             i == g * batch / groups ? beta : 1.0, cg);
    }
    return;
  }
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t lda = std::max<int64_t>(a.size(2), 1), ldb = std::max<int64_t>(b.size(2), 1);
  const int64_t stride_a = a.size(0) == 1 ? 0 : a.strides()[0], stride_b = b.size(0) == 1 ? 0 : b.strides()[0];
  if (is_half(a.dtype())) {
    const float al = float(alpha), be = float(beta);
    const cudaDataType_t t = half_type(a.dtype()), tc = c_type(c.dtype(), t);
    CHAINER_CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(handle(), op_b, op_a, n, m, k, &al, b.raw_data(), t, ldb,
                                                       stride_b, a.raw_data(), t, lda, stride_a, &be, c.raw_data(), tc,
                                                       n, c.strides()[0], batch, CUBLAS_COMPUTE_32F,
                                                       CUBLAS_GEMM_DEFAULT));
  } else if (c.dtype() == DType::Float32) {
    const float al = float(alpha), be = float(beta);
    CHAINER_CUBLAS_CHECK(cublasSgemmStridedBatched_64(handle(), op_b, op_a, n, m, k, &al, b.data<float>(), ldb,
                                                      stride_b, a.data<float>(), lda, stride_a, &be, c.data<float>(),
                                                      n, c.strides()[0], batch));
  } else {
    CHAINER_CUBLAS_CHECK(cublasDgemmStridedBatched_64(handle(), op_b, op_a, n, m, k, &alpha, b.data<double>(), ldb,
                                                      stride_b, a.data<double>(), lda, stride_a, &beta,
                                                      c.data<double>(), n, c.strides()[0], batch));
  }
  count_library_launch();
}

}  // namespace chainer::cuda
