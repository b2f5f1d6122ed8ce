// The CUDA plugin's runtime logic (core/cuda/device_runtime.h says what it keeps).
#include "core/cuda/device_runtime.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "core/memory/caching_allocator.h"
#include "core/memory/pinned_staging.h"

// Every CUDA call: on failure throws naming the call and file:line. CUDA is `cuda_` in scope.
#define CHAINER_DEVICE_CHECK(call)                                                   \
  do {                                                                               \
    const int chainer_status_ = (call);                                              \
    if (chainer_status_ != ::chainer::cuda::kDeviceSuccess)                          \
      ::chainer::cuda::throw_device_error(cuda_, chainer_status_, #call, __FILE__, __LINE__); \
  } while (0)

// A CUDA call on a free path: a failure is reported once through the runtime RT and ignored.
#define CHAINER_DEVICE_CHECK_QUIETLY(rt, call)                                      \
  do {                                                                              \
    const int chainer_status_ = (call);                                             \
    if (chainer_status_ != ::chainer::cuda::kDeviceSuccess) (rt).ignore(chainer_status_, #call, __FILE__, __LINE__); \
  } while (0)

namespace chainer::cuda {

void throw_device_error(DeviceApi& cuda, int status, const char* call, const char* file, int line) {
  if (is_stream_capture_error(status)) {
    cuda.get_last_error();  // not sticky: the capture is abandoned, the device stays usable
    throw CaptureError(
        str("a CUDA graph cannot capture ", call, " (", cuda.get_error_string(status), ") at ", file, ":", line));
  }
  throw Error(str("CUDA error: ", call, " failed: ", cuda.get_error_string(status), " (", cuda.get_error_name(status),
                  ") at ", file, ":", line));
}

namespace {

// Whether the work before EVENT has completed. "Not ready" is an answer, not an error: it is
// cleared, so that the next launch's error check does not find it as the thread's last error.
bool event_completed(DeviceApi& cuda_, DeviceApi::Event event) {
  const int status = cuda_.event_query(event);
  if (status == kErrorNotReady) {
    cuda_.get_last_error();
    return false;
  }
  CHAINER_DEVICE_CHECK(status);
  return true;
}

std::string version_text(int v) { return str(v / 1000, ".", v % 1000 / 10); }

std::string device_name(int device) { return str("cuda:", device); }

[[noreturn]] void refuse_while_another_thread_captures(int device, const char* op) {
  throw Error(str(device_name(device), ": ", op, " refused: another thread is capturing a CUDA graph on this device, ",
                  "and work queued from this thread meanwhile would join the graph (do it before that capture begins ",
                  "or after it ends)"));
}

}  // namespace

std::string insufficient_driver_reason(int driver, int runtime) {
  // The oldest driver release of each major version (CUDA's minor version compatibility: any
  // driver of the major version's first release runs every runtime of that major version).
  const int major = runtime / 1000;
  const char* release = major == 11 ? "450" : major == 12 ? "525" : major == 13 ? "580" : nullptr;
  std::string need = str("this CUDA ", version_text(runtime), " runtime needs an NVIDIA driver for CUDA ", major, ".0 or newer");
  if (release) need += str(" (release ", release, " or newer)");
  return need + (driver == 0 ? "; no NVIDIA driver is installed"
                             : str("; the installed driver supports CUDA ", version_text(driver), " at most"));
}

// ---- The pieces of a device's state ----

// Makes DEVICE current for its scope (CUDA wants an event's or a stream's device current when
// it is created or recorded) and then restores the caller's device. QUIET: on a free path.
class DeviceRuntime::DeviceGuard {
 public:
  DeviceGuard(DeviceRuntime& rt, int device, bool quiet = false) : rt_(rt) {
    DeviceApi& cuda_ = rt.cuda_;
    if (quiet) {
      CHAINER_DEVICE_CHECK_QUIETLY(rt, cuda_.get_device(&previous_));
    } else {
      CHAINER_DEVICE_CHECK(cuda_.get_device(&previous_));
    }
    if (previous_ < 0 || previous_ == device) return;
    if (quiet) {
      CHAINER_DEVICE_CHECK_QUIETLY(rt, cuda_.set_device(device));
    } else {
      CHAINER_DEVICE_CHECK(cuda_.set_device(device));
    }
    changed_ = true;
  }
  ~DeviceGuard() {
    if (changed_) CHAINER_DEVICE_CHECK_QUIETLY(rt_, rt_.cuda_.set_device(previous_));
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  DeviceRuntime& rt_;
  int previous_ = -1;
  bool changed_ = false;
};

// cudaMalloc and cudaFree are not stream-ordered, so capture forbids them unless the thread
// relaxes its capture mode for the call (PyTorch's allocator does the same): the private pool
// grows while capturing. QUIET: on a free path.
class DeviceRuntime::RelaxedCaptureMode {
 public:
  explicit RelaxedCaptureMode(DeviceRuntime& rt, bool quiet = false) : rt_(rt) {
    DeviceApi& cuda_ = rt.cuda_;
    const int status = cuda_.thread_exchange_stream_capture_mode(&mode_);
    if (status == kDeviceSuccess) {
      exchanged_ = true;
    } else if (quiet) {
      rt.ignore(status, "cuda_.thread_exchange_stream_capture_mode(&mode_)", __FILE__, __LINE__);
    } else {
      throw_device_error(cuda_, status, "cuda_.thread_exchange_stream_capture_mode(&mode_)", __FILE__, __LINE__);
    }
  }
  ~RelaxedCaptureMode() {
    if (exchanged_) CHAINER_DEVICE_CHECK_QUIETLY(rt_, rt_.cuda_.thread_exchange_stream_capture_mode(&mode_));
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  DeviceRuntime& rt_;
  DeviceApi::CaptureMode mode_ = DeviceApi::kCaptureRelaxed;
  bool exchanged_ = false;
};

// The caching allocator's native memory on one device. free and destroy_event never throw: the
// allocator calls them while emptying its cache and from its destructor.
class DeviceRuntime::DeviceMemory final : public CachingAllocator::Native {
 public:
  DeviceMemory(DeviceRuntime& rt, int device) : rt_(rt), cuda_(rt.cuda_), device_(device) {}
  void* allocate(size_t bytes) override {
    DeviceGuard on(rt_, device_);
    RelaxedCaptureMode relaxed(rt_);
    void* p = nullptr;
    const int status = cuda_.malloc(&p, bytes);
    if (status == kErrorMemoryAllocation) {
      cuda_.get_last_error();  // clear it: the allocator frees its cache and retries
      return nullptr;
    }
    CHAINER_DEVICE_CHECK(status);
    return p;
  }
  void free(void* ptr) override {
    DeviceGuard on(rt_, device_, /*quiet=*/true);
    RelaxedCaptureMode relaxed(rt_, /*quiet=*/true);
    CHAINER_DEVICE_CHECK_QUIETLY(rt_, cuda_.free(ptr));
  }
  CachingAllocator::Event record_event(CachingAllocator::Stream stream) override {
    DeviceGuard on(rt_, device_);
    DeviceApi::Event e = nullptr;
    CHAINER_DEVICE_CHECK(cuda_.event_create(&e));
    CHAINER_DEVICE_CHECK(cuda_.event_record(e, stream));
    return e;
  }
  bool event_done(CachingAllocator::Event event) override {
    return event_completed(cuda_, event);
  }
  void destroy_event(CachingAllocator::Event event) override {
    CHAINER_DEVICE_CHECK_QUIETLY(rt_, cuda_.event_destroy(event));
  }

 private:
  DeviceRuntime& rt_;
  DeviceApi& cuda_;
  int device_;
};

// The pinned staging pool's device calls (the pool's policy is core/memory/pinned_staging.h's): pinned
// memory and events of this runtime's CUDA, made with the pool's device current.
class DeviceRuntime::StagingNative : public PinnedStaging::Native {
 public:
  explicit StagingNative(DeviceRuntime& rt) : rt_(rt), cuda_(rt.cuda_) {}
  void* allocate(size_t bytes) override {
    void* ptr = nullptr;
    RelaxedCaptureMode relaxed(rt_);  // pinning may be reached inside a capture
    CHAINER_DEVICE_CHECK(cuda_.host_alloc(&ptr, bytes));
    return ptr;
  }
  void free(void* ptr) override { CHAINER_DEVICE_CHECK(cuda_.host_free(ptr)); }
  PinnedStaging::Event create_event() override {
    DeviceApi::Event e = nullptr;
    CHAINER_DEVICE_CHECK(cuda_.event_create(&e));
    return e;
  }
  void record_event(PinnedStaging::Event event, PinnedStaging::Stream stream) override { CHAINER_DEVICE_CHECK(cuda_.event_record(event, stream)); }
  bool event_done(PinnedStaging::Event event) override {
    return event_completed(cuda_, event);
  }
  void wait_event(PinnedStaging::Event event) override {
    RelaxedCaptureMode relaxed(rt_);
    CHAINER_DEVICE_CHECK(cuda_.event_synchronize(event));
  }
  void destroy_event(PinnedStaging::Event event) override { CHAINER_DEVICE_CHECK(cuda_.event_destroy(event)); }

 private:
  DeviceRuntime& rt_;
  DeviceApi& cuda_;
};

// Per-step scalars on their way to the device: a ring of pinned host memory, cut into segments
// each guarded by an event recorded after the last copy out of it. A write fills the next slot
// on the host and queues one copy of it; the host waits only when it comes back to a segment
// whose copies have not run yet, a whole ring ahead of the device. Eager writes go to the same
// offset of a device ring (rewritten only by a copy queued after the kernels that read it);
// a replay's go to its graph's arena. Threads queueing work on the device share it: a write
// holds its lock, a wait for a segment included.
class DeviceRuntime::ScalarRing {
 public:
  static constexpr size_t kSegmentBytes = kRingBytes / kRingSegments;

  explicit ScalarRing(DeviceRuntime& rt) : cuda_(rt.cuda_) {}
  // With the ring's device current.
  void init() {
    CHAINER_DEVICE_CHECK(cuda_.malloc(reinterpret_cast<void**>(&device_), kRingBytes));
    CHAINER_DEVICE_CHECK(cuda_.host_alloc(reinterpret_cast<void**>(&host_), kRingBytes));
    for (DeviceApi::Event& e : done_) CHAINER_DEVICE_CHECK(cuda_.event_create(&e));
  }

  // Fills BYTES through FILL (with the lock held: it only writes them) and queues one copy of
  // them on STREAM to DST (nullptr: the device ring); returns where they will be on the device.
  void* write(size_t bytes, const std::function<void(void* host)>& fill, void* dst, DeviceApi::Stream stream) {
    const size_t slot = std::max<size_t>(kScalarAlign, (bytes + kScalarAlign - 1) / kScalarAlign * kScalarAlign);
    CHAINER_ASSERT(slot <= kRingBytes, "step_scalars: ", bytes, " bytes do not fit the ring");
    std::lock_guard<std::mutex> lock(mutex_);
    const bool wrap = at_ + slot > kRingBytes;
    const size_t start = wrap ? 0 : at_;
    const int first = int(start / kSegmentBytes), last = int((start + slot - 1) / kSegmentBytes);
    // Entering segments the previous write did not touch: the last segment written is done with
    // (its copies are queued), and each segment entered must have been read on the last lap. A
    // write that wraps goes back over bytes of the open segment too (when that is segment 0, the
    // bytes its queued copies have not read yet): it closes it and waits for it like the others.
    if (wrap || first != segment_) close(segment_, stream);
    for (int k = first; k <= last; ++k) {
      if (!wrap && k == segment_ && k == first) continue;  // going on after the previous write
      if (recorded_[k]) {
        CHAINER_DEVICE_CHECK(cuda_.event_synchronize(done_[k]));
        recorded_[k] = false;
      }
    }
    std::memset(host_ + start, 0, bytes);
    fill(host_ + start);
    if (!dst) dst = device_ + start;
    CHAINER_DEVICE_CHECK(cuda_.memcpy_async(dst, host_ + start, bytes, DeviceApi::Copy::host_to_device, stream));
    for (int k = first; k < last; ++k) close(k, stream);  // passed through: read by this copy only
    segment_ = last;
    at_ = start + slot;
    return dst;
  }

 private:
  void close(int k, DeviceApi::Stream stream) {
    CHAINER_DEVICE_CHECK(cuda_.event_record(done_[k], stream));
    recorded_[k] = true;
  }

  DeviceApi& cuda_;
  std::mutex mutex_;
  char* device_ = nullptr;
  char* host_ = nullptr;
  size_t at_ = 0;
  int segment_ = 0;
  DeviceApi::Event done_[kRingSegments] = {};
  bool recorded_[kRingSegments] = {};
};

// What a captured graph needs besides its executable: its private pool, its per-step scalars
// (arenas of device memory refilled with one copy each before every replay) and the staging
// buffers its copies read. No lock: until end_capture only the capturing thread reaches it
// (DeviceState::capturing), and then it is only read until destroyed.
struct DeviceRuntime::CaptureRecord {
  struct Writer {
    size_t offset = 0;
    size_t bytes = 0;
    std::function<void(void*)> fill;
  };
  struct Arena {
    std::shared_ptr<void> block;  // from the graph's private pool
    size_t bytes = 0;
    size_t used = 0;
    std::vector<Writer> writers;
  };
  int device = 0;
  CachingAllocator::PoolId pool = 0;
  std::vector<Arena> arenas;
  std::vector<PinnedStaging::Buffer> pinned;
  DeviceApi::GraphExec exec = nullptr;
};

struct DeviceRuntime::DeviceState {
  DeviceState(DeviceRuntime& rt, int device)
      : device(device), staging(std::make_unique<StagingNative>(rt)), scalars(rt) {}
  int device;
  DeviceApi::Stream stream = nullptr;
  std::unique_ptr<CachingAllocator> allocator;
  PinnedStaging staging;
  ScalarRing scalars;
  // Device errors: kernels record into device memory (device atomics only); every host wait
  // first queues a copy of the record into pinned memory, read once the wait is over.
  DeviceErrorRecord* error_device = nullptr;
  DeviceErrorRecord* error_host = nullptr;
  // The thread capturing a graph on the device (std::thread::id() while none is). Only that
  // thread touches CAPTURE; any other thread's work on the device is refused meanwhile (it would
  // go to the captured stream and join the graph): see own_capture.
  std::atomic<std::thread::id> capturing{};
  std::unique_ptr<CaptureRecord> capture;  // set between begin_capture and end_capture
};
// Every kernel launch reads DeviceState::capturing: a plain load, not a lock.
static_assert(std::atomic<std::thread::id>::is_always_lock_free);

// ---- The runtime ----

DeviceRuntime::DeviceRuntime(DeviceApi& cuda, const Kernels& kernels, Warn warn, PrepareCapture prepare_capture)
    : cuda_(cuda), kernels_(kernels), warn_(std::move(warn)), prepare_capture_(std::move(prepare_capture)) {
  if (!warn_) warn_ = [](const std::string& message) { std::fprintf(stderr, "%s\n", message.c_str()); };
}

// The device state stays: blocks may still be in use by tensors that outlive the runtime, and
// at exit the CUDA runtime may already be gone.
DeviceRuntime::~DeviceRuntime() = default;

void DeviceRuntime::ignore(int status, const char* call, const char* file, int line) noexcept {
  cuda_.get_last_error();
  if (ignored_errors_++ > 0) return;
  try {
    warn_(str("chainer: CUDA error ignored while freeing: ", call, " failed: ", cuda_.get_error_string(status), " (",
              cuda_.get_error_name(status), ") at ", file, ":", line, " (later ones are not reported)"));
  } catch (...) {
  }
}

void DeviceRuntime::ignore(const std::exception& e, const char* freeing) noexcept {
  cuda_.get_last_error();
  if (ignored_errors_++ > 0) return;
  try {
    warn_(str("chainer: error ignored while freeing ", freeing, ": ", e.what(), " (later ones are not reported)"));
  } catch (...) {
  }
}

DeviceRuntime::DeviceState& DeviceRuntime::state(int device) {
  CHAINER_ASSERT(device >= 0 && device < kMaxDevices, "cuda:", device, " is out of range");
  DeviceState* s = devices_[device].load(std::memory_order_acquire);
  CHAINER_ASSERT(s, device_name(device), " used before set_device");
  return *s;
}

// On every call that queues work on S's stream, kernel launches included: one atomic load and a
// compare while nothing is captured. A call already past this check when another thread begins
// a capture is not stopped.
DeviceRuntime::CaptureRecord* DeviceRuntime::own_capture(DeviceState& s, const char* op) {
  const std::thread::id capturing = s.capturing.load(std::memory_order_acquire);
  if (capturing == std::thread::id()) return nullptr;
  if (capturing != std::this_thread::get_id()) refuse_while_another_thread_captures(s.device, op);
  return s.capture.get();
}

int DeviceRuntime::current_device() {
  int device = 0;
  CHAINER_DEVICE_CHECK(cuda_.get_device(&device));
  return device;
}

int DeviceRuntime::device_count(std::string& why_none) {
  int n = 0;
  const int status = cuda_.get_device_count(&n);
  if (status != kDeviceSuccess) {
    cuda_.get_last_error();
    why_none = str("cudaGetDeviceCount: ", cuda_.get_error_string(status));
    if (status == kErrorInsufficientDriver) {
      int driver = 0, runtime = 0;
      cuda_.driver_get_version(&driver);
      cuda_.runtime_get_version(&runtime);
      cuda_.get_last_error();
      why_none += str(": ", insufficient_driver_reason(driver, runtime));
    }
    return 0;
  }
  if (n == 0) why_none = "cudaGetDeviceCount found no CUDA device";
  return std::min(n, kMaxDevices);
}

void DeviceRuntime::set_device(int device) {
  CHAINER_ASSERT(device >= 0 && device < kMaxDevices, "cuda:", device, " is out of range");
  if (current_device() != device) CHAINER_DEVICE_CHECK(cuda_.set_device(device));
  if (devices_[device].load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (devices_[device].load(std::memory_order_relaxed)) return;
  auto* s = new DeviceState(*this, device);  // never deleted (device_runtime.h)
  CHAINER_DEVICE_CHECK(cuda_.stream_create(&s->stream));
  s->allocator = std::make_unique<CachingAllocator>(device_name(device), std::make_unique<DeviceMemory>(*this, device));
  CHAINER_DEVICE_CHECK(cuda_.malloc(reinterpret_cast<void**>(&s->error_device), sizeof(DeviceErrorRecord)));
  // On the compute stream, before any kernel that may record an error.
  CHAINER_DEVICE_CHECK(cuda_.memset_async(s->error_device, 0, sizeof(DeviceErrorRecord), s->stream));
  CHAINER_DEVICE_CHECK(cuda_.host_alloc(reinterpret_cast<void**>(&s->error_host), sizeof(DeviceErrorRecord)));
  std::memset(s->error_host, 0, sizeof(DeviceErrorRecord));
  s->scalars.init();
  devices_[device].store(s, std::memory_order_release);
}

// Waits for S's stream, then throws the first error a kernel recorded there since the last
// wait, and clears it.
void DeviceRuntime::wait_and_check(DeviceState& s) {
  CHAINER_DEVICE_CHECK(cuda_.memcpy_async(s.error_host, s.error_device, sizeof(DeviceErrorRecord),
                                          DeviceApi::Copy::device_to_host, s.stream));
  CHAINER_DEVICE_CHECK(cuda_.stream_synchronize(s.stream));
  if (s.error_host->code == kNoDeviceError) return;
  const DeviceErrorRecord e = *s.error_host;
  s.error_host->code = kNoDeviceError;
  CHAINER_DEVICE_CHECK(cuda_.memset_async(s.error_device, 0, sizeof(DeviceErrorRecord), s.stream));
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
  throw Error(str(what, " [found on ", device_name(s.device),
                  " by a kernel queued before this host read; the CUDA backend reports such errors late]"));
}

void DeviceRuntime::synchronize(int device) {
  DeviceState& s = state(device);
  if (own_capture(s, "synchronize")) throw CaptureError("synchronize() waits for the device, which a CUDA graph cannot capture");
  wait_and_check(s);
}

std::shared_ptr<void> DeviceRuntime::allocate(int device, size_t bytes) {
  DeviceState& s = state(device);
  own_capture(s, "allocate");  // during this thread's capture, the allocator serves the graph's pool
  CachingAllocator* allocator = s.allocator.get();
  void* p = allocator->allocate(bytes, s.stream);
  return std::shared_ptr<void>(p, [this, allocator](void* q) {
    try {
      allocator->free(q);
    } catch (const std::exception& e) {  // a deleter must not throw
      ignore(e, "device memory");
    }
  });
}

MemoryStats DeviceRuntime::memory_stats(int device) { return state(device).allocator->stats(); }
void DeviceRuntime::reset_peak_memory_stats(int device) { state(device).allocator->reset_peak(); }
void DeviceRuntime::empty_cache() {
  for (auto& d : devices_)
    if (DeviceState* s = d.load(std::memory_order_acquire)) s->allocator->empty_cache();
}

void DeviceRuntime::copy_from_host(int device, void* dst, const void* src, size_t bytes) {
  DeviceState& s = state(device);
  CaptureRecord* capture = own_capture(s, "copy_from_host");
  if (bytes > kMaxStagedBytes) {
    // Captured, the copy would read SRC again at every replay, long after the caller freed it.
    if (capture)
      throw CaptureError(str("a copy of ", bytes, " bytes from the host (more than the ", kMaxStagedBytes >> 20,
                             " MiB staged through pinned memory) cannot be captured into a CUDA graph"));
    // A data set going to the device once: no pinned buffer that large is kept for it. CUDA
    // waits for the stream first and returns once SRC has been read.
    CHAINER_DEVICE_CHECK(cuda_.memcpy_async(dst, src, bytes, DeviceApi::Copy::host_to_device, s.stream));
    return;
  }
  // A capture may not free pinned memory or wait for a copy, as making room in the pool may.
  PinnedStaging::Buffer b = capture ? s.staging.acquire_while_capturing(bytes) : s.staging.acquire(bytes);
  std::memcpy(b.ptr, src, bytes);
  CHAINER_DEVICE_CHECK(cuda_.memcpy_async(dst, b.ptr, bytes, DeviceApi::Copy::host_to_device, s.stream));
  if (capture) capture->pinned.push_back(b);  // every replay copies from it again
  else s.staging.release(b, s.stream);
}

void DeviceRuntime::copy_to_host(int device, void* dst, const void* src, size_t bytes) {
  DeviceState& s = state(device);
  if (own_capture(s, "copy_to_host"))
    throw CaptureError("the step reads a device value on the host (item(), to_vector(), printing or Tensor::to(cpu)), "
                       "which a CUDA graph cannot capture");
  CHAINER_DEVICE_CHECK(cuda_.memcpy_async(dst, src, bytes, DeviceApi::Copy::device_to_host, s.stream));
  wait_and_check(s);
}

void DeviceRuntime::copy_between(int dst_device, void* dst, int src_device, const void* src, size_t bytes) {
  DeviceState& to = state(dst_device);
  const bool captured = own_capture(to, "copy_between");
  if (dst_device == src_device) {
    CHAINER_DEVICE_CHECK(cuda_.memcpy_async(dst, src, bytes, DeviceApi::Copy::device_to_device, to.stream));
    return;
  }
  DeviceState& from = state(src_device);
  if (own_capture(from, "copy_between") || captured) throw CaptureError("a copy between two devices cannot be captured");
  // The copy runs on the destination's stream once the source's queued work is done; later work
  // on the source must not overwrite SRC before the copy has read it. Each event is made and
  // recorded with its stream's device current, whichever device the caller made current.
  DeviceApi::Event source_ready = nullptr, copied = nullptr;
  {
    DeviceGuard on(*this, src_device);
    CHAINER_DEVICE_CHECK(cuda_.event_create(&source_ready));
    CHAINER_DEVICE_CHECK(cuda_.event_record(source_ready, from.stream));
  }
  {
    DeviceGuard on(*this, dst_device);
    CHAINER_DEVICE_CHECK(cuda_.stream_wait_event(to.stream, source_ready));
    CHAINER_DEVICE_CHECK(cuda_.event_destroy(source_ready));
    CHAINER_DEVICE_CHECK(cuda_.memcpy_peer_async(dst, dst_device, src, src_device, bytes, to.stream));
    CHAINER_DEVICE_CHECK(cuda_.event_create(&copied));
    CHAINER_DEVICE_CHECK(cuda_.event_record(copied, to.stream));
  }
  DeviceGuard on(*this, src_device);
  CHAINER_DEVICE_CHECK(cuda_.stream_wait_event(from.stream, copied));
  CHAINER_DEVICE_CHECK(cuda_.event_destroy(copied));
}

LaunchCounts DeviceRuntime::launch_counts() { return {kernel_launches_.load(), graph_launches_.load()}; }

void* DeviceRuntime::native_stream(int device) {
  DeviceState& s = state(device);
  own_capture(s, "native_stream (a library queueing work on the compute stream)");
  return s.stream;
}

void DeviceRuntime::begin_capture(int device) {
  DeviceState& s = state(device);
  // The device is this thread's from here on: other threads' work on it is refused.
  std::thread::id none;
  if (!s.capturing.compare_exchange_strong(none, std::this_thread::get_id(), std::memory_order_acq_rel)) {
    CHAINER_ASSERT(none != std::this_thread::get_id(), "begin_capture: cuda:", device, " is already capturing");
    refuse_while_another_thread_captures(device, "begin_capture");
  }
  try {
    if (prepare_capture_) {
      DeviceGuard on(*this, device);
      prepare_capture_(device);
    }
    // Anything still queued must not be mistaken for part of the step.
    wait_and_check(s);
    auto record = std::make_unique<CaptureRecord>();
    record->device = device;
    record->pool = s.allocator->begin_capture(s.stream);
    s.capture = std::move(record);
    const int status = cuda_.stream_begin_capture(s.stream);
    if (status != kDeviceSuccess) {
      s.allocator->end_capture(s.stream);
      s.allocator->release_pool(s.capture->pool);
      s.capture.reset();
      CHAINER_DEVICE_CHECK(status);
    }
  } catch (...) {
    s.capturing.store(std::thread::id(), std::memory_order_release);
    throw;
  }
}

std::shared_ptr<void> DeviceRuntime::end_capture(int device) {
  DeviceState& s = state(device);
  const CaptureRecord* capture = own_capture(s, "end_capture");
  CHAINER_ASSERT(capture, "end_capture: cuda:", device, " is not capturing");
  DeviceApi::Graph graph = nullptr;
  const int ended = cuda_.stream_end_capture(s.stream, &graph);
  s.allocator->end_capture(s.stream);
  std::shared_ptr<CaptureRecord> record(s.capture.release(), [this](CaptureRecord* r) { destroy(r); });
  s.capturing.store(std::thread::id(), std::memory_order_release);
  CHAINER_DEVICE_CHECK(ended);  // a failure: RECORD's destruction trims the staging pool
  const int instantiated = cuda_.graph_instantiate(&record->exec, graph);
  CHAINER_DEVICE_CHECK(cuda_.graph_destroy(graph));
  CHAINER_DEVICE_CHECK(instantiated);
  trim_staging(s);
  return record;
}

void DeviceRuntime::abort_capture(int device) {
  DeviceState& s = state(device);
  // This thread's capture only: another thread's is left alone.
  if (s.capturing.load(std::memory_order_acquire) != std::this_thread::get_id()) return;
  DeviceApi::Graph graph = nullptr;
  cuda_.stream_end_capture(s.stream, &graph);  // fails when the capture was invalidated; either way it is over
  cuda_.get_last_error();
  if (graph) CHAINER_DEVICE_CHECK_QUIETLY(*this, cuda_.graph_destroy(graph));
  s.allocator->end_capture(s.stream);
  CaptureRecord* record = s.capture.release();
  s.capturing.store(std::thread::id(), std::memory_order_release);
  destroy(record);
}

void DeviceRuntime::replay(const std::shared_ptr<void>& graph) {
  auto* record = static_cast<CaptureRecord*>(graph.get());
  DeviceState& s = state(record->device);
  own_capture(s, "replay");
  for (CaptureRecord::Arena& arena : record->arenas) {
    s.scalars.write(
        arena.used,
        [&arena](void* host) {
          for (const CaptureRecord::Writer& w : arena.writers) w.fill(static_cast<char*>(host) + w.offset);
        },
        arena.block.get(), s.stream);
  }
  CHAINER_DEVICE_CHECK(cuda_.graph_launch(record->exec, s.stream));
  ++graph_launches_;
}

// A capture may have taken the staging pool past its limit (it may not free pinned memory);
// once it is over, the excess goes back. A free path: never throws.
void DeviceRuntime::trim_staging(DeviceState& s) noexcept {
  try {
    s.staging.trim();
  } catch (const std::exception& e) {
    ignore(e, "pinned staging buffers");
  }
}

// Frees what a capture held, in stream order: the pool goes back to ordinary use behind the
// graph's last launch, and staging buffers once that launch has read them. Never throws.
void DeviceRuntime::destroy(CaptureRecord* r) noexcept {
  std::unique_ptr<CaptureRecord> owned(r);
  DeviceState* s = nullptr;
  try {
    s = &state(r->device);
    DeviceGuard on(*this, r->device, /*quiet=*/true);
    if (r->exec) CHAINER_DEVICE_CHECK_QUIETLY(*this, cuda_.graph_exec_destroy(r->exec));  // after a launch in flight
    r->arenas.clear();
    s->allocator->release_pool(r->pool);
    for (PinnedStaging::Buffer& b : r->pinned) s->staging.release(b, s->stream);  // a throw: caught below
  } catch (const std::exception& e) {
    ignore(e, "a CUDA graph");
  }
  // The buffers given back may leave the pool past its limit; not while the device is being
  // captured (a graph dropped during a step), whose end trims instead.
  if (s && s->capturing.load(std::memory_order_acquire) == std::thread::id()) trim_staging(*s);
}

RuntimeVersions DeviceRuntime::versions() {
  RuntimeVersions v;
  // Both succeed without a GPU; the driver's is 0 where no driver is installed.
  CHAINER_DEVICE_CHECK(cuda_.driver_get_version(&v.driver));
  CHAINER_DEVICE_CHECK(cuda_.runtime_get_version(&v.runtime));
  return v;
}

DeviceProperties DeviceRuntime::device_properties(int device) {
  DeviceProperties p;
  CHAINER_DEVICE_CHECK(cuda_.get_device_properties(device, &p));
  return p;
}

// ---- What the kernel files use ----

void* DeviceRuntime::compute_stream() {
  DeviceState& s = current();
  own_capture(s, "a kernel launch");
  return s.stream;
}

void DeviceRuntime::count_launch() {
  if (!own_capture(current(), "a kernel launch")) ++kernel_launches_;
}

DeviceErrorRecord* DeviceRuntime::device_error_record() { return current().error_device; }

std::shared_ptr<void> DeviceRuntime::upload(const void* src, size_t bytes) {
  const int device = current_device();
  std::shared_ptr<void> owner = allocate(device, bytes);
  if (bytes) copy_from_host(device, owner.get(), src, bytes);
  return owner;
}

const void* DeviceRuntime::step_scalars(size_t bytes, std::function<void(void* host)> fill) {
  const int device = current_device();
  DeviceState& s = state(device);
  const size_t slot = std::max<size_t>(kScalarAlign, (bytes + kScalarAlign - 1) / kScalarAlign * kScalarAlign);
  CHAINER_ASSERT(slot <= kRingBytes, "step_scalars: ", bytes, " bytes do not fit the ring");
  CaptureRecord* capture = own_capture(s, "step_scalars");
  if (!capture) return s.scalars.write(bytes, fill, nullptr, s.stream);
  // Captured: a slot of the graph's arena, refilled before every replay.
  std::vector<CaptureRecord::Arena>& arenas = capture->arenas;
  if (arenas.empty() || arenas.back().used + slot > arenas.back().bytes) {
    CaptureRecord::Arena arena;
    arena.bytes = std::min(kRingBytes, std::max(slot, kArenaBytes << std::min<size_t>(arenas.size(), 2)));
    arena.block = allocate(device, arena.bytes);
    arenas.push_back(std::move(arena));
  }
  CaptureRecord::Arena& arena = arenas.back();
  arena.writers.push_back({arena.used, bytes, std::move(fill)});
  arena.used += slot;
  return static_cast<char*>(arena.block.get()) + arena.writers.back().offset;
}

}  // namespace chainer::cuda
