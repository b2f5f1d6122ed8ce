// The CUDA plugin's runtime (core/cuda/runtime.h): per-device state (compute stream, caching
// allocator, pinned staging buffers, device-error record), copies, per-step scalars and graph
// capture. Every CUDA call goes through CHAINER_CUDA_CHECK.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include "core/caching_allocator.h"
#include "core/cuda/common.cuh"
#include "core/cuda/kernels.h"
#include "core/cuda/runtime.h"

namespace chainer::cuda {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaErrorStreamCaptureUnsupported || status == cudaErrorStreamCaptureInvalidated ||
      status == cudaErrorStreamCaptureImplicit) {
    cudaGetLastError();  // not sticky: the capture is abandoned, the device stays usable
    throw CaptureError(str("a CUDA graph cannot capture ", call, " (", cudaGetErrorString(status), ") at ", file, ":", line));
  }
  throw Error(str("CUDA error: ", call, " failed: ", cudaGetErrorString(status), " (", cudaGetErrorName(status), ") at ",
                  file, ":", line));
}

namespace {

// cudaMalloc is not stream-ordered, so capture forbids it unless the thread relaxes its capture
// mode for the call (PyTorch's allocator does the same): the private pool grows while capturing.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() { CHAINER_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode_)); }
  ~RelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&mode_); }

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

class CudaMemory : public CachingAllocator::Native {
 public:
  void* allocate(size_t bytes) override {
    RelaxedCaptureMode relaxed;
    void* p = nullptr;
    const cudaError_t status = cudaMalloc(&p, bytes);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear it: the allocator frees its cache and retries
      return nullptr;
    }
    CHAINER_CUDA_CHECK(status);
    return p;
  }
  void free(void* ptr) override {
    RelaxedCaptureMode relaxed;
    CHAINER_CUDA_CHECK(cudaFree(ptr));
  }
  CachingAllocator::Event record_event(CachingAllocator::Stream stream) override {
    cudaEvent_t e;
    CHAINER_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    CHAINER_CUDA_CHECK(cudaEventRecord(e, static_cast<cudaStream_t>(stream)));
    return e;
  }
  bool event_done(CachingAllocator::Event event) override {
    const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (status == cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    CHAINER_CUDA_CHECK(status);
    return true;
  }
  void destroy_event(CachingAllocator::Event event) override {
    CHAINER_CUDA_CHECK(cudaEventDestroy(static_cast<cudaEvent_t>(event)));
  }
};

// Pinned host buffers for host-to-device copies: the copy then runs asynchronously (a copy from
// pageable memory may wait for the stream). A buffer is reused once the copy that read it has
// completed (an event recorded after it); buffers read by a captured graph stay with the graph.
class PinnedStaging {
 public:
  struct Buffer {
    void* ptr = nullptr;
    size_t bytes = 0;
    cudaEvent_t done = nullptr;  // recorded after the last copy out of it
  };

  Buffer acquire(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->bytes < bytes) continue;
      if (it->done) {
        const cudaError_t status = cudaEventQuery(it->done);
        if (status == cudaErrorNotReady) {
          cudaGetLastError();
          continue;
        }
        CHAINER_CUDA_CHECK(status);
      }
      Buffer b = *it;
      free_.erase(it);
      return b;
    }
    Buffer b;
    b.bytes = std::max<size_t>(4096, std::bit_ceil(bytes));
    RelaxedCaptureMode relaxed;
    CHAINER_CUDA_CHECK(cudaHostAlloc(&b.ptr, b.bytes, cudaHostAllocDefault));
    CHAINER_CUDA_CHECK(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming));
    return b;
  }
  // B was last read by work queued on STREAM so far.
  void release(Buffer b, cudaStream_t stream) {
    CHAINER_CUDA_CHECK(cudaEventRecord(b.done, stream));
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(b);
  }

 private:
  std::mutex mutex_;
  std::deque<Buffer> free_;
};

// A per-step scalar buffer of a captured graph and the function that refills it.
struct StepScalarWriter {
  void* device = nullptr;
  size_t bytes = 0;
  std::function<void(void*)> fill;
};

// What a captured graph needs besides its executable: its private pool, the writers to run before
// each replay and the staging buffers its copies read.
struct CaptureRecord {
  int device = 0;
  CachingAllocator::PoolId pool = 0;
  std::vector<StepScalarWriter> writers;
  std::vector<std::shared_ptr<void>> held;  // device buffers of the writers
  std::vector<PinnedStaging::Buffer> pinned;
  cudaGraphExec_t exec = nullptr;
};

struct DeviceState {
  bool ready = false;
  cudaStream_t stream = nullptr;
  std::unique_ptr<CachingAllocator> allocator;
  PinnedStaging staging;
  // Device errors: kernels record into device memory (device atomics only); every host wait
  // first queues a copy of the record into pinned memory, read once the wait is over.
  DeviceErrorRecord* error_device = nullptr;
  DeviceErrorRecord* error_host = nullptr;
  // Per-step scalars outside capture: a ring in device memory, written in stream order; a slot
  // is rewritten only by a write queued after the kernels that read it.
  char* ring = nullptr;
  size_t ring_at = 0;
  std::unique_ptr<CaptureRecord> capture;  // set between begin_capture and end_capture
};

std::atomic<int64_t> g_kernel_launches{0}, g_graph_launches{0};

constexpr int kMaxDevices = 64;
constexpr size_t kRingBytes = size_t(1) << 20;
constexpr size_t kMaxStagedBytes = size_t(64) << 20;  // larger host-to-device copies are not staged
DeviceState g_devices[kMaxDevices];
std::mutex g_init_mutex;
thread_local int t_device = 0;

DeviceState& state(int device) {
  DeviceState& s = g_devices[device];
  CHAINER_ASSERT(s.ready, "cuda:", device, " used before set_device");
  return s;
}
DeviceState& current() { return state(t_device); }

std::string device_name(int device) { return str("cuda:", device); }

// Waits for DEVICE's stream, then throws the first error a kernel recorded there since the last
// wait, and clears it.
void wait_and_check(int device) {
  DeviceState& s = state(device);
  CHAINER_CUDA_CHECK(
      cudaMemcpyAsync(s.error_host, s.error_device, sizeof(DeviceErrorRecord), cudaMemcpyDeviceToHost, s.stream));
  CHAINER_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  if (s.error_host->code == kNoDeviceError) return;
  const DeviceErrorRecord e = *s.error_host;
  s.error_host->code = kNoDeviceError;
  CHAINER_CUDA_CHECK(cudaMemsetAsync(s.error_device, 0, sizeof(DeviceErrorRecord), s.stream));
  std::string what;
  switch (e.code) {
    case kLabelOutOfRange:
      what = str("softmax_cross_entropy: label ", e.b, " at index ", e.a, " is out of range for ", e.c,
                 " classes (expected 0 <= label < ", e.c, " or ignore_label ", e.d, ")");
      break;
    case kTakeIndexOutOfRange:
    case kScatterAddIndexOutOfRange:
      what = str(e.code == kTakeIndexOutOfRange ? "take" : "scatter_add", ": index ", e.b, " is out of bounds for axis ",
                 e.d, " with size ", e.c, " (at position ", e.a, " of the indices)");
      break;
    default: what = str("a kernel recorded device error ", e.code);
  }
  throw Error(str(what, " [found on ", device_name(device),
                  " by a kernel queued before this host read; the CUDA backend reports such errors late]"));
}

// Writes host values into device memory in stream order, carried as kernel parameters (copied
// at launch, so the host may reuse its buffer at once, and nothing waits).
struct Payload {
  unsigned char bytes[256];
};
__global__ void write_payload(unsigned char* dst, Payload payload, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = payload.bytes[i];
}
void write_device(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  for (size_t at = 0; at < bytes; at += sizeof(Payload)) {
    const size_t n = std::min(sizeof(Payload), bytes - at);
    Payload p;
    std::memcpy(p.bytes, static_cast<const char*>(src) + at, n);
    write_payload<<<1, 64, 0, stream>>>(static_cast<unsigned char*>(dst) + at, p, int(n));
    CHAINER_CUDA_CHECK_LAUNCH(write_payload);
  }
}

bool capturing(const DeviceState& s) { return s.capture != nullptr; }

class CudaRuntime final : public Runtime {
 public:
  const Kernels& kernels() override {
    static const Kernels table{
        .fill = cuda::fill,
        .copy = cuda::copy,
        .take_rows = cuda::take_rows,
        .binary = cuda::binary,
        .unary = cuda::unary,
        .broadcast_copy = cuda::broadcast_copy,
        .affine = cuda::affine,
        .activation_grad = cuda::activation_grad,
        .axpy = cuda::axpy,
        .accumulate = cuda::accumulate,
        .compare = cuda::compare,
        .where = cuda::where,
        .clip = cuda::clip,
        .sum_axes = cuda::sum_axes,
        .max_axis = cuda::max_axis,
        .min_axis = cuda::min_axis,
        .sum_of_squares = cuda::sum_of_squares,
        .gemm = cuda::gemm,
        .softmax = cuda::softmax,
        .softmax_grad = cuda::softmax_grad,
        .add_bias = cuda::add_bias,
        .softmax_cross_entropy = cuda::softmax_cross_entropy,
        .softmax_cross_entropy_grad = cuda::softmax_cross_entropy_grad,
        .dropout_mask = cuda::dropout_mask,
        .accuracy = cuda::accuracy,
        .sigmoid_cross_entropy = cuda::sigmoid_cross_entropy,
        .sigmoid_cross_entropy_grad = cuda::sigmoid_cross_entropy_grad,
        .update = cuda::update,
        .clip_by_norm = cuda::clip_by_norm,
        .take = cuda::take,
        .scatter_add = cuda::scatter_add,
    };
    return table;
  }

  int device_count(std::string& why_none) override {
    int n = 0;
    const cudaError_t status = cudaGetDeviceCount(&n);
    if (status != cudaSuccess) {
      cudaGetLastError();
      why_none = str("cudaGetDeviceCount: ", cudaGetErrorString(status));
      return 0;
    }
    if (n == 0) why_none = "cudaGetDeviceCount found no CUDA device";
    return std::min(n, kMaxDevices);
  }

  void set_device(int device) override {
    CHAINER_CUDA_CHECK(cudaSetDevice(device));
    t_device = device;
    std::lock_guard<std::mutex> lock(g_init_mutex);
    DeviceState& s = g_devices[device];
    if (s.ready) return;
    CHAINER_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    s.allocator = std::make_unique<CachingAllocator>(device_name(device), std::make_unique<CudaMemory>());
    CHAINER_CUDA_CHECK(cudaMalloc(&s.error_device, sizeof(DeviceErrorRecord)));
    CHAINER_CUDA_CHECK(cudaMemset(s.error_device, 0, sizeof(DeviceErrorRecord)));
    CHAINER_CUDA_CHECK(cudaHostAlloc(&s.error_host, sizeof(DeviceErrorRecord), cudaHostAllocDefault));
    std::memset(s.error_host, 0, sizeof(DeviceErrorRecord));
    CHAINER_CUDA_CHECK(cudaMalloc(&s.ring, kRingBytes));
    s.ready = true;
  }

  void synchronize(int device) override {
    DeviceState& s = state(device);
    if (capturing(s)) throw CaptureError("synchronize() waits for the device, which a CUDA graph cannot capture");
    wait_and_check(device);
  }

  std::shared_ptr<void> allocate(int device, size_t bytes) override {
    DeviceState& s = state(device);
    CachingAllocator* allocator = s.allocator.get();
    void* p = allocator->allocate(bytes, s.stream);
    return std::shared_ptr<void>(p, [allocator](void* q) { allocator->free(q); });
  }
  MemoryStats memory_stats(int device) override { return state(device).allocator->stats(); }
  void reset_peak_memory_stats(int device) override { state(device).allocator->reset_peak(); }
  void empty_cache() override {
    for (DeviceState& s : g_devices)
      if (s.ready) s.allocator->empty_cache();
  }

  void copy_from_host(int device, void* dst, const void* src, size_t bytes) override {
    DeviceState& s = state(device);
    if (bytes > kMaxStagedBytes) {
      // A data set going to the device once: no pinned buffer that large is kept for it. CUDA
      // waits for the stream first and returns once SRC has been read.
      CHAINER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s.stream));
      return;
    }
    PinnedStaging::Buffer b = s.staging.acquire(bytes);
    std::memcpy(b.ptr, src, bytes);
    CHAINER_CUDA_CHECK(cudaMemcpyAsync(dst, b.ptr, bytes, cudaMemcpyHostToDevice, s.stream));
    if (capturing(s)) s.capture->pinned.push_back(b);  // every replay copies from it again
    else s.staging.release(b, s.stream);
  }

  void copy_to_host(int device, void* dst, const void* src, size_t bytes) override {
    DeviceState& s = state(device);
    if (capturing(s))
      throw CaptureError("the step reads a device value on the host (item(), to_vector(), printing or Tensor::to(cpu)), "
                         "which a CUDA graph cannot capture");
    CHAINER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s.stream));
    wait_and_check(device);
  }

  void copy_between(int dst_device, void* dst, int src_device, const void* src, size_t bytes) override {
    DeviceState& d = state(dst_device);
    if (dst_device == src_device) {
      CHAINER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, d.stream));
      return;
    }
    DeviceState& from = state(src_device);
    if (capturing(d) || capturing(from)) throw CaptureError("a copy between two devices cannot be captured");
    // The copy runs on the destination's stream once the source's queued work is done.
    cudaEvent_t ready;
    CHAINER_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    CHAINER_CUDA_CHECK(cudaEventRecord(ready, from.stream));
    CHAINER_CUDA_CHECK(cudaStreamWaitEvent(d.stream, ready, 0));
    CHAINER_CUDA_CHECK(cudaEventDestroy(ready));
    CHAINER_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device, src, src_device, bytes, d.stream));
    // Later work on the source must not overwrite SRC before the copy has read it.
    CHAINER_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    CHAINER_CUDA_CHECK(cudaEventRecord(ready, d.stream));
    CHAINER_CUDA_CHECK(cudaStreamWaitEvent(from.stream, ready, 0));
    CHAINER_CUDA_CHECK(cudaEventDestroy(ready));
  }

  LaunchCounts launch_counts() override { return {g_kernel_launches.load(), g_graph_launches.load()}; }

  void* native_stream(int device) override { return state(device).stream; }

  void begin_capture(int device) override {
    DeviceState& s = state(device);
    CHAINER_ASSERT(!capturing(s), "begin_capture: cuda:", device, " is already capturing");
    // Anything still queued must not be mistaken for part of the step.
    wait_and_check(device);
    auto record = std::make_unique<CaptureRecord>();
    record->device = device;
    record->pool = s.allocator->begin_capture(s.stream);
    s.capture = std::move(record);
    const cudaError_t status = cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal);
    if (status != cudaSuccess) {
      s.allocator->end_capture(s.stream);
      s.allocator->release_pool(s.capture->pool);
      s.capture.reset();
      CHAINER_CUDA_CHECK(status);
    }
  }

  std::shared_ptr<void> end_capture(int device) override {
    DeviceState& s = state(device);
    CHAINER_ASSERT(capturing(s), "end_capture: cuda:", device, " is not capturing");
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(s.stream, &graph);
    s.allocator->end_capture(s.stream);
    std::shared_ptr<CaptureRecord> record(s.capture.release(), [](CaptureRecord* r) { destroy(r); });
    CHAINER_CUDA_CHECK(ended);
    const cudaError_t instantiated = cudaGraphInstantiate(&record->exec, graph, 0);
    CHAINER_CUDA_CHECK(cudaGraphDestroy(graph));
    CHAINER_CUDA_CHECK(instantiated);
    return record;
  }

  void abort_capture(int device) override {
    DeviceState& s = state(device);
    if (!capturing(s)) return;
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(s.stream, &graph);  // fails when the capture was invalidated; either way it is over
    cudaGetLastError();
    if (graph) cudaGraphDestroy(graph);
    s.allocator->end_capture(s.stream);
    destroy(s.capture.release());
  }

  void replay(const std::shared_ptr<void>& graph) override {
    auto* record = static_cast<CaptureRecord*>(graph.get());
    DeviceState& s = state(record->device);
    std::vector<char> host;
    for (const StepScalarWriter& w : record->writers) {
      host.assign(w.bytes, 0);
      w.fill(host.data());
      write_device(w.device, host.data(), w.bytes, s.stream);
    }
    CHAINER_CUDA_CHECK(cudaGraphLaunch(record->exec, s.stream));
    ++g_graph_launches;
  }

  RuntimeVersions versions() override {
    RuntimeVersions v;
    // Both succeed without a GPU; the driver's is 0 where no driver is installed.
    CHAINER_CUDA_CHECK(cudaDriverGetVersion(&v.driver));
    CHAINER_CUDA_CHECK(cudaRuntimeGetVersion(&v.runtime));
    return v;
  }

  DeviceProperties device_properties(int device) override {
    cudaDeviceProp prop{};
    CHAINER_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    DeviceProperties p;
    p.name = prop.name;
    p.major = prop.major;
    p.minor = prop.minor;
    p.total_memory_bytes = prop.totalGlobalMem;
    p.multiprocessors = prop.multiProcessorCount;
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device) == cudaSuccess) p.pci_bus_id = bus;
    else cudaGetLastError();
    return p;
  }

 private:
  // Frees what a capture held, in stream order: the pool goes back to ordinary use behind the
  // graph's last launch, and staging buffers once that launch has read them.
  static void destroy(CaptureRecord* r) {
    DeviceState& s = g_devices[r->device];
    if (r->exec) cudaGraphExecDestroy(r->exec);  // freed once a launch in flight completes
    r->held.clear();
    s.allocator->release_pool(r->pool);
    for (PinnedStaging::Buffer& b : r->pinned) s.staging.release(b, s.stream);
    delete r;
  }
};

}  // namespace

cudaStream_t compute_stream() { return current().stream; }
void count_launch() {
  if (!capturing(current())) ++g_kernel_launches;
}
int current_device_index() { return t_device; }
DeviceErrorRecord* device_error_record() { return current().error_device; }

std::shared_ptr<void> upload(const void* src, size_t bytes) {
  Runtime& runtime = *chainer_cuda_runtime();
  std::shared_ptr<void> owner = runtime.allocate(t_device, bytes);
  if (bytes) runtime.copy_from_host(t_device, owner.get(), src, bytes);
  return owner;
}

const void* step_scalars(size_t bytes, std::function<void(void* host)> fill) {
  DeviceState& s = current();
  if (capturing(s)) {
    // A buffer of the graph's own; the runtime refills it before every replay.
    std::shared_ptr<void> buffer = chainer_cuda_runtime()->allocate(t_device, bytes);
    s.capture->writers.push_back({buffer.get(), bytes, std::move(fill)});
    s.capture->held.push_back(std::move(buffer));
    return s.capture->writers.back().device;
  }
  const size_t slot = (bytes + 255) / 256 * 256;
  CHAINER_ASSERT(slot <= kRingBytes, "step_scalars: ", bytes, " bytes do not fit the ring");
  if (s.ring_at + slot > kRingBytes) s.ring_at = 0;
  char* dst = s.ring + s.ring_at;
  s.ring_at += slot;
  std::vector<char> host(bytes);
  fill(host.data());
  write_device(dst, host.data(), bytes, s.stream);
  return dst;
}

}  // namespace chainer::cuda

extern "C" chainer::cuda::Runtime* chainer_cuda_runtime() {
  static chainer::cuda::CudaRuntime* runtime = new chainer::cuda::CudaRuntime;  // never destroyed:
  return runtime;  // tensors may outlive static destruction
}
