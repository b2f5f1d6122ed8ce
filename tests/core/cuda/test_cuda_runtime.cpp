// The CUDA plugin's runtime logic (core/cuda/device_runtime.h) on the host, against a fake CUDA
// runtime (core/cuda/device_api.h): device memory is host memory and work runs at once, but the
// fake keeps CUDA's rules that the logic must keep too (an event is recorded on a stream of its
// own device; the current device and a failure, the last error until cleared, are per thread;
// what may not happen while a stream is captured) and can be told to answer as a GPU machine
// might: two devices, events not ready, copies that run only once a wait reaches them, a free
// that fails, an old driver, a runtime that has shut down at exit. It may be called from several
// threads.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/cuda/device_runtime.h"
#include "core/memory/pinned_staging.h"

using namespace chainer;
using namespace chainer::cuda;

namespace {

class FakeCuda final : public DeviceApi {
 public:
  struct FakeStream {
    int device;
  };
  struct FakeEvent {
    int device;
    bool destroyed = false;
    Stream stream = nullptr;  // where it was last recorded, after the SEQ-th copy queued
    int64_t seq = 0;
  };
  struct CopyCall {
    Copy kind;
    void* dst;
    size_t bytes;
    Stream stream;
  };
  struct MemsetCall {
    void* ptr;
    size_t bytes;
    Stream stream;
  };

  // What the fake answers.
  int devices = 1;
  int count_status = kDeviceSuccess;  // get_device_count's
  int driver = 13000, runtime = 13000;
  bool events_ready = true;           // event_query's answer (without defer_copies)
  int free_status = kDeviceSuccess;   // free's
  bool shut_down = false;             // every call fails as after the CUDA runtime's exit
  // Copies (memcpy_async) run only once a wait reaches them (an event's or the stream's), as on
  // a GPU; an event is ready once the copies queued before it have run.
  bool defer_copies = false;

  // What it saw.
  int calls = 0;
  std::vector<CopyCall> copies;
  std::vector<MemsetCall> memsets;
  int event_synchronizes = 0, graph_launches = 0, frees = 0, host_allocs = 0, host_frees = 0;
  int begin_captures = 0, stream_synchronizes = 0;
  int sources_overwritten = 0;  // deferred copies whose source the host changed before they ran
  // Calls CUDA forbids while a stream is captured: they invalidate the capture.
  std::vector<std::string> capture_violations;
  // Work queued on the captured stream by a thread other than the capturing one: it would join
  // the graph.
  int joined_from_other_threads = 0;
  std::map<void*, size_t> device_memory;
  std::vector<std::unique_ptr<FakeStream>> streams;
  std::vector<std::unique_ptr<FakeEvent>> events;

  // The calling thread's current device and last error (CUDA keeps both per host thread).
  int& current() {
    std::lock_guard lock(mutex_);
    return me().current;
  }
  int& last_error() {
    std::lock_guard lock(mutex_);
    return me().last_error;
  }
  int copies_of(Copy kind) const {
    std::lock_guard lock(mutex_);
    int n = 0;
    for (const CopyCall& c : copies) n += c.kind == kind;
    return n;
  }
  int events_alive() const {
    std::lock_guard lock(mutex_);
    int n = 0;
    for (const auto& e : events) n += !e->destroyed;
    return n;
  }
  static int device_of(Stream s) { return static_cast<FakeStream*>(s)->device; }

  int get_device_count(int* count) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    if (count_status != kDeviceSuccess) return fail(count_status);
    *count = devices;
    return kDeviceSuccess;
  }
  int driver_get_version(int* v) override { return *v = driver, kDeviceSuccess; }
  int runtime_get_version(int* v) override { return *v = runtime, kDeviceSuccess; }
  int get_device(int* device) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    *device = me().current;
    return kDeviceSuccess;
  }
  int set_device(int device) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    if (device < 0 || device >= devices) return fail(101);
    me().current = device;
    return kDeviceSuccess;
  }
  int get_device_properties(int device, DeviceProperties* p) override {
    std::lock_guard lock(mutex_);
    if (device < 0 || device >= devices) return fail(101);
    p->name = "Fake GPU";
    return kDeviceSuccess;
  }
  int get_last_error() override {
    std::lock_guard lock(mutex_);
    return std::exchange(me().last_error, kDeviceSuccess);
  }
  const char* get_error_name(int status) override {
    switch (status) {
      case kErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
      case kErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
      case kErrorCudartUnloading: return "cudaErrorCudartUnloading";
      case 700: return "cudaErrorIllegalAddress";
      default: return "cudaErrorUnknown";
    }
  }
  const char* get_error_string(int status) override {
    switch (status) {
      case kErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
      case kErrorInvalidResourceHandle: return "invalid resource handle";
      case kErrorCudartUnloading: return "driver shutting down";
      case 700: return "an illegal memory access was encountered";
      default: return "unknown error";
    }
  }

  int malloc(void** ptr, size_t bytes) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    *ptr = std::calloc(1, bytes ? bytes : 1);
    device_memory[*ptr] = bytes;
    return kDeviceSuccess;
  }
  int free(void* ptr) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    ++frees;
    if (free_status != kDeviceSuccess) return fail(free_status);
    REQUIRE(device_memory.erase(ptr) == 1);
    std::free(ptr);
    return kDeviceSuccess;
  }
  int host_alloc(void** ptr, size_t bytes) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    ++host_allocs;
    *ptr = std::calloc(1, bytes);
    return kDeviceSuccess;
  }
  int host_free(void* ptr) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    if (capturing_) return forbidden_while_capturing("cudaFreeHost");  // it waits for the device, from any thread
    ++host_frees;
    std::free(ptr);
    return kDeviceSuccess;
  }
  int memset_async(void* ptr, int value, size_t bytes, Stream stream) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    queued_on(stream);
    memsets.push_back({ptr, bytes, stream});
    std::memset(ptr, value, bytes);
    return kDeviceSuccess;
  }
  int memcpy_async(void* dst, const void* src, size_t bytes, Copy kind, Stream stream) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    queued_on(stream);
    copies.push_back({kind, dst, bytes, stream});
    if (defer_copies) {
      const char* from = static_cast<const char*>(src);
      pending_.push_back({stream, ++queued_, dst, src, bytes, std::vector<char>(from, from + bytes)});
    } else {
      std::memcpy(dst, src, bytes);
    }
    return kDeviceSuccess;
  }
  int memcpy_peer_async(void* dst, int, const void* src, int, size_t bytes, Stream stream) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    queued_on(stream);
    copies.push_back({Copy::device_to_device, dst, bytes, stream});
    std::memcpy(dst, src, bytes);
    return kDeviceSuccess;
  }

  int stream_create(Stream* stream) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    streams.push_back(std::make_unique<FakeStream>(FakeStream{me().current}));
    *stream = streams.back().get();
    return kDeviceSuccess;
  }
  int stream_synchronize(Stream stream) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    if (stream == capturing_) return forbidden_while_capturing("cudaStreamSynchronize of the captured stream");
    ++stream_synchronizes;
    run_copies(stream, std::numeric_limits<int64_t>::max());
    return kDeviceSuccess;
  }
  int stream_wait_event(Stream stream, Event) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    queued_on(stream);
    return kDeviceSuccess;
  }
  int event_create(Event* event) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    events.push_back(std::make_unique<FakeEvent>(FakeEvent{me().current}));
    *event = events.back().get();
    return kDeviceSuccess;
  }
  int event_record(Event event, Stream stream) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    auto* e = static_cast<FakeEvent*>(event);
    REQUIRE(!e->destroyed);
    // CUDA: the event and the stream must belong to the same device.
    if (e->device != (stream ? device_of(stream) : me().current)) return fail(kErrorInvalidResourceHandle);
    queued_on(stream);
    e->stream = stream;
    e->seq = queued_;
    return kDeviceSuccess;
  }
  int event_query(Event event) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    auto* e = static_cast<FakeEvent*>(event);
    REQUIRE(!e->destroyed);
    if (waits_forbidden()) return forbidden_while_capturing("cudaEventQuery");
    const bool ready = defer_copies ? std::none_of(pending_.begin(), pending_.end(), [e](const PendingCopy& c) {
      return c.stream == e->stream && c.seq <= e->seq;
    })
                                    : events_ready;
    return ready ? kDeviceSuccess : fail(kErrorNotReady);
  }
  int event_synchronize(Event event) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    if (waits_forbidden()) return forbidden_while_capturing("cudaEventSynchronize");
    ++event_synchronizes;
    auto* e = static_cast<FakeEvent*>(event);
    run_copies(e->stream, e->seq);
    return kDeviceSuccess;
  }
  int event_destroy(Event event) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    auto* e = static_cast<FakeEvent*>(event);
    REQUIRE(!e->destroyed);
    e->destroyed = true;
    return kDeviceSuccess;
  }

  int thread_exchange_stream_capture_mode(CaptureMode* mode) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    std::swap(*mode, me().capture_mode);
    return kDeviceSuccess;
  }
  int stream_begin_capture(Stream stream) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    REQUIRE(!capturing_);
    ++begin_captures;
    capturing_ = stream;
    capture_thread_ = std::this_thread::get_id();
    capture_invalidated_ = false;
    return kDeviceSuccess;
  }
  int stream_end_capture(Stream stream, Graph* graph) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    REQUIRE(stream == capturing_);
    capturing_ = nullptr;
    if (capture_invalidated_) {
      *graph = nullptr;
      return fail(kErrorStreamCaptureInvalidated);
    }
    *graph = &graph_;
    return kDeviceSuccess;
  }
  int graph_instantiate(GraphExec* exec, Graph) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    *exec = &graph_;
    return kDeviceSuccess;
  }
  int graph_destroy(Graph) override {
    std::lock_guard lock(mutex_);
    return enter() ? kDeviceSuccess : fail(kErrorCudartUnloading);
  }
  int graph_exec_destroy(GraphExec) override {
    std::lock_guard lock(mutex_);
    return enter() ? kDeviceSuccess : fail(kErrorCudartUnloading);
  }
  int graph_launch(GraphExec, Stream stream) override {
    std::lock_guard lock(mutex_);
    if (!enter()) return fail(kErrorCudartUnloading);
    queued_on(stream);
    ++graph_launches;
    return kDeviceSuccess;
  }

 private:
  struct PerThread {
    int current = 0;
    int last_error = kDeviceSuccess;
    CaptureMode capture_mode = kCaptureGlobal;
  };
  struct PendingCopy {
    Stream stream;
    int64_t seq;  // the SEQ-th copy queued
    void* dst;
    const void* src;
    size_t bytes;
    std::vector<char> source;  // SRC's bytes when it was queued
  };

  // With mutex_ held, as everything below.
  PerThread& me() { return threads_[std::this_thread::get_id()]; }
  bool enter() {
    ++calls;
    return !shut_down;
  }
  int fail(int status) {
    me().last_error = status;
    return status;
  }
  void queued_on(Stream stream) {
    if (capturing_ && stream == capturing_ && std::this_thread::get_id() != capture_thread_) ++joined_from_other_threads;
  }
  // What CUDA forbids on the capturing thread outside relaxed mode: waiting for or querying work.
  bool waits_forbidden() {
    return capturing_ && std::this_thread::get_id() == capture_thread_ && me().capture_mode != kCaptureRelaxed;
  }
  int forbidden_while_capturing(const char* call) {
    capture_violations.push_back(call);
    capture_invalidated_ = true;
    return fail(kErrorStreamCaptureUnsupported);
  }
  // Runs STREAM's deferred copies up to the SEQ-th.
  void run_copies(Stream stream, int64_t seq) {
    std::erase_if(pending_, [&](const PendingCopy& c) {
      if (c.stream != stream || c.seq > seq) return false;
      if (std::memcmp(c.src, c.source.data(), c.bytes) != 0) ++sources_overwritten;
      std::memcpy(c.dst, c.src, c.bytes);
      return true;
    });
  }

  mutable std::mutex mutex_;
  std::map<std::thread::id, PerThread> threads_;
  std::deque<PendingCopy> pending_;
  int64_t queued_ = 0;
  Stream capturing_ = nullptr;
  std::thread::id capture_thread_;
  bool capture_invalidated_ = false;
  int graph_ = 0;
};

// A runtime over FAKE whose warnings are collected.
struct Setup {
  FakeCuda fake;
  std::vector<std::string> warnings;
  DeviceRuntime runtime{fake, Kernels{}, [this](const std::string& m) { warnings.push_back(m); }};
  explicit Setup(int devices = 1) { fake.devices = devices; }
};

}  // namespace

TEST_CASE("cuda runtime: no device because the driver is older than the runtime names both and the release needed") {
  Setup t;
  t.fake.count_status = kErrorInsufficientDriver;
  t.fake.driver = 12040;
  t.fake.runtime = 13000;
  std::string why;
  CHECK(t.runtime.device_count(why) == 0);
  CHECK_THAT(why, Catch::Contains("CUDA driver version is insufficient for CUDA runtime version") &&
                      Catch::Contains("this CUDA 13.0 runtime needs an NVIDIA driver for CUDA 13.0 or newer") &&
                      Catch::Contains("release 580 or newer") &&
                      Catch::Contains("the installed driver supports CUDA 12.4 at most"));
  CHECK(t.fake.last_error() == kDeviceSuccess);

  t.fake.driver = 0;
  why.clear();
  CHECK(t.runtime.device_count(why) == 0);
  CHECK_THAT(why, Catch::Contains("no NVIDIA driver is installed"));

  CHECK(insufficient_driver_reason(11080, 12040) ==
        "this CUDA 12.4 runtime needs an NVIDIA driver for CUDA 12.0 or newer (release 525 or newer); "
        "the installed driver supports CUDA 11.8 at most");
  CHECK(insufficient_driver_reason(13000, 14010) ==
        "this CUDA 14.1 runtime needs an NVIDIA driver for CUDA 14.0 or newer; the installed driver supports CUDA "
        "13.0 at most");
}

TEST_CASE("cuda runtime: every refusal of a stream capture (900 to 908) is a CaptureError and does not stay the last error") {
  FakeCuda fake;
  // CaptureError ends the capture and the step runs eagerly instead; chainer::Error ends training.
  auto throws_capture_error = [&fake](int status) {
    try {
      throw_device_error(fake, status, "cudaStreamEndCapture(stream, &graph)", "runtime.cu", 1);
    } catch (const CaptureError&) {
      return true;
    } catch (const Error&) {
    }
    return false;
  };
  // Unsupported, Invalidated, Merge, Unmatched, Unjoined, Isolation, Implicit, CapturedEvent,
  // WrongThread: cudaError_t's values (runtime.cu checks them).
  for (int status = 900; status <= 908; ++status) {
    INFO("status " << status);
    fake.last_error() = status;
    CHECK(throws_capture_error(status));
    CHECK(fake.last_error() == kDeviceSuccess);
  }
  for (int status : {int(kErrorNotReady), 700, 899, 909}) {
    INFO("status " << status);
    CHECK_FALSE(throws_capture_error(status));
  }
}

TEST_CASE("cuda runtime: the device-error record is cleared on the compute stream and not on the legacy default stream") {
  Setup t;
  t.runtime.set_device(0);
  void* record = t.runtime.device_error_record();
  int clears = 0;
  for (const FakeCuda::MemsetCall& m : t.fake.memsets) {
    if (m.ptr != record) continue;
    ++clears;
    CHECK(m.stream == t.runtime.native_stream(0));
  }
  CHECK(clears == 1);
}

TEST_CASE("cuda runtime: a kernel's recorded error is thrown at the next host read and then cleared") {
  Setup t;
  t.runtime.set_device(0);
  DeviceErrorRecord* record = t.runtime.device_error_record();  // the fake's device memory is the host's
  *record = {kLabelOutOfRange, 3, 12, 10, -1};
  CHECK_THROWS_WITH(t.runtime.synchronize(0), Catch::StartsWith("softmax_cross_entropy: label 12 at index 3 is out of "
                                                                "range for 10 classes") &&
                                                  Catch::Contains("found on cuda:0"));
  CHECK(record->code == kNoDeviceError);
  CHECK_NOTHROW(t.runtime.synchronize(0));
}

TEST_CASE("cuda runtime: a copy between two devices records each event with its stream's device current") {
  Setup t(2);
  for (int current : {1, 0}) {  // the caller made the destination current, or the source
    INFO("current device: cuda:" << current);
    t.runtime.set_device(0);
    t.runtime.set_device(1);
    std::shared_ptr<void> src = t.runtime.allocate(0, 64), dst = t.runtime.allocate(1, 64);
    std::memset(src.get(), 7, 64);
    t.runtime.set_device(current);
    const int events_before = t.fake.events_alive();
    REQUIRE_NOTHROW(t.runtime.copy_between(1, dst.get(), 0, src.get(), 64));
    CHECK(static_cast<unsigned char*>(dst.get())[63] == 7);
    CHECK(t.fake.current() == current);              // the caller's device is restored
    CHECK(t.fake.events_alive() == events_before);  // both events destroyed
    CHECK(t.fake.last_error() == kDeviceSuccess);
  }
}

TEST_CASE("cuda runtime: the current device is CUDA's even after another library called cudaSetDevice") {
  Setup t(2);
  t.runtime.set_device(1);
  t.runtime.set_device(0);
  CHECK(t.runtime.compute_stream() == t.runtime.native_stream(0));
  t.fake.current() = 1;  // NCCL, cuDNN or the user's own CUDA code switched devices
  CHECK(t.runtime.current_device() == 1);
  CHECK(t.runtime.compute_stream() == t.runtime.native_stream(1));
  CHECK(t.runtime.device_error_record() != nullptr);
  t.runtime.set_device(0);
  CHECK(t.fake.current() == 0);
  CHECK(t.runtime.compute_stream() == t.runtime.native_stream(0));
}

TEST_CASE("cuda runtime: eager per-step scalars cost one copy per call whatever their size") {
  Setup t;
  t.runtime.set_device(0);
  for (size_t bytes : {size_t(8), size_t(256), size_t(3840), size_t(100'000)}) {
    INFO(bytes << " bytes");
    const int before = t.fake.copies_of(DeviceApi::Copy::host_to_device);
    const auto* p = static_cast<const unsigned char*>(t.runtime.step_scalars(bytes, [bytes](void* host) {
      for (size_t i = 0; i < bytes; ++i) static_cast<unsigned char*>(host)[i] = static_cast<unsigned char>(i * 7 + 1);
    }));
    CHECK(t.fake.copies_of(DeviceApi::Copy::host_to_device) == before + 1);
    CHECK(t.fake.copies.back().stream == t.runtime.native_stream(0));
    bool same = true;
    for (size_t i = 0; i < bytes; ++i) same = same && p[i] == static_cast<unsigned char>(i * 7 + 1);
    CHECK(same);
  }
}

TEST_CASE("cuda runtime: the eager scalar ring waits only when it comes back to a segment still being copied") {
  Setup t;
  t.runtime.set_device(0);
  constexpr size_t kSlot = DeviceRuntime::kScalarAlign;
  constexpr int kPerLap = int(DeviceRuntime::kRingBytes / kSlot);
  constexpr int kPerSegment = kPerLap / DeviceRuntime::kRingSegments;
  auto write = [&] { t.runtime.step_scalars(kSlot, [](void* host) { std::memset(host, 1, DeviceRuntime::kScalarAlign); }); };
  std::vector<const void*> first_lap;
  for (int i = 0; i < kPerLap; ++i) first_lap.push_back(t.runtime.step_scalars(kSlot, [](void*) {}));
  CHECK(t.fake.event_synchronizes == 0);  // a whole ring ahead of the device before any wait
  write();  // back at the first segment, whose copies were queued a lap ago
  CHECK(t.fake.event_synchronizes == 1);
  for (int i = 1; i < kPerSegment; ++i) write();
  CHECK(t.fake.event_synchronizes == 1);  // one wait per segment, not per write
  const void* p = t.runtime.step_scalars(kSlot, [](void*) {});
  CHECK(t.fake.event_synchronizes == 2);
  CHECK(p == first_lap[kPerSegment]);  // the same device slots, lap after lap
  CHECK(t.fake.last_error() == kDeviceSuccess);
}

TEST_CASE("cuda runtime: the scalar ring's wrap never overwrites bytes of a copy still queued") {
  Setup t;
  t.runtime.set_device(0);
  t.fake.defer_copies = true;  // each copy reads its host bytes only when a wait reaches it
  constexpr size_t kSegment = DeviceRuntime::kRingBytes / DeviceRuntime::kRingSegments;
  auto write = [&](size_t bytes, unsigned char value) {
    t.runtime.step_scalars(bytes, [bytes, value](void* host) { std::memset(host, value, bytes); });
  };
  SECTION("the write that wraps starts in the segment still open") {
    write(kSegment / 2, 1);  // queued, in segment 0, which stays open for the next writes
    write(DeviceRuntime::kRingBytes - kSegment / 4, 2);  // does not fit after it: back to offset 0
  }
  SECTION("the write that wraps starts elsewhere") {
    write(kSegment * 3 / 2, 1);  // through segment 0 into segment 1
    write(DeviceRuntime::kRingBytes - kSegment, 2);
  }
  t.runtime.synchronize(0);  // runs every copy
  CHECK(t.fake.sources_overwritten == 0);
  CHECK(t.fake.last_error() == kDeviceSuccess);
}

TEST_CASE("cuda runtime: threads queueing eager scalars and copies on one device each get their own slots and bytes") {
  Setup t;
  t.runtime.set_device(0);
  constexpr int kThreads = 4;
  static constexpr size_t kBytes = 200;  // one slot each
  // All within one lap of the ring, so no slot is legitimately reused.
  constexpr int kPerThread = int(DeviceRuntime::kRingBytes / DeviceRuntime::kScalarAlign) / kThreads / 2;
  std::vector<std::vector<const unsigned char*>> slots(kThreads);
  std::vector<int> copies_wrong(kThreads, 0);
  std::vector<std::shared_ptr<void>> dst(kThreads);
  for (auto& d : dst) d = t.runtime.allocate(0, kBytes);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      t.runtime.set_device(0);
      std::vector<unsigned char> host(kBytes);
      for (int n = 0; n < kPerThread; ++n) {
        const auto value = static_cast<unsigned char>(i * 50 + n % 50);
        slots[i].push_back(static_cast<const unsigned char*>(t.runtime.step_scalars(kBytes, [value](void* p) {
          std::this_thread::yield();  // other threads' writes may come meanwhile
          std::memset(p, value, kBytes);
        })));
        std::fill(host.begin(), host.end(), value);
        t.runtime.copy_from_host(0, dst[i].get(), host.data(), host.size());
        copies_wrong[i] += std::memcmp(dst[i].get(), host.data(), kBytes) != 0;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  std::set<const unsigned char*> distinct;
  int slots_wrong = 0;
  for (int i = 0; i < kThreads; ++i) {
    for (int n = 0; n < kPerThread; ++n) {
      distinct.insert(slots[i][n]);
      const auto value = static_cast<unsigned char>(i * 50 + n % 50);
      slots_wrong += std::count(slots[i][n], slots[i][n] + kBytes, value) != kBytes;
    }
    CHECK(copies_wrong[i] == 0);
  }
  CHECK(distinct.size() == size_t(kThreads * kPerThread));
  CHECK(slots_wrong == 0);
  CHECK(t.fake.copies_of(DeviceApi::Copy::host_to_device) == 2 * kThreads * kPerThread);
}

TEST_CASE("cuda runtime: a replayed graph refills all its per-step scalars with one copy") {
  Setup t;
  t.runtime.set_device(0);
  double lr = 0.1;
  constexpr int kCalls = 20;
  constexpr size_t kBytes = 48 * 80;  // a multi-tensor update's scalars for 48 parameters
  t.runtime.begin_capture(0);
  std::vector<const double*> scalars;
  for (int i = 0; i < kCalls; ++i) {
    scalars.push_back(static_cast<const double*>(t.runtime.step_scalars(kBytes, [&lr, i](void* host) {
      static_cast<double*>(host)[0] = lr * (i + 1);
      static_cast<double*>(host)[kBytes / sizeof(double) - 1] = -lr;
    })));
  }
  const int copies_before_end = t.fake.copies_of(DeviceApi::Copy::host_to_device);
  std::shared_ptr<void> graph = t.runtime.end_capture(0);
  for (double step_lr : {0.5, 0.25}) {
    lr = step_lr;
    const int copies = t.fake.copies_of(DeviceApi::Copy::host_to_device), launches = t.fake.graph_launches;
    t.runtime.replay(graph);
    CHECK(t.fake.copies_of(DeviceApi::Copy::host_to_device) == copies + 1);
    CHECK(t.fake.graph_launches == launches + 1);
    for (int i = 0; i < kCalls; ++i) {
      CHECK(scalars[i][0] == step_lr * (i + 1));
      CHECK(scalars[i][kBytes / sizeof(double) - 1] == -step_lr);
    }
  }
  CHECK(copies_before_end == 0);  // nothing is copied while capturing: the fills run at each replay
  CHECK(t.runtime.launch_counts().graphs == 2);
}

TEST_CASE("cuda runtime: while a thread captures a device, other threads' work on it is refused, not joined to the graph") {
  Setup t(2);
  t.runtime.set_device(1);
  t.runtime.set_device(0);
  std::shared_ptr<void> block = t.runtime.allocate(0, 256), other = t.runtime.allocate(1, 256);
  std::vector<char> host(256, 5);
  t.runtime.begin_capture(0);
  std::shared_ptr<void> earlier = t.runtime.end_capture(0);  // a graph to replay
  t.runtime.begin_capture(0);
  const int steps_before = t.fake.begin_captures;

  // What each call from another thread did (Catch's assertions stay on this thread).
  std::map<std::string, std::string> outcome;
  auto attempt = [&outcome](const std::string& op, const std::function<void()>& call) {
    try {
      call();
      outcome[op] = "not refused";
    } catch (const CaptureError& e) {
      outcome[op] = std::string("CaptureError: ") + e.what();
    } catch (const Error& e) {
      outcome[op] = e.what();
    } catch (const std::exception& e) {
      outcome[op] = std::string("not chainer::Error: ") + e.what();
    }
  };
  std::thread worker([&] {
    t.runtime.set_device(0);
    attempt("allocate", [&] { t.runtime.allocate(0, 64); });
    attempt("upload", [&] { t.runtime.upload(host.data(), host.size()); });
    attempt("copy_from_host", [&] { t.runtime.copy_from_host(0, block.get(), host.data(), host.size()); });
    attempt("copy_to_host", [&] { t.runtime.copy_to_host(0, host.data(), block.get(), host.size()); });
    attempt("copy_between", [&] { t.runtime.copy_between(0, block.get(), 0, block.get(), 0); });
    attempt("copy_between devices", [&] { t.runtime.copy_between(1, other.get(), 0, block.get(), 64); });
    attempt("step_scalars", [&] { t.runtime.step_scalars(8, [](void*) {}); });
    attempt("a kernel launch", [&] { t.runtime.compute_stream(); });
    attempt("native_stream", [&] { t.runtime.native_stream(0); });
    attempt("synchronize", [&] { t.runtime.synchronize(0); });
    attempt("replay", [&] { t.runtime.replay(earlier); });
    attempt("begin_capture", [&] { t.runtime.begin_capture(0); });
    attempt("end_capture", [&] { t.runtime.end_capture(0); });
    t.runtime.abort_capture(0);  // not this thread's capture: left alone
    // Another device is not being captured.
    t.runtime.set_device(1);
    attempt("on cuda:1", [&] {
      t.runtime.copy_from_host(1, other.get(), host.data(), host.size());
      t.runtime.step_scalars(8, [](void*) {});
      t.runtime.compute_stream();
      t.runtime.synchronize(1);
    });
  });
  worker.join();

  CHECK(outcome.size() == 14);
  for (const auto& [op, what] : outcome) {
    INFO(op << ": " << what);
    if (op == "on cuda:1") {
      CHECK(what == "not refused");
    } else {
      CHECK_THAT(what, Catch::StartsWith("cuda:0: ") &&
                           Catch::Contains("another thread is capturing a CUDA graph on this device") &&
                           Catch::Contains("before that capture begins or after it ends"));
    }
  }
  CHECK_THAT(outcome["a kernel launch"], Catch::StartsWith("cuda:0: a kernel launch refused"));
  CHECK(t.fake.joined_from_other_threads == 0);
  CHECK(t.fake.begin_captures == steps_before);

  // The capture went on, undisturbed; then the other thread's work is taken again.
  CHECK(t.runtime.end_capture(0) != nullptr);
  std::thread after([&] {
    t.runtime.set_device(0);
    attempt("after", [&] {
      t.runtime.copy_from_host(0, block.get(), host.data(), host.size());
      t.runtime.step_scalars(8, [](void*) {});
      t.runtime.synchronize(0);
    });
  });
  after.join();
  CHECK(outcome["after"] == "not refused");
  CHECK(t.fake.capture_violations.empty());
}

TEST_CASE("cuda runtime: begin_capture first prepares the device on the capturing thread, with it current") {
  FakeCuda fake;
  fake.devices = 2;
  struct Call {
    int device, current, begin_captures, stream_synchronizes;
    std::thread::id thread;
  };
  std::vector<Call> calls;
  bool fail = false;
  DeviceRuntime runtime(fake, Kernels{}, {}, [&](int device) {
    calls.push_back({device, fake.current(), fake.begin_captures, fake.stream_synchronizes, std::this_thread::get_id()});
    if (fail) throw Error("cuBLAS: cublasCreate failed");
  });
  runtime.set_device(0);
  runtime.set_device(1);
  runtime.set_device(0);  // the caller's device is not the one captured
  std::thread::id capturing_thread;
  std::thread capturing([&] {
    capturing_thread = std::this_thread::get_id();
    fake.current() = 0;
    runtime.begin_capture(1);
    runtime.end_capture(1);
  });
  capturing.join();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].device == 1);
  CHECK(calls[0].current == 1);
  CHECK(calls[0].begin_captures == 0);       // before the capture begins
  CHECK(calls[0].stream_synchronizes == 0);  // and before the wait for the device
  CHECK(calls[0].thread == capturing_thread);
  CHECK(fake.begin_captures == 1);

  // A preparation that fails fails begin_capture; nothing was captured, the device is free.
  fail = true;
  CHECK_THROWS_WITH(runtime.begin_capture(0), "cuBLAS: cublasCreate failed");
  CHECK(fake.current() == 0);
  CHECK(fake.begin_captures == 1);
  fail = false;
  runtime.begin_capture(0);
  CHECK(runtime.end_capture(0) != nullptr);
  CHECK(calls.size() == 3);
}

TEST_CASE("cuda runtime: an event that is not ready does not stay the thread's last error") {
  Setup t;
  t.runtime.set_device(0);
  std::shared_ptr<void> dst = t.runtime.allocate(0, 1000);
  const std::vector<char> src(1000, 3);
  t.fake.events_ready = false;
  const int host_allocs = t.fake.host_allocs;
  t.runtime.copy_from_host(0, dst.get(), src.data(), src.size());
  t.runtime.copy_from_host(0, dst.get(), src.data(), src.size());  // the first buffer is still being read
  CHECK(t.fake.host_allocs == host_allocs + 2);
  CHECK(t.fake.last_error() == kDeviceSuccess);
}

TEST_CASE("cuda runtime: pinned staging stays bounded when the host runs ahead of the device") {
  Setup t;
  t.runtime.set_device(0);
  constexpr size_t kBytes = size_t(32) << 20;  // staged (under kMaxStagedBytes), 16 copies: 512 MiB unbounded
  std::shared_ptr<void> dst = t.runtime.allocate(0, kBytes);
  const std::vector<char> src(kBytes, 1);
  t.fake.events_ready = false;  // no copy ever seen complete: the host is always ahead
  const int host_allocs = t.fake.host_allocs, waits = t.fake.event_synchronizes;
  for (int i = 0; i < 16; ++i) t.runtime.copy_from_host(0, dst.get(), src.data(), src.size());
  // At most PinnedStaging's 256 MiB pinned for staging; beyond, the host waited for its oldest copy.
  CHECK(size_t(t.fake.host_allocs - host_allocs) * kBytes <= PinnedStaging::kDefaultLimit);
  CHECK(t.fake.event_synchronizes > waits);
  CHECK(t.fake.last_error() == kDeviceSuccess);
}

TEST_CASE("cuda runtime: a copy from the host while capturing frees no pinned memory and waits for no copy; the pool is trimmed after") {
  Setup t;
  t.runtime.set_device(0);
  constexpr size_t kBytes = PinnedStaging::kDefaultLimit / 4;  // staged; four fill the pool
  std::shared_ptr<void> dst = t.runtime.allocate(0, kBytes);
  const std::vector<char> src(kBytes, 1);
  t.fake.events_ready = false;  // no copy ever seen complete
  for (int i = 0; i < 4; ++i) t.runtime.copy_from_host(0, dst.get(), src.data(), src.size());
  const int host_allocs = t.fake.host_allocs, host_frees = t.fake.host_frees;

  t.runtime.begin_capture(0);
  // Outside a capture this would wait for the oldest copy and free its buffer to make room.
  REQUIRE_NOTHROW(t.runtime.copy_from_host(0, dst.get(), src.data(), src.size()));
  CHECK(t.fake.host_allocs == host_allocs + 1);  // past the limit
  CHECK(t.fake.host_frees == host_frees);
  std::shared_ptr<void> graph = t.runtime.end_capture(0);
  CHECK(t.fake.capture_violations.empty());
  // Once the capture is over, back under the limit (the graph keeps its buffer).
  CHECK(t.fake.host_frees == host_frees + 1);
  CHECK(t.fake.last_error() == kDeviceSuccess);
}

// A copy too large to stage through pinned memory goes straight from the caller's memory: a
// graph would read that memory again at every replay, after the caller has freed it. So it
// ends the capture, and the step runs eagerly.
TEST_CASE("cuda runtime: a copy from the host too large to stage is not captured") {
  Setup t;
  t.runtime.set_device(0);
  constexpr size_t kBytes = DeviceRuntime::kMaxStagedBytes + 1;
  std::shared_ptr<void> dst = t.runtime.allocate(0, kBytes);
  const std::vector<char> src(kBytes, 1);
  REQUIRE_NOTHROW(t.runtime.copy_from_host(0, dst.get(), src.data(), src.size()));  // eager: copied at once
  t.runtime.begin_capture(0);
  CHECK_THROWS_AS(t.runtime.copy_from_host(0, dst.get(), src.data(), src.size()), CaptureError);
  t.runtime.abort_capture(0);
  CHECK(t.fake.capture_violations.empty());
  CHECK(t.fake.last_error() == kDeviceSuccess);
}

TEST_CASE("cuda runtime: a free that fails is reported once and never thrown") {
  Setup t;
  t.runtime.set_device(0);
  for (size_t bytes : {size_t(1000), size_t(3) << 20, size_t(5) << 20}) t.runtime.allocate(0, bytes).reset();
  t.fake.free_status = 700;  // a sticky error: every later call fails
  REQUIRE_NOTHROW(t.runtime.empty_cache());
  CHECK(t.fake.frees == 3);
  CHECK(t.runtime.ignored_errors() == 3);
  REQUIRE(t.warnings.size() == 1);
  CHECK_THAT(t.warnings[0], Catch::Contains("cuda_.free(ptr) failed: an illegal memory access was encountered") &&
                                Catch::Contains("later ones are not reported"));
  CHECK(t.fake.last_error() == kDeviceSuccess);
}

TEST_CASE("cuda runtime: a graph destroyed after the CUDA runtime shut down is not an error") {
  Setup t;
  t.runtime.set_device(0);
  t.runtime.begin_capture(0);
  t.runtime.step_scalars(8, [](void*) {});
  std::vector<char> host(100);
  t.runtime.copy_from_host(0, t.runtime.allocate(0, 100).get(), host.data(), host.size());
  std::shared_ptr<void> graph = t.runtime.end_capture(0);
  t.fake.shut_down = true;
  REQUIRE_NOTHROW(graph.reset());
  CHECK(t.warnings.size() == 1);
}

TEST_CASE("cuda runtime: the device state is left alone when the runtime goes after CUDA has shut down") {
  SECTION("in this process") {
    FakeCuda fake;
    int calls = 0;
    {
      DeviceRuntime runtime(fake, Kernels{});
      runtime.set_device(0);
      runtime.allocate(0, 1000).reset();  // cached
      runtime.allocate(0, 5 << 20).reset();
      fake.shut_down = true;
      calls = fake.calls;
    }
    CHECK(fake.calls == calls);  // no CUDA call at all
  }
  SECTION("at exit as a static") {
    std::fflush(nullptr);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      static FakeCuda* fake = new FakeCuda;  // outlives the runtime
      static DeviceRuntime runtime(*fake, Kernels{});
      runtime.set_device(0);
      runtime.allocate(0, 1000).reset();  // blocks cached at exit
      runtime.allocate(0, 5 << 20).reset();
      fake->shut_down = true;  // CUDA's own teardown ran first
      std::exit(0);            // destroys the runtime
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    const int signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;  // SIGABRT: std::terminate
    const int exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    CHECK(signal == 0);
    CHECK(exit_status == 0);
  }
}
