/// @file
/// CUDA devices, as chainer.backends.cuda: `chainer::cuda::get_device(id).use()` makes a device
/// current on this thread, `Link::to_gpu()` moves a model there, and ops on its tensors run there.
///
/// The CUDA code lives in its own library, libchainer_cuda.so, loaded the first time a device is
/// asked for (any function below): a CPU-only run loads no CUDA library at all, and a build with
/// CUDA runs on machines without a driver or GPU, where device_count() is 0 and
/// unavailable_reason() says why. Each device has one compute stream; ops queue kernels on it and
/// return, and the host waits only where it reads a value (item(), to_vector(), Tensor::to(cpu)).
/// Device memory comes from one caching allocator (core/memory/caching_allocator.h), host-to-device
/// copies go through pinned staging buffers.
///
/// Device errors: a kernel that finds a bad input it cannot report at once (a label out of range
/// in softmax_cross_entropy) records it on the device; the next host read or synchronize() throws
/// chainer::Error with the op's message, as the CPU would have.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/device/device.h"
#include "core/util/error.h"

namespace chainer::cuda {

/// Whether this build has CUDA support compiled in (meson option cuda).
bool built_with_cuda();
/// Devices usable by this process: 0 without CUDA support, driver or GPU.
int device_count();
bool is_available();  ///< whether `device_count() > 0`
/// Why device_count() is 0 ("this build has no CUDA support", "no CUDA-capable device is detected", ...).
std::string unavailable_reason();

/// What this machine's CUDA is, for diagnostics (apps/chainermn_check prints it). Versions are
/// encoded as CUDA encodes them: 1000 * major + 10 * minor (12040 is 12.4).
struct RuntimeVersions {
  int driver = 0;   ///< the newest CUDA the installed driver supports (cudaDriverGetVersion); 0: no driver
  int runtime = 0;  ///< the CUDA runtime libchainer_cuda.so runs on (cudaRuntimeGetVersion)
};
/// The CUDA versions of this machine. Works without a device; throws chainer::Error saying why
/// when the CUDA support library cannot be loaded (always in a build without CUDA).
RuntimeVersions versions();
/// What a CUDA device is, from device_properties().
struct DeviceProperties {
  std::string name;         ///< the model: "NVIDIA H100 80GB HBM3"
  int major = 0;  ///< compute capability, major (9 for H100)
  int minor = 0;  ///< compute capability, minor (0 for H100)
  size_t total_memory_bytes = 0;  ///< the device's memory
  int multiprocessors = 0;  ///< streaming multiprocessors
  std::string pci_bus_id;   ///< the PCI address: "0000:17:00.0"
};
/// The properties of device ID. Throws chainer::Error when ID is not a usable device, as
/// get_device does. Reading them does not make the device current or allocate on it.
DeviceProperties device_properties(int id);

/// A CUDA device, as cupy's Device: get_device(1).use().
class DeviceHandle {
 public:
  explicit DeviceHandle(int id) : id_(id) {}  ///< device ID (not checked: get_device checks)
  int id() const { return id_; }  ///< the device number
  Device device() const { return Device::cuda(id_); }  ///< as a Device
  void use() const;          ///< the current device of this thread from now on
  void synchronize() const;  ///< waits for everything queued on the device (see cuda::synchronize)
 private:
  int id_;
};
/// A handle on device ID, as cupy.cuda.Device(id). Throws chainer::Error when ID is not a usable device
/// (naming the count, or why there are none).
DeviceHandle get_device(int id);
/// This thread's current device (0 until a DeviceHandle::use()).
int current_device();
/// Waits for the current device's queued work (the compute stream's and other libraries' streams
/// on it: the NCCL communicators'), then reports any recorded device error.
void synchronize();

namespace detail {
/// Lets synchronize() and DeviceHandle::synchronize() wait for streams other than the compute
/// stream: the NCCL communicators (distributed/communicators/nccl_collectives.h) register a
/// waiter for their own stream. Each call of WAIT(device) returns once that library's work on
/// the device has completed (or throws). Returns an id for remove_stream_waiter.
int add_stream_waiter(std::function<void(int device)> wait);
/// Stops calling the waiter ID; returns after any call of it in progress.
void remove_stream_waiter(int id);
/// Calls every registered waiter for DEVICE, as synchronize() does after it has waited for the
/// compute stream. Needs no CUDA device.
void wait_for_other_streams(int device);
}  // namespace detail

/// The caching allocator's figures for a device, from memory_stats().
struct MemoryStats {
  size_t in_use_bytes = 0;     ///< blocks handed out and not yet freed
  size_t peak_in_use_bytes = 0;  ///< the most in_use_bytes so far (or since reset_peak_memory_stats)
  size_t reserved_bytes = 0;   ///< obtained from cudaMalloc and not yet returned
  size_t cached_bytes = 0;     ///< reserved but free, ready for reuse
  int64_t device_mallocs = 0;  ///< cudaMalloc calls that succeeded so far
  int64_t device_frees = 0;    ///< cudaFree calls so far
  int64_t allocations = 0;     ///< requests served
  int64_t cache_hits = 0;      ///< of those, served without cudaMalloc
};
/// The caching allocator's figures for DEVICE (-1: the current one).
MemoryStats memory_stats(int device = -1);
/// Restarts peak_in_use_bytes of DEVICE (-1: the current one) from what is in use now.
void reset_peak_memory_stats(int device = -1);
/// Returns every cached, unused block of every device to the driver.
void empty_cache();

/// Work queued so far by this process: kernels launched outside graph capture (a cuBLAS call counts
/// as one) and CUDA graph launches. Benchmarks divide them by the steps.
struct LaunchCounts {
  int64_t kernels = 0;  ///< kernels launched outside graph capture
  int64_t graphs = 0;   ///< CUDA graph launches
};
/// The work queued so far by this process.
LaunchCounts launch_counts();

/// Lets matrix products in float32 use TF32 tensor cores (10-bit mantissa inputs) when ALLOW.
/// Off by default: results then match the CPU to float32 accuracy.
void set_allow_tf32(bool allow);
/// Whether float32 matrix products may use TF32 (set_allow_tf32).
bool allow_tf32();

// ---- Whole-step CUDA graphs (used by training::StandardUpdater) ----

/// Thrown while a step is being captured when something in it cannot be captured: the host reads
/// a device value, or work goes to another device. The message says what.
class CaptureError : public Error {
 public:
  using Error::Error;
};

/// An executable CUDA graph of the work one call of STEP queued on DEVICE's compute stream.
/// Memory allocated while capturing comes from a pool private to the graph, so every replay
/// writes the same addresses, and tensors created during the capture (gradients, the loss) hold
/// each replay's results. Scalars that kernels read through step-scalar functions (core/ops/kernels.h)
/// are recomputed and uploaded before every replay.
class Graph {
 public:
  /// Captures STEP (the host code runs once; its kernels are recorded, not run). Throws
  /// CaptureError when the step cannot be captured, after discarding the partial capture.
  static std::unique_ptr<Graph> capture(Device device, const std::function<void()>& step);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  /// Runs the captured work again on the device (asynchronously).
  void replay();
  Device device() const { return device_; }  ///< the device the graph runs on

 private:
  Graph(Device device, std::shared_ptr<void> exec) : device_(device), exec_(std::move(exec)) {}
  Device device_;
  std::shared_ptr<void> exec_;
};

}  // namespace chainer::cuda
