#include "distributed/communicators/nccl_collectives.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "core/device/cuda.h"
#include "core/util/error.h"
#include "distributed/runtime/mpi_runtime.h"

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

// A collective queued on the communicator's stream and not yet seen complete.
struct InFlight {
  std::shared_ptr<void> done;  // its event, recorded after it (from NcclState's pool)
  CallSite site;
  Clock::time_point queued;
};

// What the communicator, its pending sums and its watchdog share; its destructor is the teardown.
// Every member from `comm` on, and every call through `api`, is under `m` (but the destructor's,
// once the watchdog has stopped).
struct NcclState {
  NcclState(std::unique_ptr<NcclApi> a, int d, NcclCollectives::ShareId s, NcclCollectives::EndJob e)
      : api(std::move(a)), device(d), share_id(std::move(s)), end_job(std::move(e)) {}
  ~NcclState();

  std::unique_ptr<NcclApi> api;
  const int device;
  const NcclCollectives::ShareId share_id;
  const NcclCollectives::EndJob end_job;

  std::mutex m;
  NcclApi::Comm comm = nullptr;
  NcclApi::Stream stream = nullptr;
  NcclApi::Event ready = nullptr;                 // the compute stream's work before a collective
  std::string failure;                            // why it was aborted; empty while it works
  CallSite last{"the NCCL communicator's stream", __FILE__, __LINE__};  // the last NCCL call queued
  std::deque<InFlight> in_flight;                 // oldest first, as they run on the stream

  int waiter = 0;  // its cuda::detail::add_stream_waiter id; 0: none
  std::thread watchdog;
  bool stopping = false;  // under m
  std::condition_variable wake;

  std::mutex pool_m;  // the completion events not in use: a collective's returns here when released
  std::vector<NcclApi::Event> idle_events;

  // The communicator and its watchdog, made at the first call (see nccl_collectives.h). Without m.
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

  // Polls the communicator's asynchronous state until the non-blocking call at SITE is done
  // (NCCL asks that of a non-blocking communicator before its next call), holding m.
  void settle(const CallSite& site) {
    const Deadline deadline;
    for (int polls = 0; check_async(site); ++polls) {
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
  // Waits on the host, without m, until DONE() (called under m) says so, within the time limit.
  template <class Done>
  void wait_until(Done&& done, const CallSite& site) {
    const Deadline deadline;
    for (int polls = 0;; ++polls) {
      {
        std::lock_guard<std::mutex> g(m);
        if (done()) return;
        deadline.check(*this, site);
      }
      pause(polls);
    }
  }
  // Waits until the stream has run everything queued on it.
  void wait_stream() {
    wait_until([&] { return poll([&] { return api->cudaStreamQuery(stream); }, last); }, last);
  }
  // What the time limit of mpi_runtime.h allows one wait, from START.
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

  // An event for a collective's completion, back in the pool once released.
  std::shared_ptr<void> completion_event() {
    NcclApi::Event e = nullptr;
    {
      std::lock_guard<std::mutex> g(pool_m);
      if (!idle_events.empty()) {
        e = idle_events.back();
        idle_events.pop_back();
      }
    }
    if (!e) CHAINERMN_CUDA_CALL(*this, cudaEventCreateWithFlags, &e);
    return std::shared_ptr<void>(e, [this](void* done) {
      std::lock_guard<std::mutex> g(pool_m);
      idle_events.push_back(done);
    });
  }
  // Forgets the collectives that have completed, oldest first.
  void retire() {
    while (!in_flight.empty()) {
      const InFlight& w = in_flight.front();
      if (!poll([&] { return api->cudaEventQuery(w.done.get()); }, w.site)) return;
      in_flight.pop_front();
    }
  }
  // QUEUE(stream) queues the work on the communicator's stream after what the compute stream has
  // queued, and returns the NCCL call's site; then it is watched. Returns its completion event.
  struct Queued {
    NcclApi::Stream compute;
    std::shared_ptr<void> done;
  };
  template <class Queue>
  Queued enqueue(Queue&& queue) {
    live_comm();
    retire();  // keeps the list as long as what runs
    const NcclApi::Stream compute = api->compute_stream();
    CHAINERMN_CUDA_CALL(*this, cudaEventRecord, ready, compute);
    CHAINERMN_CUDA_CALL(*this, cudaStreamWaitEvent, stream, ready);
    last = queue(stream);
    std::shared_ptr<void> done = completion_event();
    CHAINERMN_CUDA_CALL(*this, cudaEventRecord, done.get(), stream);
    in_flight.push_back(InFlight{done, last, Clock::now()});
    return Queued{compute, std::move(done)};
  }

  // One look of the watchdog: retires what completed; while work runs, asks NCCL for errors and
  // times the oldest. Returns why it aborted the communicator, or nothing.
  std::string watch() {
    if (!comm) return {};  // aborted by the thread that uses it, which throws
    try {
      retire();
      if (in_flight.empty()) return {};  // idle: nothing can hang (nor is a finished peer an error)
      check_async(in_flight.front().site);
      Deadline{mpi_timeout(), in_flight.front().queued}.check(*this, in_flight.front().site);
    } catch (const Error& e) {
      return e.what();
    }
    return {};
  }
  void watch_loop() {
    std::unique_lock<std::mutex> lock(m);
    // A thread's first CUDA call would otherwise make a context on device 0 in every process.
    if (api->cudaSetDevice(device) != NcclApi::kCudaSuccess) api->cudaGetLastError();
    while (!stopping) {
      const double limit = mpi_timeout();
      const std::chrono::duration<double> tick(limit > 0 ? std::clamp(limit / 20, 0.001, 0.1) : 0.1);
      if (wake.wait_for(lock, tick, [&] { return stopping; })) return;
      const std::string why = watch();
      if (!why.empty()) {
        lock.unlock();
        end_job(why);
        return;
      }
    }
  }

  // Waits for the stream without throwing: false when the communicator had to be aborted.
  bool wait_quietly() noexcept {
    {
      std::lock_guard<std::mutex> g(m);
      if (!comm) return false;
      if (std::uncaught_exceptions() > 0) {  // the job is ending with an error: nothing to wait for
        abort();
        return false;
      }
    }
    try {
      wait_stream();
      return true;
    } catch (...) {
      return false;  // aborted by fail()
    }
  }
};

void NcclState::start(int rank, int size) {
  {
    std::lock_guard<std::mutex> g(m);
    if (live_comm()) return;
  }
  NcclApi::UniqueId id{};
  if (rank == 0) {
    std::lock_guard<std::mutex> g(m);
    CHAINERMN_NCCL_CALL(*this, ncclGetUniqueId, &id);
  }
  share_id(id);
  {
    std::lock_guard<std::mutex> g(m);
    CHAINERMN_CUDA_CALL(*this, cudaSetDevice, device);
    if (!stream) {
      CHAINERMN_CUDA_CALL(*this, cudaStreamCreateWithFlags, &stream);
      CHAINERMN_CUDA_CALL(*this, cudaEventCreateWithFlags, &ready);
    }
    // Non-blocking, so that a member that never comes does not hang this one in NCCL's bootstrap.
    NcclApi::Comm made = nullptr;
    const int r = api->ncclCommInitRankConfig(&made, size, id, rank);
    comm = made;
    last = nccl(r, CallSite{"ncclCommInitRankConfig(&made, size, id, rank)", __FILE__, __LINE__});
  }
  if (!waiter)  // not under m: cuda::synchronize() calls it under the waiters' lock, and it takes m
    waiter = chainer::cuda::detail::add_stream_waiter([this](int d) {
      {
        std::lock_guard<std::mutex> g(m);
        if (d != device || !comm) return;
      }
      wait_stream();
    });
  if (!watchdog.joinable()) watchdog = std::thread([this] { watch_loop(); });
}

NcclState::~NcclState() {
  {
    std::lock_guard<std::mutex> g(m);
    stopping = true;
  }
  wake.notify_all();
  if (watchdog.joinable()) watchdog.join();
  if (waiter) chainer::cuda::detail::remove_stream_waiter(waiter);
  // Destroyed only when nothing is left running and NCCL reports nothing; otherwise aborted.
  if (wait_quietly()) {
    std::lock_guard<std::mutex> g(m);
    try {
      check_async(last);
    } catch (...) {
    }
  }
  in_flight.clear();
  if (comm) api->ncclCommDestroy(comm);
  for (NcclApi::Event e : idle_events) api->cudaEventDestroy(e);
  if (ready) api->cudaEventDestroy(ready);
  if (stream) api->cudaStreamDestroy(stream);
  api->cudaGetLastError();  // a failure here is nobody's to report
}

namespace {

// A sum queued on the communicator's stream; wait() orders the compute stream after it.
class QueuedSum final : public PendingSum {
 public:
  QueuedSum(std::shared_ptr<NcclState> s, NcclState::Queued q, CallSite site, std::shared_ptr<const void> keep)
      : s_(std::move(s)), q_(std::move(q)), site_(site), keep_(std::move(keep)) {}
  ~QueuedSum() override {
    if (waited_) return;
    // Dropped unwaited (an exception in backward): the buffer goes back to the allocator only
    // in compute-stream order after the sum, as after wait().
    std::lock_guard<std::mutex> g(s_->m);
    if (s_->comm && s_->api->cudaStreamWaitEvent(q_.compute, q_.done.get()) != NcclApi::kCudaSuccess)
      s_->api->cudaGetLastError();
  }
  bool test() override {
    if (complete_) return true;
    std::lock_guard<std::mutex> g(s_->m);
    complete_ = s_->poll([&] { return s_->api->cudaEventQuery(q_.done.get()); }, site_);
    return complete_;
  }
  void wait() override {
    if (waited_) return;
    std::lock_guard<std::mutex> g(s_->m);
    s_->live_comm();
    CHAINERMN_CUDA_CALL(*s_, cudaStreamWaitEvent, q_.compute, q_.done.get());
    waited_ = true;
    keep_.reset();
  }

 private:
  std::shared_ptr<NcclState> s_;
  NcclState::Queued q_;
  CallSite site_;
  std::shared_ptr<const void> keep_;  // the buffer lives until the compute stream is ordered after the sum
  bool complete_ = false, waited_ = false;
};

}  // namespace

NcclCollectives::NcclCollectives(std::unique_ptr<NcclApi> api, int device, int rank, int size, ShareId share_id,
                                 EndJob end_job)
    : rank_(rank), size_(size) {
  if (!end_job) {
    const int world_rank = chainermn::world_rank(), world_size = chainermn::world_size();
    end_job = [world_rank, world_size](const std::string& message) {
      chainermn::detail::end_rank_from_watchdog(message, world_rank, world_size);
    };
  }
  state_ = std::make_shared<NcclState>(std::move(api), device, std::move(share_id), std::move(end_job));
}

NcclCollectives::~NcclCollectives() = default;

bool NcclCollectives::aborted() const {
  std::lock_guard<std::mutex> g(state_->m);
  return !state_->failure.empty();
}

void NcclCollectives::wait_idle() {
  NcclState& s = *state_;
  {
    std::lock_guard<std::mutex> g(s.m);
    if (!s.live_comm()) return;
  }
  s.wait_stream();
}

// QUEUE(stream) queues the collective (see NcclState::enqueue); the compute stream is ordered
// after it.
template <class Queue>
void NcclCollectives::run(Queue&& queue) {
  NcclState& s = *state_;
  s.start(rank_, size_);
  std::lock_guard<std::mutex> g(s.m);
  const NcclState::Queued q = s.enqueue(queue);
  CHAINERMN_CUDA_CALL(s, cudaStreamWaitEvent, q.compute, q.done.get());
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
// gathered with the rest and never read. The scratch is allocated before the communicator's lock
// is taken (an allocation may wait for the device, and so for this communicator) and freed once
// queued: the allocator hands it out again in compute-stream order, after the collective.
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
  std::lock_guard<std::mutex> g(s.m);
  NcclState::Queued q = s.enqueue([&](NcclApi::Stream st) {
    return CHAINERMN_NCCL_CALL(s, ncclAllReduce, buf.data, buf.data, size_t(buf.count), buf.type, s.comm, st);
  });
  return std::make_unique<QueuedSum>(state_, std::move(q), s.last, std::move(keep));
}

}  // namespace chainermn::nccl
