// The CUDA plugin's runtime logic (the Runtime of core/cuda/runtime.h), written against the CUDA
// calls of core/cuda/device_api.h: per-device state (compute stream, caching allocator, pinned
// staging, the device-error record, per-step scalars), copies, graph capture and replay. Plain
// C++: core/cuda/runtime.cu builds the plugin's one DeviceRuntime over the real CUDA runtime and
// keeps the kernels; tests/core/cuda/test_cuda_runtime.cpp builds others over a fake device. Every CUDA
// call goes through CHAINER_DEVICE_CHECK (the call and file:line in the message).
//
// Rules it keeps:
// - Device state is never destroyed (as PyTorch's allocator state). Tensors and static objects
//   free blocks during exit, after the CUDA runtime has shut down; tearing the state down then
//   fails, and a throw from a destructor ends the process (and hides a first error).
// - Nothing on a free path throws (freeing memory, a graph, a staging buffer): a failure there is
//   reported once through WARN and otherwise ignored.
// - The current device is CUDA's (cudaGetDevice), never a cached copy: another library may call
//   cudaSetDevice, and a kernel must go to the stream of the device it runs on.
// - Events are created and recorded with their stream's device current (CUDA requires the
//   same device), whichever device the caller has made current.
// - A capture is its thread's: while one thread captures a device, every call of another thread
//   that would queue work on that device's stream (memory, copies, scalars, kernel launches
//   through compute_stream, synchronize, replay) is refused with chainer::Error, since the work
//   would join the graph. The check is one atomic load at each call's start: a call of another
//   thread already under way when the capture begins is not stopped.
// - What a capture cannot do is done before it begins or after it ends: begin_capture first calls
//   PREPARE_CAPTURE (the CUDA libraries' handles are made there), then waits for the device;
//   during a capture no pinned memory is freed and no copy waited for or queried (the staging
//   pool passes its limit instead, and is trimmed once the capture is over).
// - Per-step scalars cost one copy: each eager call is one copy through an event-guarded pinned
//   ring; a replayed graph's scalars are refilled with one copy per replay (its scalars share
//   one device arena).
#pragma once
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/cuda/device_api.h"
#include "core/cuda/device_error.h"
#include "core/cuda/runtime.h"

namespace chainer::cuda {

// Throws for a CUDA call CALL (at FILE:LINE) that returned STATUS: CaptureError for what a
// graph cannot capture (the capture is over, the device stays usable), chainer::Error otherwise.
[[noreturn]] void throw_device_error(DeviceApi& cuda, int status, const char* call, const char* file, int line);

// Why the CUDA runtime refuses the driver: the runtime's version, the driver release it needs,
// and what the installed driver supports (versions encoded as 1000 * major + 10 * minor; a
// DRIVER of 0: none is installed).
std::string insufficient_driver_reason(int driver, int runtime);

class DeviceRuntime final : public Runtime {
 public:
  using Warn = std::function<void(const std::string& message)>;
  // What must be ready before a capture of DEVICE begins, for a capture cannot do it: creating a
  // library's handles (cuBLAS, cuDNN), which allocate and synchronize. begin_capture calls it
  // first, on the capturing thread with DEVICE current, before it waits for the device and
  // begins capturing; a throw from it fails begin_capture.
  using PrepareCapture = std::function<void(int device)>;
  static constexpr int kMaxDevices = 64;
  static constexpr size_t kRingBytes = size_t(1) << 20;  // eager per-step scalars in flight
  static constexpr int kRingSegments = 16;                // each guarded by one event
  static constexpr size_t kScalarAlign = 256;
  static constexpr size_t kArenaBytes = size_t(256) << 10;  // a graph's first scalar arena
  static constexpr size_t kMaxStagedBytes = size_t(64) << 20;  // larger host copies are not staged

  // Calls CUDA through CUDA (which must outlive this runtime); KERNELS is what kernels() returns.
  // WARN receives the first failure that could not be thrown (default: standard error).
  // PREPARE_CAPTURE (none by default) runs at the start of every begin_capture.
  DeviceRuntime(DeviceApi& cuda, const Kernels& kernels, Warn warn = {}, PrepareCapture prepare_capture = {});
  ~DeviceRuntime() override;  // leaves the device state alone (see above)
  DeviceRuntime(const DeviceRuntime&) = delete;
  DeviceRuntime& operator=(const DeviceRuntime&) = delete;

  const Kernels& kernels() override { return kernels_; }
  int device_count(std::string& why_none) override;
  void set_device(int device) override;
  void synchronize(int device) override;
  std::shared_ptr<void> allocate(int device, size_t bytes) override;
  MemoryStats memory_stats(int device) override;
  void reset_peak_memory_stats(int device) override;
  void empty_cache() override;
  void copy_from_host(int device, void* dst, const void* src, size_t bytes) override;
  void copy_to_host(int device, void* dst, const void* src, size_t bytes) override;
  void copy_between(int dst_device, void* dst, int src_device, const void* src, size_t bytes) override;
  LaunchCounts launch_counts() override;
  void* native_stream(int device) override;
  void begin_capture(int device) override;
  std::shared_ptr<void> end_capture(int device) override;
  void abort_capture(int device) override;
  void replay(const std::shared_ptr<void>& graph) override;
  RuntimeVersions versions() override;
  DeviceProperties device_properties(int device) override;

  // What the kernel files use (core/cuda/common.cuh forwards to these), for the current device.
  int current_device();
  void* compute_stream();
  void count_launch();  // a kernel was queued (not counted while capturing)
  DeviceErrorRecord* device_error_record();
  std::shared_ptr<void> upload(const void* src, size_t bytes);
  const void* step_scalars(size_t bytes, std::function<void(void* host)> fill);

  // Failures reported through WARN and ignored so far (the free paths).
  int64_t ignored_errors() const { return ignored_errors_; }

 private:
  class DeviceGuard;
  class RelaxedCaptureMode;
  class DeviceMemory;
  class StagingNative;
  class ScalarRing;
  struct CaptureRecord;
  struct DeviceState;

  DeviceState& state(int device);
  DeviceState& current() { return state(current_device()); }
  // The capture this thread runs on S (nullptr: none); throws chainer::Error naming OP while
  // another thread captures S.
  CaptureRecord* own_capture(DeviceState& s, const char* op);
  void wait_and_check(DeviceState& s);
  void destroy(CaptureRecord* record) noexcept;
  void trim_staging(DeviceState& s) noexcept;
  // A failure on a free path (a CUDA call's STATUS, or E while freeing FREEING): reported once
  // through WARN, cleared, never thrown.
  void ignore(int status, const char* call, const char* file, int line) noexcept;
  void ignore(const std::exception& e, const char* freeing) noexcept;

  DeviceApi& cuda_;
  const Kernels kernels_;
  Warn warn_;
  PrepareCapture prepare_capture_;
  std::atomic<DeviceState*> devices_[kMaxDevices] = {};
  std::mutex init_mutex_;
  std::atomic<int64_t> kernel_launches_{0}, graph_launches_{0}, ignored_errors_{0};
};

}  // namespace chainer::cuda
