// The NCCL communicators' logic, written against NcclApi (nccl_api.h) so that it is tested on the
// host (tests/test_nccl_logic.cpp); the plugin, libchainermn_nccl.so, hands it the real calls and
// adapts it to CollectiveBackend (nccl_plugin.cpp).
//
// - The communicator is made at the first collective, which every member reaches together:
//   member 0 gets a unique id, the members share it (through MPI), and each calls
//   ncclCommInitRankConfig non-blocking, then polls ncclCommGetAsyncError until it is ready. So
//   a member that never comes cannot hang the others in NCCL's bootstrap.
// - Collectives run on a stream of the communicator's own, after what the device's compute
//   stream has queued (an event). The host then waits for each collective to complete, polling
//   the event and NCCL's asynchronous error, before the compute stream is ordered after it. That
//   host wait is the one place where NCCL work is waited for: the compute stream never waits for
//   a collective that has not completed, so no later wait outside this file (a host read's
//   cudaStreamSynchronize in libchainer_cuda.so) can hang on a dead peer. The host waits for a
//   collective as an MPI rank waits in a blocking MPI collective; start_allreduce keeps the
//   overlap: backward goes on while the sum runs, and PendingSum::wait() is the host wait.
// - Every host wait (and the initialization) is bounded as the MPI watchdog bounds an MPI call
//   (distributed/mpi_runtime.h: mpi_timeout(), CHAINERMN_TIMEOUT, 0 for no limit), and ends at
//   once when NCCL reports an error (a peer died, a network error). Either way the communicator
//   is aborted (ncclCommAbort, which also stops its kernels on the device) and chainer::Error is
//   thrown naming the NCCL call, where it was queued and NCCL's message; run_main turns it into
//   the end of the whole job. A communicator that failed is only ever aborted, never destroyed
//   (ncclCommDestroy would wait for work that cannot complete); later calls throw.
// - A query that finds work not yet complete leaves "not ready" as the thread's last CUDA error;
//   every such query is followed by cudaGetLastError, as core/cuda/runtime.cu does after its own,
//   since the CUDA plugin checks that error after each kernel launch and both share libcudart.
// - Reduce-scatter and all-gather over uneven shares use NCCL's own (equal-share) calls on a
//   scratch buffer with every share padded to the largest: one ncclReduceScatter or
//   ncclAllGather instead of one grouped ncclReduce or ncclBroadcast per member.
// - cuda::synchronize() waits for the communicator's stream too (core/cuda.h,
//   detail::add_stream_waiter).
// One thread uses a communicator (the MPI thread); the waiter may be called from another.
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

  // Member RANK of SIZE, on DEVICE. Makes nothing yet: the communicator comes at the first collective.
  NcclCollectives(std::unique_ptr<NcclApi> api, int device, int rank, int size, ShareId share_id);
  // Destroys the communicator once its stream is idle; aborts it instead when it failed, when
  // NCCL reports an error or when its work does not complete within the time limit. Never throws.
  ~NcclCollectives();
  NcclCollectives(const NcclCollectives&) = delete;
  NcclCollectives& operator=(const NcclCollectives&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // As CollectiveBackend's, in place on BUF; each returns once the collective has completed.
  void reduce(DeviceSpan buf, int root);
  void allreduce(DeviceSpan buf);
  void bcast(DeviceSpan buf, int root);
  void reduce_scatter(DeviceSpan buf, const std::vector<int64_t>& shares);
  void allgather(DeviceSpan buf, const std::vector<int64_t>& shares);
  // allreduce, queued: the PendingSum's test() polls, its wait() is the host wait, then the compute
  // stream is ordered after the sum. KEEP (BUF's storage) is held until then.
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
