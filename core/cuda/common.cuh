// What every CUDA kernel file of the plugin shares: the check macros, the compute stream, launch
// sizes, strided indexing, per-step scalars and device-side error reports (the functions here
// forward to the plugin's DeviceRuntime, core/cuda/device_runtime.h). Kernels keep the
// contract of core/ops/kernels.h: arguments are checked, outputs preallocated, and nothing here
// waits for the device.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "core/cuda/device_error.h"
#include "core/util/error.h"
#include "core/tensor/tensor.h"

namespace chainer::cuda {

// ---- Errors: every CUDA call goes through CHAINER_CUDA_CHECK, naming the call and file:line ----

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);
void count_launch();  // one kernel queued (not counted while a graph is being captured)

}  // namespace chainer::cuda

#define CHAINER_CUDA_CHECK(call)                                                              \
  do {                                                                                        \
    const cudaError_t chainer_status_ = (call);                                               \
    if (chainer_status_ != cudaSuccess)                                                       \
      ::chainer::cuda::throw_cuda_error(chainer_status_, #call, __FILE__, __LINE__);          \
  } while (0)

// After one of our own <<<...>>> launches: a bad configuration or a sticky error from an
// earlier kernel; the launch is counted (core/device/cuda.h, launch_counts). Not after a library call:
// see count_library_launch below.
#define CHAINER_CUDA_CHECK_LAUNCH(kernel_name)                  \
  do {                                                          \
    CHAINER_CUDA_CHECK(cudaGetLastError() /* kernel_name */);   \
    ::chainer::cuda::count_launch();                            \
  } while (0)

namespace chainer::cuda {

// After a cuBLAS or cuDNN call that queued work, once its returned status was checked (each
// library's check macro names the call and file:line): counts the launch, and checks nothing
// more. The status is the library's verdict; cudaGetLastError here would also report, and
// clear, an error the library left behind from a CUDA call of its own that it handled (a
// failed probe), throwing for a call that succeeded.
inline void count_library_launch() { count_launch(); }

}  // namespace chainer::cuda

namespace chainer::cuda {

// ---- Streams and launches ----

// The compute stream of this thread's current device (set by Runtime::set_device): every kernel
// and copy of an op goes there, so ops are ordered without any host wait.
cudaStream_t compute_stream();
int current_device_index();

constexpr int kThreads = 256;
// Blocks of kThreads covering N elements, capped (kernels loop with a grid stride past the cap).
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  const int64_t b = (n + threads - 1) / threads;
  return unsigned(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

#define CHAINER_GRID_STRIDE_LOOP(i, n)                                                          \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);                    \
       i += int64_t(blockDim.x) * gridDim.x)

// A device copy of BYTES at SRC (host memory), staged through pinned memory; returns at once.
// The copy stays valid for work queued on the compute stream while the returned owner lives
// (dropping it right after the launches that read it is safe: the caching allocator reuses
// blocks in stream order). Inside a captured step the data is captured as it is now.
std::shared_ptr<void> upload(const void* src, size_t bytes);

// ---- Strided indexing: a tensor's layout, passed to kernels by value ----

constexpr int kMaxDims = 8;
struct Layout {
  int nd = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};  // in elements

  // The element offset of the I-th element in row-major order.
  __host__ __device__ int64_t offset(int64_t i) const {
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t q = i / shape[d];
      off += (i - q * shape[d]) * strides[d];
      i = q;
    }
    return off;
  }
};
// T's layout; with OUT_SHAPE given, seen through a broadcast to it (stride 0 on broadcast axes).
// Throws chainer::Error for more than kMaxDims dimensions.
Layout layout_of(const Tensor& t);
Layout broadcast_layout(const Tensor& t, const Shape& out_shape);

// ---- Per-step scalars (core/ops/kernels.h, UpdateScalarsFn) ----

// A device buffer of BYTES that FILL writes through a host pointer before the kernels that read
// it run: now, or, while a step is being captured into a CUDA graph, before every replay. Returns
// the device address to pass to those kernels. FILL must stay valid as long as the graphs. Costs
// one host-to-device copy (a replay's scalars together cost one: core/cuda/device_runtime.h).
const void* step_scalars(size_t bytes, std::function<void(void* host)> fill);

// ---- Device errors: bad inputs found by a kernel, reported at the next host read ----

// The record of the current device (device memory; read by the host at its next wait).
DeviceErrorRecord* device_error_record();

// Records the first error only (later ones would describe consequences of it).
__device__ inline void report_device_error(DeviceErrorRecord* r, int code, long long a, long long b, long long c,
                                           long long d) {
  if (atomicCAS(&r->code, 0, -1) == 0) {
    r->a = a, r->b = b, r->c = c, r->d = d;
    __threadfence();
    atomicExch(&r->code, code);
  }
}

}  // namespace chainer::cuda
