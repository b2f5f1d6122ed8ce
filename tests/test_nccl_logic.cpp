// The NCCL communicators' logic (distributed/communicators/nccl_collectives.h) on the host,
// against a fake CUDA runtime and NCCL (NcclApi): device memory is host memory, streams run
// nothing, and each test scripts what the queries answer (work that is "not ready" for a while
// or forever, a communicator whose asynchronous error turns non-zero) and reads back what was
// called. The collectives act as NCCL's would if every member held this member's data, and
// peer M's share of a gather holds 100 * (M + 1) + i.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cuda.h"
#include "core/error.h"
#include "distributed/communicators/nccl_collectives.h"
#include "distributed/mpi_runtime.h"

namespace {

using chainer::DType;
using chainermn::nccl::DeviceSpan;
using chainermn::nccl::NcclApi;
using chainermn::nccl::NcclCollectives;

constexpr int kNcclRemoteError = 6;  // ncclRemoteError

// What the fake saw and what it is told to answer, shared by a test and the FakeApi it hands over.
struct FakeDevice {
  // Scripted.
  int not_ready = 0;            // the next this many event or stream queries say "not ready"
  int init_in_progress = 2;     // after init, ncclCommGetAsyncError says "in progress" this many times
  int async_error_after = -1;   // after this many more ncclCommGetAsyncError calls, it reports async_error
  int async_error = kNcclRemoteError;

  // Observed.
  int last_error = 0;  // the calling thread's last CUDA error, as libcudart keeps it
  int nranks = 0, rank = 0;
  std::vector<std::string> calls;
  std::map<std::string, std::vector<size_t>> counts;  // per NCCL collective, its count arguments
  int allocations = 0, queries = 0;
  int aborts = 0, destroys = 0, events_alive = 0, streams_alive = 0;

  int called(const std::string& name) const { return int(std::count(calls.begin(), calls.end(), name)); }
  int query() {
    ++queries;
    if (not_ready == 0) return NcclApi::kCudaSuccess;
    if (not_ready > 0) --not_ready;
    last_error = NcclApi::kCudaErrorNotReady;  // as cudaEventQuery does
    return NcclApi::kCudaErrorNotReady;
  }
};

constexpr int kForever = -1;

template <class T>
void scale(void* p, size_t n, int by) {
  for (size_t i = 0; i < n; ++i) static_cast<T*>(p)[i] *= T(by);
}

class FakeApi final : public NcclApi {
 public:
  explicit FakeApi(FakeDevice& d) : d_(d) {}

  int cudaSetDevice(int) override { return log("cudaSetDevice"); }
  int cudaStreamCreateWithFlags(Stream* stream) override {
    ++d_.streams_alive;
    *stream = reinterpret_cast<Stream>(uintptr_t(0x5000 + d_.streams_alive));
    return log("cudaStreamCreateWithFlags");
  }
  int cudaStreamDestroy(Stream) override {
    --d_.streams_alive;
    return log("cudaStreamDestroy");
  }
  int cudaStreamQuery(Stream) override {
    log("cudaStreamQuery");
    return d_.query();
  }
  int cudaStreamWaitEvent(Stream, Event) override { return log("cudaStreamWaitEvent"); }
  int cudaEventCreateWithFlags(Event* event) override {
    ++d_.events_alive;
    *event = reinterpret_cast<Event>(uintptr_t(0xE000 + d_.events_alive));
    return log("cudaEventCreateWithFlags");
  }
  int cudaEventRecord(Event, Stream) override { return log("cudaEventRecord"); }
  int cudaEventQuery(Event) override {
    log("cudaEventQuery");
    return d_.query();
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
    const int e = d_.last_error;
    d_.last_error = kCudaSuccess;
    return e;
  }
  std::string cuda_error_text(int code) override { return "cudaError " + std::to_string(code); }

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
    } else if (d_.async_error_after == 0) {
      *state = d_.async_error;
    } else if (d_.async_error_after > 0) {
      --d_.async_error_after;
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
    d_.calls.push_back(call);
    return 0;
  }
  int collective(const char* name, size_t count) {
    d_.counts[name].push_back(count);
    return log(name);
  }
  // Every member holds this member's values: the sum is nranks times them.
  void sum(void* p, size_t n, DType type) {
    if (type == DType::Float32) scale<float>(p, n, d_.nranks);
    else scale<double>(p, n, d_.nranks);
  }
  FakeDevice& d_;
};

// Member RANK of SIZE on cuda:0 over the fake D.
std::unique_ptr<NcclCollectives> make(FakeDevice& d, int rank = 0, int size = 1) {
  return std::make_unique<NcclCollectives>(std::make_unique<FakeApi>(d), 0, rank, size, [](NcclApi::UniqueId&) {});
}

DeviceSpan span(std::vector<float>& v) { return DeviceSpan{v.data(), int64_t(v.size()), DType::Float32}; }

// Sets the watchdog's limit for one test.
struct TimeLimit {
  double before = chainermn::mpi_timeout();
  explicit TimeLimit(double seconds) { chainermn::set_mpi_timeout(seconds); }
  ~TimeLimit() { chainermn::set_mpi_timeout(before); }
};

}  // namespace

TEST_CASE("nccl: the communicator is made non-blocking at the first collective and polled until ready") {
  FakeDevice d;
  d.init_in_progress = 3;
  std::vector<float> v{1, 2, 3};
  {
    auto nccl = make(d, 0, 2);
    CHECK(d.calls.empty());
    nccl->allreduce(span(v));
    CHECK(d.nranks == 2);
    CHECK(d.called("ncclCommInitRankConfig") == 1);
    CHECK(d.init_in_progress == 0);  // every "in progress" was polled through before the collective
    const auto init = std::find(d.calls.begin(), d.calls.end(), "ncclCommInitRankConfig");
    const auto reduce = std::find(d.calls.begin(), d.calls.end(), "ncclAllReduce");
    CHECK(std::count(init, reduce, "ncclCommGetAsyncError") >= 3);
    CHECK(v == std::vector<float>{2, 4, 6});
    nccl->allreduce(span(v));
    CHECK(d.called("ncclCommInitRankConfig") == 1);
  }
  // Idle and healthy: destroyed, not aborted, and nothing left behind.
  CHECK(d.destroys == 1);
  CHECK(d.aborts == 0);
  CHECK(d.events_alive == 0);
  CHECK(d.streams_alive == 0);
}

TEST_CASE("nccl: a member that never finishes initializing ends the wait at the time limit") {
  TimeLimit limit(0.05);
  FakeDevice d;
  d.init_in_progress = 1 << 30;
  std::vector<float> v{1};
  {
    auto nccl = make(d, 0, 2);
    CHECK_THROWS_WITH(nccl->allreduce(span(v)),
                      Catch::Contains("ncclCommInitRankConfig") && Catch::Contains("has not completed in 0.05 s") &&
                          Catch::Contains("CHAINERMN_TIMEOUT") && Catch::Contains("aborted"));
    CHECK(d.aborts == 1);
    CHECK(nccl->aborted());
  }
  CHECK(d.destroys == 0);
}

TEST_CASE("nccl: polling a sum that is not ready leaves no CUDA error behind") {
  FakeDevice d;
  std::vector<float> v{1, 2};
  auto keep = std::make_shared<int>(0);
  auto nccl = make(d);
  auto sum = nccl->start_allreduce(span(v), keep);
  d.not_ready = 2;
  CHECK_FALSE(sum->test());
  // The CUDA plugin checks cudaGetLastError after each kernel launch: "not ready" must not be there.
  CHECK(d.last_error == NcclApi::kCudaSuccess);
  CHECK_FALSE(sum->test());
  CHECK(d.last_error == NcclApi::kCudaSuccess);
  CHECK(sum->test());
  CHECK(keep.use_count() == 2);  // held until wait()
  sum->wait();
  CHECK(keep.use_count() == 1);
  CHECK(d.last_error == NcclApi::kCudaSuccess);
}

TEST_CASE("nccl: the host wait for a collective leaves no CUDA error behind") {
  FakeDevice d;
  std::vector<float> v{1, 2};
  auto nccl = make(d);
  d.not_ready = 5;
  nccl->allreduce(span(v));
  CHECK(d.not_ready == 0);
  CHECK(d.last_error == NcclApi::kCudaSuccess);
}

TEST_CASE("nccl: an asynchronous error while waiting ends the wait with NCCL's message and aborts") {
  FakeDevice d;
  std::vector<float> v{1, 2};
  auto nccl = std::optional<NcclCollectives>();
  nccl.emplace(std::make_unique<FakeApi>(d), 0, 0, 2, [](NcclApi::UniqueId&) {});
  nccl->allreduce(span(v));  // it worked once
  SECTION("in a blocking collective") {
    d.not_ready = kForever;
    d.async_error_after = 3;
    CHECK_THROWS_WITH(nccl->bcast(span(v), 0),
                      Catch::Contains("ncclBroadcast") && Catch::Contains("peer 2 is gone") && Catch::Contains("aborted"));
  }
  SECTION("in a pending sum's wait") {
    auto sum = nccl->start_allreduce(span(v), nullptr);
    d.not_ready = kForever;
    d.async_error_after = 3;
    CHECK_FALSE(sum->test());
    CHECK_THROWS_WITH(sum->wait(), Catch::Contains("ncclAllReduce") && Catch::Contains("peer 2 is gone"));
  }
  SECTION("in a pending sum's test, polled from a gradient hook") {
    auto sum = nccl->start_allreduce(span(v), nullptr);
    d.not_ready = kForever;
    d.async_error_after = 0;
    CHECK_THROWS_WITH(sum->test(), Catch::Contains("ncclAllReduce") && Catch::Contains("peer 2 is gone"));
  }
  SECTION("in cuda::synchronize()") {
    auto sum = nccl->start_allreduce(span(v), nullptr);
    d.not_ready = kForever;
    d.async_error_after = 2;
    CHECK_THROWS_WITH(chainer::cuda::detail::wait_for_other_streams(0), Catch::Contains("peer 2 is gone"));
  }
  CHECK(d.aborts == 1);
  CHECK(nccl->aborted());
  CHECK(d.last_error == NcclApi::kCudaSuccess);
  // Every later call says why, without touching NCCL.
  const size_t calls = d.calls.size();
  CHECK_THROWS_WITH(nccl->allreduce(span(v)),
                    Catch::Contains("aborted after an earlier error") && Catch::Contains("peer 2 is gone"));
  CHECK(d.calls.size() == calls);
  nccl.reset();
  CHECK(d.destroys == 0);  // a broken communicator is aborted, never destroyed
  CHECK(d.aborts == 1);
  CHECK(d.events_alive == 0);
}

TEST_CASE("nccl: a wait longer than CHAINERMN_TIMEOUT ends with the watchdog's message and aborts") {
  FakeDevice d;
  std::vector<float> v{1};
  {
    auto nccl = make(d, 0, 2);
    nccl->allreduce(span(v));
    TimeLimit limit(0.05);
    d.not_ready = kForever;
    SECTION("a blocking collective") {
      CHECK_THROWS_WITH(nccl->reduce(span(v), 1), Catch::Contains("ncclReduce (") &&
                                                      Catch::Contains("has not completed in 0.05 s") &&
                                                      Catch::Contains("CHAINERMN_TIMEOUT") &&
                                                      Catch::Contains("The NCCL communicator was aborted"));
    }
    SECTION("a pending sum") {
      auto sum = nccl->start_allreduce(span(v), nullptr);
      CHECK_THROWS_WITH(sum->wait(), Catch::Contains("ncclAllReduce (") && Catch::Contains("has not completed"));
    }
    CHECK(d.aborts == 1);
  }
  CHECK(d.destroys == 0);
}

TEST_CASE("nccl: no limit while CHAINERMN_TIMEOUT is 0") {
  TimeLimit limit(0);
  FakeDevice d;
  std::vector<float> v{1};
  auto nccl = make(d);
  d.not_ready = 1200;  // past the spinning polls, into the sleeping ones
  nccl->allreduce(span(v));
  CHECK(d.not_ready == 0);
  CHECK(d.aborts == 0);
}

TEST_CASE("nccl: the destructor aborts a communicator that is broken or whose work does not complete") {
  FakeDevice d;
  std::vector<float> v{1};
  SECTION("NCCL reports an error while it is idle") {
    auto nccl = make(d);
    nccl->allreduce(span(v));
    d.async_error_after = 0;
    nccl.reset();
  }
  SECTION("its stream never drains") {
    TimeLimit limit(0.05);
    auto nccl = make(d);
    nccl->allreduce(span(v));
    d.not_ready = kForever;
    nccl.reset();
  }
  SECTION("a pending sum outlives it and never completes") {
    TimeLimit limit(0.05);
    auto nccl = make(d);
    auto sum = nccl->start_allreduce(span(v), nullptr);
    d.not_ready = kForever;
    nccl.reset();
    CHECK(d.aborts == 0);  // the sum still holds the communicator
    sum.reset();
  }
  CHECK(d.aborts == 1);
  CHECK(d.destroys == 0);
  CHECK(d.events_alive == 0);
  CHECK(d.streams_alive == 0);
}

TEST_CASE("nccl: cuda::synchronize() waits for the communicator's stream") {
  FakeDevice d;
  std::vector<float> v{1};
  {
    auto nccl = make(d);
    auto sum = nccl->start_allreduce(span(v), nullptr);
    d.not_ready = 4;
    const int before = d.called("cudaStreamQuery");
    chainer::cuda::detail::wait_for_other_streams(1);  // another device: nothing of ours there
    CHECK(d.called("cudaStreamQuery") == before);
    chainer::cuda::detail::wait_for_other_streams(0);
    CHECK(d.called("cudaStreamQuery") == before + 5);  // four "not ready", then done
    CHECK(d.last_error == NcclApi::kCudaSuccess);
    sum->wait();
  }
  const int queries = d.queries;
  chainer::cuda::detail::wait_for_other_streams(0);  // the waiter went with the communicator
  CHECK(d.queries == queries);
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
  SECTION("uneven shares, through a padded scratch buffer") {
    auto nccl = make(d, 1, 3);  // member 1 of 3; 7 elements: shares 3, 2, 2
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
    auto nccl = make(d, 2, 3);
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
  auto nccl = make(d, 0, 2);
  std::vector<float> v{1, 2, 3};
  CHECK_THROWS_AS(nccl->reduce_scatter(span(v), {1, 1}), chainer::InternalError);
  CHECK_THROWS_AS(nccl->allgather(span(v), {3}), chainer::InternalError);
}
