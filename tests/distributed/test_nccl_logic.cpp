// The NCCL communicators' logic (distributed/communicators/nccl_collectives.h) on the host,
// against a fake CUDA runtime and NCCL (NcclApi): device memory is host memory, streams run
// nothing, and each test scripts what the queries answer (work that is "not ready" for a while
// or forever, a communicator whose asynchronous error turns non-zero) and reads back what was
// called. The collectives act as NCCL's would if every member held this member's data, and
// peer M's share of a gather holds 100 * (M + 1) + i.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/device/cuda.h"
#include "core/util/error.h"
#include "distributed/communicators/nccl_collectives.h"
#include "distributed/runtime/mpi_runtime.h"

namespace {

using chainer::DType;
using chainermn::nccl::DeviceSpan;
using chainermn::nccl::NcclApi;
using chainermn::nccl::NcclCollectives;

constexpr int kNcclRemoteError = 6;  // ncclRemoteError

// What the fake saw and what it is told to answer, shared by a test and the FakeApi it hands over.
// The communicator's watchdog thread calls the fake too: what both threads touch is atomic or
// under `mu`, and the last CUDA error is kept per thread, as libcudart keeps it.
struct FakeDevice {
  // Scripted.
  std::atomic<bool> events_pending{false};  // while true, events recorded meanwhile say "not ready"
  std::atomic<int> stream_not_ready{0};     // the next this many stream queries say "not ready"
  std::atomic<int> init_in_progress{2};     // after init, ncclCommGetAsyncError says "in progress" this many times
  std::atomic<bool> async_error{false};     // ncclCommGetAsyncError reports kNcclRemoteError
  std::atomic<int> version{22809};          // what ncclGetVersion answers (NCCL 2.28.9)
  std::atomic<int> version_status{0};       // what ncclGetVersion returns

  // Observed.
  std::mutex mu;
  std::map<std::thread::id, int> last_errors;  // the last CUDA error of each thread
  int nranks = 0, rank = 0;
  std::vector<std::string> calls;
  std::vector<std::thread::id> call_threads;  // the thread of each call
  std::vector<std::thread::id> set_device_threads;
  std::map<std::string, std::vector<size_t>> counts;  // per NCCL collective, its count arguments
  std::vector<std::pair<void*, void*>> stream_waits;  // (stream, event) of each cudaStreamWaitEvent
  std::vector<std::pair<void*, void*>> records;       // (event, stream) of each cudaEventRecord
  std::set<void*> stuck;                              // events recorded while events_pending
  std::atomic<int> allocations{0}, stream_queries{0}, aborts{0}, destroys{0}, events_alive{0}, streams_alive{0};

  int called(const std::string& name) {
    std::lock_guard<std::mutex> g(mu);
    return int(std::count(calls.begin(), calls.end(), name));
  }
  int last_error() {
    std::lock_guard<std::mutex> g(mu);
    return last_errors[std::this_thread::get_id()];
  }
  int answer(bool not_ready) {
    if (!not_ready) return NcclApi::kCudaSuccess;
    std::lock_guard<std::mutex> g(mu);
    last_errors[std::this_thread::get_id()] = NcclApi::kCudaErrorNotReady;  // as cudaEventQuery does
    return NcclApi::kCudaErrorNotReady;
  }
};

constexpr int kForever = -1;  // stream_not_ready: never drains

template <class T>
void scale(void* p, size_t n, int by) {
  for (size_t i = 0; i < n; ++i) static_cast<T*>(p)[i] *= T(by);
}

class FakeApi final : public NcclApi {
 public:
  explicit FakeApi(FakeDevice& d) : d_(d) {}

  int cudaSetDevice(int) override {
    {
      std::lock_guard<std::mutex> g(d_.mu);
      d_.set_device_threads.push_back(std::this_thread::get_id());
    }
    return log("cudaSetDevice");
  }
  int cudaStreamCreateWithFlags(Stream* stream) override {
    ++d_.streams_alive;
    *stream = reinterpret_cast<Stream>(uintptr_t(0x5000 + ++handles_));
    return log("cudaStreamCreateWithFlags");
  }
  int cudaStreamDestroy(Stream) override {
    --d_.streams_alive;
    return log("cudaStreamDestroy");
  }
  int cudaStreamQuery(Stream) override {
    log("cudaStreamQuery");
    ++d_.stream_queries;
    const int n = d_.stream_not_ready;  // only the test's thread waits for the stream
    if (n > 0) --d_.stream_not_ready;
    return d_.answer(n != 0);
  }
  int cudaStreamWaitEvent(Stream stream, Event event) override {
    {
      std::lock_guard<std::mutex> g(d_.mu);
      d_.stream_waits.emplace_back(stream, event);
    }
    return log("cudaStreamWaitEvent");
  }
  int cudaEventCreateWithFlags(Event* event) override {
    ++d_.events_alive;
    *event = reinterpret_cast<Event>(uintptr_t(0xE000 + ++handles_));
    return log("cudaEventCreateWithFlags");
  }
  int cudaEventRecord(Event event, Stream stream) override {
    {
      std::lock_guard<std::mutex> g(d_.mu);
      d_.records.emplace_back(event, stream);
      if (d_.events_pending) d_.stuck.insert(event);
      else d_.stuck.erase(event);
    }
    return log("cudaEventRecord");
  }
  int cudaEventQuery(Event event) override {
    log("cudaEventQuery");
    bool stuck = false;
    {
      std::lock_guard<std::mutex> g(d_.mu);
      stuck = d_.events_pending && d_.stuck.count(event);
    }
    return d_.answer(stuck);
  }
  int cudaEventDestroy(Event) override {
    --d_.events_alive;
    return log("cudaEventDestroy");
  }
  int cudaMemcpyAsync(void* dst, const void* src, size_t bytes, Stream) override {
    std::memmove(dst, src, bytes);
    return log("cudaMemcpyAsync");
  }
  int cudaGetLastError() override {
    std::lock_guard<std::mutex> g(d_.mu);
    return std::exchange(d_.last_errors[std::this_thread::get_id()], kCudaSuccess);
  }
  std::string cuda_error_text(int code) override { return "cudaError " + std::to_string(code); }

  int ncclGetVersion(int* version) override {
    log("ncclGetVersion");
    if (d_.version_status != kNcclSuccess) return d_.version_status;
    *version = d_.version;
    return kNcclSuccess;
  }
  int ncclGetUniqueId(UniqueId* id) override {
    std::memset(id->bytes, 7, sizeof id->bytes);
    return log("ncclGetUniqueId");
  }
  int ncclCommInitRankConfig(Comm* comm, int nranks, const UniqueId&, int rank) override {
    d_.nranks = nranks;
    d_.rank = rank;
    *comm = reinterpret_cast<Comm>(uintptr_t(0xC0));
    log("ncclCommInitRankConfig");
    return kNcclInProgress;  // non-blocking
  }
  int ncclCommGetAsyncError(Comm comm, int* state) override {
    if (!comm) FAIL("ncclCommGetAsyncError without a communicator");
    log("ncclCommGetAsyncError");
    *state = kNcclSuccess;
    if (d_.init_in_progress > 0) {
      --d_.init_in_progress;
      *state = kNcclInProgress;
    } else if (d_.async_error) {
      *state = kNcclRemoteError;
    }
    return kNcclSuccess;
  }
  int ncclCommAbort(Comm) override {
    ++d_.aborts;
    return log("ncclCommAbort");
  }
  int ncclCommDestroy(Comm) override {
    ++d_.destroys;
    return log("ncclCommDestroy");
  }
  int ncclAllReduce(const void* send, void* recv, size_t count, DType type, Comm, Stream) override {
    REQUIRE(send == recv);
    sum(recv, count, type);
    return collective("ncclAllReduce", count);
  }
  int ncclReduce(const void* send, void* recv, size_t count, DType type, int root, Comm, Stream) override {
    REQUIRE(send == recv);
    if (root == d_.rank) sum(recv, count, type);
    return collective("ncclReduce", count);
  }
  int ncclBroadcast(const void*, void*, size_t count, DType, int, Comm, Stream) override {
    return collective("ncclBroadcast", count);
  }
  int ncclReduceScatter(const void* send, void* recv, size_t recv_count, DType type, Comm, Stream) override {
    const size_t item = chainer::dtype_size(type);
    // In place, as NCCL requires of one buffer: this member's share is at rank * recv_count.
    REQUIRE(static_cast<const char*>(send) + size_t(d_.rank) * recv_count * item == recv);
    sum(recv, recv_count, type);
    return collective("ncclReduceScatter", recv_count);
  }
  int ncclAllGather(const void* send, void* recv, size_t send_count, DType type, Comm, Stream) override {
    REQUIRE(type == DType::Float32);
    REQUIRE(static_cast<const float*>(recv) + size_t(d_.rank) * send_count == send);
    for (int m = 0; m < d_.nranks; ++m)
      if (m != d_.rank)
        for (size_t i = 0; i < send_count; ++i)
          static_cast<float*>(recv)[size_t(m) * send_count + i] = float(100 * (m + 1) + int(i));
    return collective("ncclAllGather", send_count);
  }
  std::string nccl_error_text(int code, Comm) override {
    return code == kNcclRemoteError ? "remote process exited or there was a network error (peer 2 is gone)"
                                    : "ncclResult " + std::to_string(code);
  }

  Stream compute_stream() override { return reinterpret_cast<Stream>(uintptr_t(0x5C)); }
  std::shared_ptr<void> allocate(size_t bytes) override {
    ++d_.allocations;
    log("allocate");
    return std::shared_ptr<void>(std::malloc(bytes), std::free);
  }

 private:
  int log(const char* call) {
    std::lock_guard<std::mutex> g(d_.mu);
    d_.calls.push_back(call);
    d_.call_threads.push_back(std::this_thread::get_id());
    return 0;
  }
  int collective(const char* name, size_t count) {
    {
      std::lock_guard<std::mutex> g(d_.mu);
      d_.counts[name].push_back(count);
    }
    return log(name);
  }
  // Every member holds this member's values: the sum is nranks times them.
  void sum(void* p, size_t n, DType type) {
    if (type == DType::Float32) scale<float>(p, n, d_.nranks);
    else scale<double>(p, n, d_.nranks);
  }
  FakeDevice& d_;
  int handles_ = 0;  // every stream and event a handle of its own
};

// Member RANK of SIZE on cuda:0 over the fake D; the watchdog's end of the job goes to ENDED.
struct EndedJob {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> messages;
  // Waits up to 5 s for the watchdog to end the job; its message, or "" when it did not.
  std::string wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(5), [&] { return !messages.empty(); });
    return messages.empty() ? "" : messages.front();
  }
  size_t count() {
    std::lock_guard<std::mutex> g(mu);
    return messages.size();
  }
  NcclCollectives::EndJob callback() {
    return [this](const std::string& m) {
      std::lock_guard<std::mutex> g(mu);
      messages.push_back(m);
      cv.notify_all();
    };
  }
};

std::unique_ptr<NcclCollectives> make(FakeDevice& d, EndedJob& ended, int rank = 0, int size = 1) {
  return std::make_unique<NcclCollectives>(std::make_unique<FakeApi>(d), 0, rank, size, [](NcclApi::UniqueId&) {},
                                           ended.callback());
}

DeviceSpan span(std::vector<float>& v) { return DeviceSpan{v.data(), int64_t(v.size()), DType::Float32}; }

// Sets the watchdog's limit for one test.
struct TimeLimit {
  double before = chainermn::mpi_timeout();
  explicit TimeLimit(double seconds) { chainermn::set_mpi_timeout(seconds); }
  ~TimeLimit() { chainermn::set_mpi_timeout(before); }
};

// The compute stream (FakeApi::compute_stream) was last made to wait for the completion event
// recorded on the communicator's stream after the last NCCL call.
bool compute_waits_for_last_collective(FakeDevice& d) {
  std::lock_guard<std::mutex> g(d.mu);
  if (d.stream_waits.empty() || d.records.empty()) return false;
  const auto [stream, event] = d.stream_waits.back();
  return stream == reinterpret_cast<void*>(uintptr_t(0x5C)) && event == d.records.back().first &&
         d.records.back().second != stream;
}

}  // namespace

TEST_CASE("nccl: the communicator is made non-blocking at the first collective and polled until ready") {
  FakeDevice d;
  EndedJob ended;
  d.init_in_progress = 3;
  std::vector<float> v{1, 2, 3};
  {
    auto nccl = make(d, ended, 0, 2);
    CHECK(d.calls.empty());
    nccl->allreduce(span(v));
    CHECK(d.nranks == 2);
    CHECK(d.called("ncclCommInitRankConfig") == 1);
    CHECK(d.init_in_progress == 0);  // every "in progress" was polled through before the collective
    {
      std::lock_guard<std::mutex> g(d.mu);
      const auto init = std::find(d.calls.begin(), d.calls.end(), "ncclCommInitRankConfig");
      const auto reduce = std::find(d.calls.begin(), d.calls.end(), "ncclAllReduce");
      CHECK(std::count(init, reduce, "ncclCommGetAsyncError") >= 3);
    }
    CHECK(v == std::vector<float>{2, 4, 6});
    nccl->allreduce(span(v));
    CHECK(d.called("ncclCommInitRankConfig") == 1);
  }
  // Idle and healthy: destroyed, not aborted, and nothing left behind.
  CHECK(d.destroys == 1);
  CHECK(d.aborts == 0);
  CHECK(d.events_alive == 0);
  CHECK(d.streams_alive == 0);
  CHECK(ended.count() == 0);
}

TEST_CASE("nccl: a member that never finishes initializing ends the wait at the time limit") {
  TimeLimit limit(0.05);
  FakeDevice d;
  EndedJob ended;
  d.init_in_progress = 1 << 30;
  std::vector<float> v{1};
  {
    auto nccl = make(d, ended, 0, 2);
    CHECK_THROWS_WITH(nccl->allreduce(span(v)),
                      Catch::Contains("ncclCommInitRankConfig") && Catch::Contains("has not completed in 0.05 s") &&
                          Catch::Contains("CHAINERMN_TIMEOUT") && Catch::Contains("aborted"));
    CHECK(d.aborts == 1);
    CHECK(nccl->aborted());
  }
  CHECK(d.destroys == 0);
}

TEST_CASE("nccl: a collective is queued, never waited for on the host; the compute stream waits for it") {
  FakeDevice d;
  EndedJob ended;
  std::vector<float> v{1, 2};
  auto nccl = make(d, ended, 0, 2);
  d.events_pending = true;  // nothing the communicator queues ever completes
  nccl->allreduce(span(v));
  CHECK(v == std::vector<float>{2, 4});
  CHECK(compute_waits_for_last_collective(d));
  nccl->bcast(span(v), 0);
  CHECK(compute_waits_for_last_collective(d));
  CHECK(d.stream_queries == 0);
  CHECK(d.last_error() == NcclApi::kCudaSuccess);
  CHECK(ended.count() == 0);  // the default limit is far away
  d.events_pending = false;
}

TEST_CASE("nccl: a pending sum is polled without leaving a CUDA error; wait() orders the compute stream") {
  FakeDevice d;
  EndedJob ended;
  std::vector<float> v{1, 2};
  auto keep = std::make_shared<int>(0);
  auto nccl = make(d, ended);
  d.events_pending = true;
  auto sum = nccl->start_allreduce(span(v), keep);
  CHECK_FALSE(compute_waits_for_last_collective(d));  // backward goes on meanwhile
  CHECK_FALSE(sum->test());
  // The CUDA plugin checks cudaGetLastError after each kernel launch: "not ready" must not be there.
  CHECK(d.last_error() == NcclApi::kCudaSuccess);
  CHECK_FALSE(sum->test());
  CHECK(keep.use_count() == 2);  // held until wait()
  sum->wait();                   // returns although the sum is still running
  CHECK(compute_waits_for_last_collective(d));
  CHECK(keep.use_count() == 1);
  d.events_pending = false;
  CHECK(sum->test());
  CHECK(d.last_error() == NcclApi::kCudaSuccess);
}

TEST_CASE("nccl: a pending sum dropped unwaited still orders the compute stream before its buffer is freed") {
  FakeDevice d;
  EndedJob ended;
  std::vector<float> v{1, 2};
  auto keep = std::make_shared<int>(0);
  auto nccl = make(d, ended);
  d.events_pending = true;
  auto sum = nccl->start_allreduce(span(v), keep);
  sum.reset();
  CHECK(compute_waits_for_last_collective(d));
  CHECK(keep.use_count() == 1);
  d.events_pending = false;
}

TEST_CASE("nccl: completed collectives are retired, their events reused") {
  FakeDevice d;
  EndedJob ended;
  std::vector<float> v{1};
  auto nccl = make(d, ended);
  for (int i = 0; i < 100; ++i) nccl->allreduce(span(v));
  // The one ordering the communicator's stream after the compute stream, and one or two for
  // completions: each retired at the next collective (or by the watchdog) and used again.
  CHECK(d.events_alive <= 3);
}

TEST_CASE("nccl: the watchdog runs on the communicator's device") {
  FakeDevice d;
  EndedJob ended;
  std::vector<float> v{1};
  auto nccl = make(d, ended);
  nccl->allreduce(span(v));
  for (int i = 0; i < 500 && d.called("cudaSetDevice") < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::lock_guard<std::mutex> g(d.mu);
  REQUIRE(d.set_device_threads.size() == 2);
  const std::thread::id watchdog = d.set_device_threads[1];
  CHECK(watchdog != std::this_thread::get_id());
  // Its first call, since a thread's first CUDA call would otherwise make a context on device 0.
  const auto first = std::find(d.call_threads.begin(), d.call_threads.end(), watchdog);
  REQUIRE(first != d.call_threads.end());
  CHECK(d.calls[size_t(first - d.call_threads.begin())] == "cudaSetDevice");
}

TEST_CASE("nccl: an asynchronous error while a collective runs: the watchdog aborts and ends the job") {
  FakeDevice d;
  EndedJob ended;
  std::vector<float> v{1, 2};
  auto nccl = std::optional<NcclCollectives>();
  nccl.emplace(std::make_unique<FakeApi>(d), 0, 0, 2, [](NcclApi::UniqueId&) {}, ended.callback());
  nccl->allreduce(span(v));  // it worked once
  d.events_pending = true;
  SECTION("after a blocking collective") { nccl->bcast(span(v), 0); }
  SECTION("after a bucket's sum, waited for or not") {
    auto sum = nccl->start_allreduce(span(v), nullptr);
    sum->wait();
  }
  d.async_error = true;  // a peer died: NCCL says so, and the collective never completes
  const std::string message = ended.wait();
  CHECK_THAT(message, Catch::Contains("peer 2 is gone") && Catch::Contains("The NCCL communicator was aborted") &&
                          (Catch::Contains("ncclBroadcast (") || Catch::Contains("ncclAllReduce (")));
  CHECK(d.aborts == 1);
  CHECK(nccl->aborted());
  // Every later call says why, without touching NCCL.
  const size_t calls = d.calls.size();
  CHECK_THROWS_WITH(nccl->allreduce(span(v)),
                    Catch::Contains("aborted after an earlier error") && Catch::Contains("peer 2 is gone"));
  CHECK(d.calls.size() == calls);
  nccl.reset();
  CHECK(d.destroys == 0);  // a broken communicator is aborted, never destroyed
  CHECK(d.aborts == 1);
  CHECK(d.events_alive == 0);
  CHECK(ended.count() == 1);
}

TEST_CASE("nccl: a collective running longer than CHAINERMN_TIMEOUT: the watchdog aborts and ends the job") {
  FakeDevice d;
  EndedJob ended;
  std::vector<float> v{1};
  auto nccl = make(d, ended, 0, 2);
  nccl->allreduce(span(v));
  TimeLimit limit(0.05);
  d.events_pending = true;
  const auto queued = std::chrono::steady_clock::now();
  nccl->reduce(span(v), 1);
  const std::string message = ended.wait();
  CHECK(std::chrono::steady_clock::now() - queued >= std::chrono::milliseconds(50));
  CHECK_THAT(message, Catch::Contains("ncclReduce (") && Catch::Contains("has not completed in 0.05 s") &&
                          Catch::Contains("CHAINERMN_TIMEOUT") && Catch::Contains("The NCCL communicator was aborted"));
  CHECK(d.aborts == 1);
  nccl.reset();
  CHECK(d.destroys == 0);
}

TEST_CASE("nccl: the watchdog leaves an idle communicator alone, and no limit while CHAINERMN_TIMEOUT is 0") {
  FakeDevice d;
  EndedJob ended;
  std::vector<float> v{1};
  auto nccl = make(d, ended);
  SECTION("idle: a peer that finished is no error until a collective waits for it") {
    TimeLimit limit(0.02);
    nccl->allreduce(span(v));
    d.async_error = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(60));  // many ticks
    CHECK(ended.count() == 0);
    nccl.reset();  // NCCL reports an error: aborted, not destroyed
    CHECK(d.aborts == 1);
    CHECK(d.destroys == 0);
  }
  SECTION("no limit") {
    TimeLimit limit(0);
    d.events_pending = true;
    nccl->allreduce(span(v));
    d.stream_not_ready = 1200;  // past the spinning polls, into the sleeping ones
    nccl->wait_idle();
    CHECK(d.stream_not_ready == 0);
    CHECK(ended.count() == 0);
    CHECK(d.aborts == 0);
    d.events_pending = false;
  }
}

TEST_CASE("nccl: a pending sum's test, polled from a gradient hook, throws NCCL's error") {
  FakeDevice d;
  EndedJob ended;
  std::vector<float> v{1, 2};
  auto nccl = make(d, ended);
  d.events_pending = true;
  auto sum = nccl->start_allreduce(span(v), nullptr);
  d.async_error = true;
  // This thread or the watchdog sees it first; either way the message is NCCL's and it aborts once.
  CHECK_THROWS_WITH(sum->test(), Catch::Contains("ncclAllReduce") && Catch::Contains("peer 2 is gone"));
  CHECK(d.aborts == 1);
  CHECK(d.last_error() == NcclApi::kCudaSuccess);
}

TEST_CASE("nccl: cuda::synchronize() waits for the communicator's stream, within the limit") {
  FakeDevice d;
  EndedJob ended;
  std::vector<float> v{1};
  auto nccl = make(d, ended);
  auto sum = nccl->start_allreduce(span(v), nullptr);
  SECTION("it drains") {
    d.stream_not_ready = 4;
    const int before = d.stream_queries;
    chainer::cuda::detail::wait_for_other_streams(1);  // another device: nothing of ours there
    CHECK(d.stream_queries == before);
    chainer::cuda::detail::wait_for_other_streams(0);
    CHECK(d.stream_queries == before + 5);  // four "not ready", then done
    CHECK(d.last_error() == NcclApi::kCudaSuccess);
    sum->wait();
    sum.reset();
    nccl.reset();
    const int queries = d.stream_queries;
    chainer::cuda::detail::wait_for_other_streams(0);  // the waiter went with the communicator
    CHECK(d.stream_queries == queries);
  }
  SECTION("NCCL reports an error meanwhile") {
    d.stream_not_ready = kForever;
    d.async_error = true;
    CHECK_THROWS_WITH(chainer::cuda::detail::wait_for_other_streams(0), Catch::Contains("peer 2 is gone"));
    CHECK(d.aborts == 1);
  }
  SECTION("it never drains") {
    TimeLimit limit(0.05);
    d.stream_not_ready = kForever;
    CHECK_THROWS_WITH(nccl->wait_idle(), Catch::Contains("has not completed in 0.05 s"));
    CHECK(d.aborts == 1);
  }
}

TEST_CASE("nccl: the destructor aborts a communicator that is broken or whose work does not complete") {
  FakeDevice d;
  EndedJob ended;
  std::vector<float> v{1};
  TimeLimit limit(0.05);
  SECTION("NCCL reports an error while it is idle") {
    auto nccl = make(d, ended);
    nccl->allreduce(span(v));
    d.async_error = true;
    nccl.reset();
  }
  SECTION("its stream never drains") {
    auto nccl = make(d, ended);
    nccl->allreduce(span(v));
    d.stream_not_ready = kForever;
    nccl.reset();
  }
  SECTION("a pending sum outlives it and never completes") {
    auto nccl = make(d, ended);
    auto sum = nccl->start_allreduce(span(v), nullptr);
    d.stream_not_ready = kForever;
    nccl.reset();
    CHECK(d.destroys == 0);  // the sum still holds the communicator
    sum.reset();
  }
  CHECK(d.aborts == 1);
  CHECK(d.destroys == 0);
  CHECK(d.events_alive == 0);
  CHECK(d.streams_alive == 0);
}

TEST_CASE("nccl: by default the watchdog prints the message and ends the process") {
  // In a child process, since it ends it: a job of one process ends with status 1.
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(out[1], 2);
    FakeDevice d;
    std::vector<float> v{1};
    NcclCollectives nccl(std::make_unique<FakeApi>(d), 0, 0, 1, [](NcclApi::UniqueId&) {});
    nccl.allreduce(span(v));
    d.events_pending = true;
    nccl.allreduce(span(v));
    d.async_error = true;
    std::this_thread::sleep_for(std::chrono::seconds(5));
    std::_Exit(3);  // not reached
  }
  ::close(out[1]);
  std::string err;
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) err.append(buf, size_t(n));
  ::close(out[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  CHECK_THAT(err, Catch::StartsWith("[rank 0/1] chainermn: ncclAllReduce (") && Catch::Contains("peer 2 is gone") &&
                      Catch::EndsWith("Ending the job\n"));
}

TEST_CASE("nccl: uneven shares are padded to the largest") {
  using chainermn::nccl::pad_shares;
  const auto p = pad_shares({3, 2, 2});
  CHECK(p.padded == 3);
  CHECK(p.offsets == std::vector<int64_t>{0, 3, 5});
  CHECK_FALSE(p.even);
  const auto e = pad_shares({4, 4});
  CHECK(e.padded == 4);
  CHECK(e.offsets == std::vector<int64_t>{0, 4});
  CHECK(e.even);
  const auto z = pad_shares({1, 1, 0});  // fewer elements than members
  CHECK(z.padded == 1);
  CHECK(z.offsets == std::vector<int64_t>{0, 1, 2});
  CHECK_FALSE(z.even);
}

TEST_CASE("nccl: reduce_scatter and allgather are one ncclReduceScatter and one ncclAllGather") {
  FakeDevice d;
  EndedJob ended;
  SECTION("uneven shares, through a padded scratch buffer") {
    auto nccl = make(d, ended, 1, 3);  // member 1 of 3; 7 elements: shares 3, 2, 2
    const std::vector<int64_t> shares{3, 2, 2};
    std::vector<float> v{1, 2, 3, 4, 5, 6, 7};
    nccl->reduce_scatter(span(v), shares);
    CHECK(v[3] == 12);  // member 1's share (elements 3 and 4) is the sum over the 3 members
    CHECK(v[4] == 15);
    CHECK(d.counts["ncclReduceScatter"] == std::vector<size_t>{3});  // padded share
    // allgather: member 1's share stays, the others' come from them, unpadded.
    nccl->allgather(span(v), shares);
    CHECK(v == std::vector<float>{100, 101, 102, 12, 15, 300, 301});
    CHECK(d.counts["ncclAllGather"] == std::vector<size_t>{3});
    CHECK(d.allocations == 2);
    CHECK(d.called("cudaMemcpyAsync") == 3 + 1 + 1 + 2);  // shares in, own out; own in, others out
  }
  SECTION("even shares, in place on the buffer") {
    auto nccl = make(d, ended, 2, 3);
    const std::vector<int64_t> shares{2, 2, 2};
    std::vector<float> v{1, 2, 3, 4, 5, 6};
    nccl->reduce_scatter(span(v), shares);
    CHECK(v[4] == 15);
    CHECK(v[5] == 18);
    nccl->allgather(span(v), shares);
    CHECK(v == std::vector<float>{100, 101, 200, 201, 15, 18});
    CHECK(d.allocations == 0);
    CHECK(d.called("cudaMemcpyAsync") == 0);
  }
  // Never the grouped per-member calls.
  CHECK(d.called("ncclReduceScatter") == 1);
  CHECK(d.called("ncclAllGather") == 1);
  CHECK(d.called("ncclReduce") == 0);
  CHECK(d.called("ncclBroadcast") == 0);
}

TEST_CASE("nccl: shares that do not cover the buffer are an internal error") {
  FakeDevice d;
  EndedJob ended;
  auto nccl = make(d, ended, 0, 2);
  std::vector<float> v{1, 2, 3};
  CHECK_THROWS_AS(nccl->reduce_scatter(span(v), {1, 1}), chainer::InternalError);
  CHECK_THROWS_AS(nccl->allgather(span(v), {3}), chainer::InternalError);
}

TEST_CASE("nccl: a libnccl older than the calls need is refused at communicator creation, naming both versions") {
  using chainermn::nccl::check_nccl_version;
  using chainermn::nccl::nccl_version_problem;
  constexpr int kHeader = 22809;  // the nccl.h the plugin was compiled with: 2.28.9
  FakeDevice d;
  FakeApi api(d);
  SECTION("2.13.4: no ncclCommInitRankConfig yet") {
    d.version = 21304;
    try {
      check_nccl_version(api, kHeader, "NCCL communicator");
      FAIL("NCCL 2.13.4 was accepted");
    } catch (const chainer::Error& e) {
      const std::string m = e.what();
      INFO(m);
      CHECK(m.rfind("NCCL communicator: ", 0) == 0);
      CHECK(m.find("NCCL 2.13.4") != std::string::npos);  // loaded
      CHECK(m.find("NCCL 2.14.3") != std::string::npos);  // needed
      CHECK(m.find("2.28.9") != std::string::npos);       // compiled with
      CHECK(m.find("ncclCommInitRankConfig") != std::string::npos);
    }
    CHECK(d.called("ncclGetVersion") == 1);
    CHECK(d.called("ncclCommInitRankConfig") == 0);
  }
  SECTION("2.8.4, in the encoding before 2.9") {
    d.version = 2804;
    CHECK(nccl_version_problem(api, kHeader).find("NCCL 2.8.4, older than") != std::string::npos);
  }
  SECTION("2.14.3 and later work, older than the header included") {
    for (int v : {21403, 21805, 22809, 22901}) {
      d.version = v;
      CHECK_NOTHROW(check_nccl_version(api, kHeader, "NCCL communicator"));
    }
    CHECK(nccl_version_problem(api, kHeader).empty());
  }
  SECTION("ncclGetVersion fails") {
    d.version_status = 3;  // ncclInternalError
    const std::string m = nccl_version_problem(api, kHeader);
    CHECK(m.find("ncclGetVersion(&loaded) failed: ncclResult 3") != std::string::npos);
    CHECK_THROWS_AS(check_nccl_version(api, kHeader, "NCCL communicator"), chainer::Error);
  }
  CHECK(chainermn::nccl::nccl_version_text(chainermn::nccl::kMinNcclVersion) == "2.14.3");
}
