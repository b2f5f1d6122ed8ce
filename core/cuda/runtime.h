// What libchainer asks of the CUDA plugin, libchainer_cuda.so (core/device/cuda.h says why it is a
// plugin). The plugin exports chainer_cuda_runtime(), which returns the one Runtime; core/device/cuda.cpp
// loads it on first use and is the only caller. No CUDA type appears here, so libchainer
// compiles without the CUDA headers.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "core/device/cuda.h"
#include "core/ops/kernels.h"

namespace chainer::cuda {

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual const Kernels& kernels() = 0;

  // Devices: how many (0 with WHY_NONE set when none can be used); the calling thread's
  // current device is set with set_device before any call naming no device.
  virtual int device_count(std::string& why_none) = 0;
  virtual void set_device(int device) = 0;
  virtual void synchronize(int device) = 0;  // then throws a recorded device error, if any

  // Memory. allocate() returns a block of the caching allocator for use on DEVICE's compute
  // stream; dropping the last reference gives it back.
  virtual std::shared_ptr<void> allocate(int device, size_t bytes) = 0;
  virtual MemoryStats memory_stats(int device) = 0;
  virtual void reset_peak_memory_stats(int device) = 0;
  virtual void empty_cache() = 0;

  // Copies between host memory and DEVICE's memory, ordered on its compute stream.
  // copy_from_host returns at once (SRC is staged through pinned memory first);
  // copy_to_host waits for the stream and then for the copy, and throws CaptureError while
  // the stream is being captured. copy_between copies between two devices' memory.
  virtual void copy_from_host(int device, void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(int device, void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_between(int dst_device, void* dst, int src_device, const void* src, size_t bytes) = 0;

  virtual LaunchCounts launch_counts() = 0;

  // DEVICE's compute stream, as a cudaStream_t, for libraries that order streams of their own
  // against it (the NCCL communicators: distributed/communicators/nccl_backend.h).
  virtual void* native_stream(int device) = 0;

  // Graphs (core/device/cuda.h, Graph): capture on DEVICE's compute stream from this thread. Meanwhile
  // other threads' calls that would queue work on DEVICE throw chainer::Error.
  virtual void begin_capture(int device) = 0;
  virtual std::shared_ptr<void> end_capture(int device) = 0;  // the executable graph and what it needs
  virtual void abort_capture(int device) = 0;                 // discards this thread's capture that failed
  virtual void replay(const std::shared_ptr<void>& graph) = 0;

  // Diagnostics (core/device/cuda.h): versions() works without a device; device_properties() needs a
  // valid DEVICE but neither makes it current nor sets it up.
  virtual RuntimeVersions versions() = 0;
  virtual DeviceProperties device_properties(int device) = 0;
};

namespace detail {
// The loaded runtime with DEVICE made current on this thread; throws chainer::Error naming the
// device when it cannot be used (no CUDA support, no such device).
Runtime& runtime(int device);
}  // namespace detail

}  // namespace chainer::cuda

extern "C" chainer::cuda::Runtime* chainer_cuda_runtime();
