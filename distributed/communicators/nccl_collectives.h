// The NCCL communicators' logic, written against NcclApi (nccl_api.h) so that it is tested on the
// host (tests/distributed/test_nccl_logic.cpp); the plugin, libchainermn_nccl.so, hands it the real calls and
// adapts it to CollectiveBackend (nccl_plugin.cpp).
//
// - The communicator is made at the first collective, which every member reaches together:
//   member 0 gets a unique id, the members share it (through MPI), and each calls
//   ncclCommInitRankConfig non-blocking, then polls ncclCommGetAsyncError until it is ready. So
//   a member that never comes cannot hang the others in NCCL's bootstrap.
// - Collectives run on a stream of the communicator's own, after what the device's compute
//   stream has queued (an event), and the compute stream is ordered after them (another event):
//   the host never waits for a collective, so a data-parallel step queues its sums and goes on,
//   as PyTorch's ProcessGroupNCCL does. Buffers given to a collective (and its scratch) may be
//   freed at once: the caching allocator hands memory out again in compute-stream order, which
//   now comes after the collective.
// - A watchdog thread per communicator (PyTorch's NCCL watchdog) keeps the job from hanging on
//   a dead peer: every tick it retires the collectives that have completed (their events), asks
//   ncclCommGetAsyncError, and times the oldest one still running against the limit of
//   mpi_runtime.h (mpi_timeout(), CHAINERMN_TIMEOUT, 0 for no limit), from when it was queued.
//   On an error or past the limit it aborts the communicator (ncclCommAbort, which also stops
//   its kernels on the device) and ends the job with a message naming the NCCL call, where it
//   was queued and NCCL's message (EndJob; by default the rank prints it and is killed, as the
//   MPI watchdog ends a rank). So every host wait on a stream that NCCL work feeds (a read's
//   cudaStreamSynchronize in libchainer_cuda.so, a staged copy for MPI) is covered without being
//   changed, and it costs a step nothing.
// - The waits that remain on the host are bounded the same way and throw chainer::Error (which
//   run_main turns into the end of the job) after aborting: the initialization (below),
//   wait_idle (cuda::synchronize()), and a pending sum's test(), which also asks NCCL for errors.
// - A communicator that failed is only ever aborted, never destroyed (ncclCommDestroy would wait
//   for work that cannot complete); later calls throw.
// - A query that finds work not yet complete leaves "not ready" as the thread's last CUDA error;
//   every such query is followed by cudaGetLastError, as core/cuda/runtime.cu does after its own,
//   since the CUDA plugin checks that error after each kernel launch and both share libcudart.
// - Reduce-scatter and all-gather over uneven shares use NCCL's own (equal-share) calls on a
//   scratch buffer with every share padded to the largest: one ncclReduceScatter or
//   ncclAllGather instead of one grouped ncclReduce or ncclBroadcast per member.
// - cuda::synchronize() waits for the communicator's stream too (core/device/cuda.h,
//   detail::add_stream_waiter).
// One thread uses a communicator (the MPI thread); the synchronize waiter and the watchdog run on
// others, so every call on the communicator is made under one lock.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distributed/communicators/nccl_api.h"
#include "distributed/communicators/pending_sum.h"

namespace chainermn::nccl {

// Where an NCCL or CUDA call is made: the call as written, and file:line (as MpiCallSite).
struct CallSite {
  const char* call;
  const char* file;
  int line;
};

// COUNT elements of TYPE, consecutive in device memory.
struct DeviceSpan {
  void* data;
  int64_t count;
  chainer::DType type;
};

// NCCL padding for uneven shares: every share padded to the largest, and where each begins.
struct PaddedShares {
  int64_t padded = 0;            // the largest share: what each member sends and receives
  std::vector<int64_t> offsets;  // where member i's share begins in the unpadded buffer
  bool even = true;              // all shares equal: the buffer itself serves, no scratch
};
PaddedShares pad_shares(const std::vector<int64_t>& shares);

struct NcclState;

class NcclCollectives {
 public:
  // Gives every member member 0's unique id (MPI_Bcast over the members' MPI communicator).
  using ShareId = std::function<void(NcclApi::UniqueId& id)>;
  // Ends the job with MESSAGE after the watchdog aborted the communicator; called on the
  // watchdog's thread, which then stops. The default prints "[rank R/N] chainermn: MESSAGE" and
  // kills the process (chainermn::detail::end_rank_from_watchdog).
  using EndJob = std::function<void(const std::string& message)>;

  // Member RANK of SIZE, on DEVICE. Makes nothing yet: the communicator (and its watchdog) comes
  // at the first collective.
  NcclCollectives(std::unique_ptr<NcclApi> api, int device, int rank, int size, ShareId share_id,
                  EndJob end_job = nullptr);
  // Stops the watchdog, then destroys the communicator once its stream is idle; aborts it instead
  // when it failed, when NCCL reports an error or when its work does not complete within the time
  // limit. Never throws.
  ~NcclCollectives();
  NcclCollectives(const NcclCollectives&) = delete;
  NcclCollectives& operator=(const NcclCollectives&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // As CollectiveBackend's, in place on BUF; each returns once the collective is queued, with the
  // compute stream ordered after it.
  void reduce(DeviceSpan buf, int root);
  void allreduce(DeviceSpan buf);
  void bcast(DeviceSpan buf, int root);
  void reduce_scatter(DeviceSpan buf, const std::vector<int64_t>& shares);
  void allgather(DeviceSpan buf, const std::vector<int64_t>& shares);
  // allreduce, queued without ordering the compute stream after it yet: the PendingSum's test()
  // polls, its wait() orders the compute stream after the sum (on the device, the host goes on).
  // KEEP (BUF's storage) is held until then.
  std::unique_ptr<PendingSum> start_allreduce(DeviceSpan buf, std::shared_ptr<const void> keep);

  // Waits for everything queued on the communicator's stream (what cuda::synchronize() calls).
  void wait_idle();
  // Whether the communicator was aborted after an error (every later call throws).
  bool aborted() const;

 private:
  template <class Queue>
  void run(Queue&& queue);

  int rank_, size_;
  std::shared_ptr<NcclState> state_;  // shared with the pending sums
};

}  // namespace chainermn::nccl
