#include "distributed/communicators/nccl_collectives.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>

#include "core/cuda.h"
#include "core/error.h"
#include "distributed/mpi_runtime.h"

namespace chainermn::nccl {

using chainer::Error;
using chainer::str;
using Clock = std::chrono::steady_clock;

// Every CUDA and NCCL call goes through one of these: the call as written and file:line name it
// in the error (as CHAINERMN_MPI_CHECK does for MPI). Each returns the call's CallSite.
#define CHAINERMN_CUDA_CALL(state, fn, ...) \
  (state).cuda((state).api->fn(__VA_ARGS__), CallSite{#fn "(" #__VA_ARGS__ ")", __FILE__, __LINE__})
#define CHAINERMN_NCCL_CALL(state, fn, ...) \
  (state).nccl((state).api->fn(__VA_ARGS__), CallSite{#fn "(" #__VA_ARGS__ ")", __FILE__, __LINE__})

PaddedShares pad_shares(const std::vector<int64_t>& shares) {
  PaddedShares p;
  int64_t at = 0;
  for (int64_t s : shares) {
    p.offsets.push_back(at);
    at += s;
    p.padded = std::max(p.padded, s);
  }
  p.even = std::all_of(shares.begin(), shares.end(), [&](int64_t s) { return s == p.padded; });
  return p;
}

namespace {

// "ncclAllReduce" of "ncclAllReduce(data, data, ...)".
std::string call_name(const CallSite& site) {
  return std::string(site.call, std::find(site.call, site.call + std::strlen(site.call), '('));
}

std::string where(const CallSite& site) { return str(site.file, ":", site.line); }

}  // namespace

// What the communicator and its pending sums share; its destructor is the teardown.
struct NcclState {
  NcclState(std::unique_ptr<NcclApi> a, int d, NcclCollectives::ShareId s)
      : api(std::move(a)), device(d), share_id(std::move(s)) {}
  ~NcclState();

  std::unique_ptr<NcclApi> api;
  int device;
  NcclCollectives::ShareId share_id;
  NcclApi::Comm comm = nullptr;
  NcclApi::Stream stream = nullptr;
  NcclApi::Event ready = nullptr;
  int waiter = 0;                                 // its cuda::detail::add_stream_waiter id; 0: none
  std::string failure;                            // why it was aborted; empty while it works
  CallSite last{"the NCCL communicator's stream", __FILE__, __LINE__};  // the last NCCL call queued

  // The communicator, made at the first call (see nccl_collectives.h).
  void start(int rank, int size);
  NcclApi::Comm live_comm() const {
    if (!failure.empty())
      throw Error(str("NCCL on cuda:", device, ": the communicator was aborted after an earlier error and cannot be ",
                      "used again (", failure, ")"));
    return comm;
  }

  CallSite cuda(int result, const CallSite& site) {
    if (result == NcclApi::kCudaSuccess) return site;
    api->cudaGetLastError();  // the error is ours to report: not the next kernel launch's
    throw Error(str(site.call, " failed at ", where(site), ": ", api->cuda_error_text(result)));
  }
  CallSite nccl(int result, const CallSite& site) {
    if (result == NcclApi::kNcclInProgress) settle(site);
    else if (result != NcclApi::kNcclSuccess)
      fail(str(site.call, " failed at ", where(site), ": ", api->nccl_error_text(result, comm)));
    return site;
  }

  // Polls the communicator's asynchronous state until the non-blocking call at SITE is done.
  void settle(const CallSite& site) {
    const Deadline deadline;
    for (int polls = 0;; ++polls) {
      if (!check_async(site)) return;
      deadline.check(*this, site);
      pause(polls);
    }
  }
  // Throws (after aborting) when NCCL reports an error; returns whether a non-blocking call is
  // still in progress.
  bool check_async(const CallSite& site) {
    int state = NcclApi::kNcclSuccess;
    const int r = api->ncclCommGetAsyncError(live_comm(), &state);
    const int e = r != NcclApi::kNcclSuccess ? r : state;
    if (e == NcclApi::kNcclSuccess || e == NcclApi::kNcclInProgress) return e == NcclApi::kNcclInProgress;
    fail(str(call_name(site), " (", where(site), "): NCCL reported an error while this rank waited for it: ",
             api->nccl_error_text(e, comm), ". The NCCL communicator was aborted"));
  }

  // QUERY() (cudaEventQuery or cudaStreamQuery) once: true when the work has completed, false when
  // not yet (and NCCL reports no error). Throws, after aborting, on an error.
  template <class Query>
  bool poll(Query&& query, const CallSite& site) {
    const int r = query();
    if (r == NcclApi::kCudaSuccess) return true;
    api->cudaGetLastError();  // "not ready" must not stay the thread's last error (nccl_collectives.h)
    if (r != NcclApi::kCudaErrorNotReady)
      fail(str(call_name(site), " (", where(site), ") failed on the device: ", api->cuda_error_text(r),
               ". The NCCL communicator was aborted"));
    check_async(site);
    return false;
  }
  // Waits on the host until QUERY says the work queued by SITE has completed, within the time limit.
  template <class Query>
  void wait(Query&& query, const CallSite& site) {
    const Deadline deadline;
    for (int polls = 0; !poll(query, site); ++polls) {
      deadline.check(*this, site);
      pause(polls);
    }
  }
  // What the time limit of mpi_runtime.h allows one wait.
  struct Deadline {
    double limit = mpi_timeout();
    Clock::time_point start = Clock::now();
    void check(NcclState& s, const CallSite& site) const {
      if (limit <= 0 || std::chrono::duration<double>(Clock::now() - start).count() < limit) return;
      s.fail(str(call_name(site), " (", where(site), ") has not completed in ", limit,
                 " s (CHAINERMN_TIMEOUT; default ", kDefaultMpiTimeout, "): a peer has not reached it. Either the ",
                 "peer is still busy on its own: raise CHAINERMN_TIMEOUT above the longest such stretch (seconds; 0 ",
                 "turns this off); or the peer process or its host is unreachable (a cut link, a frozen host or ",
                 "process). The NCCL communicator was aborted"));
    }
  };
  // Spins a while (a collective often completes within microseconds), then sleeps between polls.
  static void pause(int polls) {
    if (polls < 1000) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(50));
  }

  // Aborts the communicator and throws MESSAGE.
  [[noreturn]] void fail(const std::string& message) {
    if (failure.empty()) failure = message;
    abort();
    throw Error(message);
  }
  void abort() noexcept {
    if (failure.empty()) failure = "aborted";
    if (comm) api->ncclCommAbort(comm);  // local, never waits; its result changes nothing now
    comm = nullptr;
  }
  // Waits for the stream without throwing: false when the communicator had to be aborted.
  template <class Query>
  bool wait_quietly(Query&& query, const CallSite& site) noexcept {
    if (!comm) return false;
    if (std::uncaught_exceptions() > 0) {  // the job is ending with an error: nothing to wait for
      abort();
      return false;
    }
    try {
      wait(query, site);
      return true;
    } catch (...) {
      return false;  // aborted by fail()
    }
  }
};

void NcclState::start(int rank, int size) {
  if (live_comm()) return;
  NcclApi::UniqueId id{};
  if (rank == 0) CHAINERMN_NCCL_CALL(*this, ncclGetUniqueId, &id);
  share_id(id);
  CHAINERMN_CUDA_CALL(*this, cudaSetDevice, device);
  if (!stream) {
    CHAINERMN_CUDA_CALL(*this, cudaStreamCreateWithFlags, &stream);
    CHAINERMN_CUDA_CALL(*this, cudaEventCreateWithFlags, &ready);
    waiter = chainer::cuda::detail::add_stream_waiter([this](int d) {
      if (d == device && comm) wait([&] { return api->cudaStreamQuery(stream); }, last);
    });
  }
  // Non-blocking, so that a member that never comes does not hang this one in NCCL's bootstrap.
  NcclApi::Comm made = nullptr;
  const int r = api->ncclCommInitRankConfig(&made, size, id, rank);
  comm = made;
  last = nccl(r, CallSite{"ncclCommInitRankConfig(&made, size, id, rank)", __FILE__, __LINE__});
}

NcclState::~NcclState() {
  if (waiter) chainer::cuda::detail::remove_stream_waiter(waiter);
  // Destroyed only when nothing is left running and NCCL reports nothing; otherwise aborted.
  if (wait_quietly([&] { return api->cudaStreamQuery(stream); }, last)) {
    try {
      check_async(last);
    } catch (...) {
    }
  }
  if (comm) api->ncclCommDestroy(comm);
  if (ready) api->cudaEventDestroy(ready);
  if (stream) api->cudaStreamDestroy(stream);
  api->cudaGetLastError();  // a failure here is nobody's to report
}

namespace {

// A sum queued on the communicator's stream; wait() is the host wait, then the compute stream
// is ordered after it.
class QueuedSum final : public PendingSum {
 public:
  QueuedSum(std::shared_ptr<NcclState> s, NcclApi::Event done, NcclApi::Stream compute, CallSite site,
            std::shared_ptr<const void> keep)
      : s_(std::move(s)), done_(done), compute_(compute), site_(site), keep_(std::move(keep)) {}
  ~QueuedSum() override {
    if (!waited_) s_->wait_quietly([&] { return s_->api->cudaEventQuery(done_); }, site_);
    s_->api->cudaEventDestroy(done_);
  }
  bool test() override {
    if (!complete_) complete_ = s_->poll([&] { return s_->api->cudaEventQuery(done_); }, site_);
    return complete_;
  }
  void wait() override {
    if (waited_) return;
    s_->live_comm();
    if (!complete_) s_->wait([&] { return s_->api->cudaEventQuery(done_); }, site_);
    CHAINERMN_CUDA_CALL(*s_, cudaStreamWaitEvent, compute_, done_);
    complete_ = waited_ = true;
    keep_.reset();
  }

 private:
  std::shared_ptr<NcclState> s_;
  NcclApi::Event done_;
  NcclApi::Stream compute_;
  CallSite site_;
  std::shared_ptr<const void> keep_;  // the buffer lives until the sum has completed
  bool complete_ = false, waited_ = false;
};

}  // namespace

NcclCollectives::NcclCollectives(std::unique_ptr<NcclApi> api, int device, int rank, int size, ShareId share_id)
    : rank_(rank), size_(size), state_(std::make_shared<NcclState>(std::move(api), device, std::move(share_id))) {}

NcclCollectives::~NcclCollectives() = default;

bool NcclCollectives::aborted() const { return !state_->failure.empty(); }

void NcclCollectives::wait_idle() {
  NcclState& s = *state_;
  if (s.live_comm()) s.wait([&] { return s.api->cudaStreamQuery(s.stream); }, s.last);
}

// QUEUE(stream) queues the collective after the compute stream's work and returns the NCCL
// call's site; the host waits for it, then the compute stream is ordered after it.
template <class Queue>
void NcclCollectives::run(Queue&& queue) {
  NcclState& s = *state_;
  s.start(rank_, size_);
  const NcclApi::Stream compute = s.api->compute_stream();
  CHAINERMN_CUDA_CALL(s, cudaEventRecord, s.ready, compute);
  CHAINERMN_CUDA_CALL(s, cudaStreamWaitEvent, s.stream, s.ready);
  s.last = queue(s.stream);
  CHAINERMN_CUDA_CALL(s, cudaEventRecord, s.ready, s.stream);
  s.wait([&] { return s.api->cudaEventQuery(s.ready); }, s.last);
  CHAINERMN_CUDA_CALL(s, cudaStreamWaitEvent, compute, s.ready);
}

void NcclCollectives::reduce(DeviceSpan buf, int root) {
  NcclState& s = *state_;
  run([&](NcclApi::Stream st) {
    return CHAINERMN_NCCL_CALL(s, ncclReduce, buf.data, buf.data, size_t(buf.count), buf.type, root, s.comm, st);
  });
}

void NcclCollectives::allreduce(DeviceSpan buf) {
  NcclState& s = *state_;
  run([&](NcclApi::Stream st) {
    return CHAINERMN_NCCL_CALL(s, ncclAllReduce, buf.data, buf.data, size_t(buf.count), buf.type, s.comm, st);
  });
}

void NcclCollectives::bcast(DeviceSpan buf, int root) {
  NcclState& s = *state_;
  run([&](NcclApi::Stream st) {
    return CHAINERMN_NCCL_CALL(s, ncclBroadcast, buf.data, buf.data, size_t(buf.count), buf.type, root, s.comm, st);
  });
}

namespace {
void check_shares(const std::vector<int64_t>& shares, const DeviceSpan& buf, int size, const char* op) {
  int64_t total = 0;
  for (int64_t n : shares) total += n;
  if (int(shares.size()) != size || total != buf.count)
    throw chainer::InternalError(str("NCCL ", op, ": ", shares.size(), " shares of ", total, " elements in all for ",
                                     size, " members and ", buf.count, " elements"));
}
}  // namespace

// In place over equal shares: member r's share is at r * padded (NCCL's in-place rule). Uneven
// shares go through a scratch buffer of size() padded shares; the padding is summed and
// gathered with the rest and never read. The scratch is freed after the host wait, so the
// caching allocator never hands it out while NCCL still uses it.
void NcclCollectives::reduce_scatter(DeviceSpan buf, const std::vector<int64_t>& shares) {
  check_shares(shares, buf, size_, "reduce_scatter");
  NcclState& s = *state_;
  const PaddedShares p = pad_shares(shares);
  const size_t item = chainer::dtype_size(buf.type), count = size_t(p.padded);
  char* base = static_cast<char*>(buf.data);
  if (p.even) {
    run([&](NcclApi::Stream st) {
      return CHAINERMN_NCCL_CALL(s, ncclReduceScatter, base, base + size_t(rank_) * count * item, count, buf.type,
                                 s.comm, st);
    });
    return;
  }
  const std::shared_ptr<void> scratch = s.api->allocate(size_t(size_) * count * item);
  char* pad = static_cast<char*>(scratch.get());
  char* mine = pad + size_t(rank_) * count * item;
  run([&](NcclApi::Stream st) {
    for (int m = 0; m < size_; ++m)
      if (shares[size_t(m)] > 0)
        CHAINERMN_CUDA_CALL(s, cudaMemcpyAsync, pad + size_t(m) * count * item,
                            base + size_t(p.offsets[size_t(m)]) * item, size_t(shares[size_t(m)]) * item, st);
    const CallSite site = CHAINERMN_NCCL_CALL(s, ncclReduceScatter, pad, mine, count, buf.type, s.comm, st);
    if (shares[size_t(rank_)] > 0)
      CHAINERMN_CUDA_CALL(s, cudaMemcpyAsync, base + size_t(p.offsets[size_t(rank_)]) * item, mine,
                          size_t(shares[size_t(rank_)]) * item, st);
    return site;
  });
}

void NcclCollectives::allgather(DeviceSpan buf, const std::vector<int64_t>& shares) {
  check_shares(shares, buf, size_, "allgather");
  NcclState& s = *state_;
  const PaddedShares p = pad_shares(shares);
  const size_t item = chainer::dtype_size(buf.type), count = size_t(p.padded);
  char* base = static_cast<char*>(buf.data);
  if (p.even) {
    run([&](NcclApi::Stream st) {
      return CHAINERMN_NCCL_CALL(s, ncclAllGather, base + size_t(rank_) * count * item, base, count, buf.type, s.comm,
                                 st);
    });
    return;
  }
  const std::shared_ptr<void> scratch = s.api->allocate(size_t(size_) * count * item);
  char* pad = static_cast<char*>(scratch.get());
  char* mine = pad + size_t(rank_) * count * item;
  run([&](NcclApi::Stream st) {
    if (shares[size_t(rank_)] > 0)
      CHAINERMN_CUDA_CALL(s, cudaMemcpyAsync, mine, base + size_t(p.offsets[size_t(rank_)]) * item,
                          size_t(shares[size_t(rank_)]) * item, st);
    const CallSite site = CHAINERMN_NCCL_CALL(s, ncclAllGather, mine, pad, count, buf.type, s.comm, st);
    for (int m = 0; m < size_; ++m)
      if (m != rank_ && shares[size_t(m)] > 0)
        CHAINERMN_CUDA_CALL(s, cudaMemcpyAsync, base + size_t(p.offsets[size_t(m)]) * item,
                            pad + size_t(m) * count * item, size_t(shares[size_t(m)]) * item, st);
    return site;
  });
}

std::unique_ptr<PendingSum> NcclCollectives::start_allreduce(DeviceSpan buf, std::shared_ptr<const void> keep) {
  NcclState& s = *state_;
  s.start(rank_, size_);
  const NcclApi::Stream compute = s.api->compute_stream();
  CHAINERMN_CUDA_CALL(s, cudaEventRecord, s.ready, compute);
  CHAINERMN_CUDA_CALL(s, cudaStreamWaitEvent, s.stream, s.ready);
  s.last = CHAINERMN_NCCL_CALL(s, ncclAllReduce, buf.data, buf.data, size_t(buf.count), buf.type, s.comm, s.stream);
  NcclApi::Event done = nullptr;
  CHAINERMN_CUDA_CALL(s, cudaEventCreateWithFlags, &done);
  try {
    CHAINERMN_CUDA_CALL(s, cudaEventRecord, done, s.stream);
  } catch (...) {
    s.api->cudaEventDestroy(done);
    throw;
  }
  return std::make_unique<QueuedSum>(state_, done, compute, s.last, std::move(keep));
}

}  // namespace chainermn::nccl
