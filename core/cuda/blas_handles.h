// Which cuBLAS handle a matrix product uses, and how it is prepared (core/cuda/gemm.cu). The
// policy is written against an injected Native interface, plain C++ with no CUDA type, so it is
// tested on the host against a fake (tests/core/cuda/test_blas_handles.cpp), as the caching allocator's
// policy is; gemm.cu plugs in cuBLAS and the caching allocator. A fake library loaded in place of
// libcublas would also have to fake the CUDA runtime the plugin starts with; the interface is
// six calls. The rules, as PyTorch's CuBLASHandlePool and getCurrentCUDABlasHandle:
//
// - One handle per (device, thread). A handle holds its stream, workspace and math mode, so
//   threads sharing one race between setting them and the product that uses them. A thread's
//   handles go back to the pool when the thread ends and are handed to the next thread that asks;
//   they are never destroyed (at exit the CUDA runtime may already be gone).
// - Created in relaxed capture mode. A thread's first product may come inside a graph capture,
//   and cublasCreate makes CUDA calls that the default (global) capture mode forbids there: the
//   call fails and the capture is invalidated. (The runtime makes the capturing thread's handle
//   before a capture begins, prepare_blas_handle below; this rule covers any other way in.)
// - The workspace is set again after every cublasSetStream, which resets a handle's workspace to
//   cuBLAS's default pool. Without it our workspace is dead weight: cuBLAS allocates its own with
//   cudaMallocAsync, outside the caching allocator, which adds allocation nodes to every captured
//   graph (and on CUDA 12.0 and 12.1 calls cudaMalloc while capturing, which fails the capture).
// - The workspace comes from the caching allocator, one block per handle and stream (a handle's
//   products on one stream run in order, so they never share it at the same time); it is kept
//   for the handle's life, so a steady step allocates nothing and a graph may use it.
// The same pool holds cuDNN's handles (core/cuda/conv.cu), which have no math mode and take their
// workspace per call: a pool made with workspace_bytes 0 keeps no workspace and never sets one.
// Thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace chainer::cuda {

class BlasHandlePool {
 public:
  using Handle = void*;  // opaque: a cublasHandle_t
  using Stream = void*;  // opaque: a cudaStream_t
  // The calling thread's stream capture mode (cudaStreamCaptureMode).
  enum class CaptureMode { Global, ThreadLocal, Relaxed };

  // The library's calls, for the calling thread's current device.
  class Native {
   public:
    virtual ~Native() = default;
    virtual Handle create() = 0;  // cublasCreate
    virtual void set_stream(Handle handle, Stream stream) = 0;
    virtual void set_workspace(Handle handle, void* workspace, size_t bytes) = 0;
    virtual void set_tf32(Handle handle, bool tf32) = 0;  // cublasSetMathMode
    // cudaThreadExchangeStreamCaptureMode: sets MODE and returns the mode it replaced.
    virtual CaptureMode exchange_capture_mode(CaptureMode mode) = 0;
    // A block of BYTES for work on STREAM of DEVICE, given back when the last owner drops it.
    virtual std::shared_ptr<void> allocate_workspace(int device, Stream stream, size_t bytes) = 0;
  };

  // 32 MiB: what cuBLAS recommends for Hopper (its own default pool is smaller). 0: none.
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

  explicit BlasHandlePool(std::unique_ptr<Native> native, size_t workspace_bytes = kWorkspaceBytes);
  ~BlasHandlePool();  // handles still leased are forgotten, not destroyed (see above)
  BlasHandlePool(const BlasHandlePool&) = delete;
  BlasHandlePool& operator=(const BlasHandlePool&) = delete;

  // The calling thread's handle for DEVICE (its current device), bound to STREAM with its
  // workspace set, computing FP32 products in TF32 when TF32 is true. Valid on this thread until
  // the next call.
  Handle get(int device, Stream stream, bool tf32);

  int64_t handles_created() const;  // by cublasCreate, over the pool's life
  int64_t handles_idle() const;     // given back by threads that ended, ready for reuse

 private:
  struct Entry;
  struct State;
  struct Leases;
  static Leases& leases();  // the calling thread's
  Entry* lease(int device);
  std::shared_ptr<State> state_;
};

// The calling thread's cuBLAS handle for its current device, made now if it has none, bound to
// the compute stream with its workspace (core/cuda/gemm.cu). Called before a graph capture
// begins (core/cuda/runtime.cu), so that the workspace comes from the caching allocator's
// ordinary pool rather than the graph's, and the handle outlives the graph.
void prepare_blas_handle();

}  // namespace chainer::cuda
