// How the gradient reducer's buckets travel. The reducer (distributed/reducer/gradient_reducer.h) plans
// buckets and decides when each is ready; a transport gives each bucket the flat buffer it is
// packed into and sums that buffer over the ranks, handing back a PendingSum to wait on, as
// PyTorch's reducer hands buckets to a ProcessGroup and keeps the Work, and Flashlight's
// CoalescingReducer calls allReduceMultiple. Two transports:
//   communicator_transport   a private buffer per bucket, summed by the communicator's own
//                            algorithm (Communicator::start_sum: MPI, the composed ones, NCCL);
//   shared_memory_transport  on one host, each rank's region of a shared segment; the sums are
//                            taken at finish_step (distributed/reducer/shared_memory_transport.h).
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"
#include "distributed/communicators/communicator.h"

namespace chainermn {

// One bucket as planned: its dtype, device, size, and each parameter's (offset, numel) in it.
struct BucketLayout {
  chainer::DType dtype = chainer::DType::Float32;
  chainer::Device device;
  int64_t numel = 0;
  std::vector<std::pair<int64_t, int64_t>> parts;
};

class BucketTransport {
 public:
  virtual ~BucketTransport() = default;
  // Whether gradients go into their buffer from their own hooks, at once, rather than when their
  // bucket is started: true where there is no message to batch (shared memory), so a gradient
  // is copied while backward has just written it and it is still in cache.
  virtual bool packs_early() const { return false; }
  // Whether the sums are taken in finish_step (shared memory) rather than by the started
  // PendingSums: then a step cannot be left in flight behind the next one (double buffering).
  virtual bool sums_at_finish() const { return false; }
  // Where bucket B is packed in this step (numel elements of its dtype on its device); the same
  // tensor until end_step().
  virtual chainer::Tensor buffer(size_t b) = 0;
  // Starts summing bucket B's buffer over the ranks, in place.
  virtual std::unique_ptr<PendingSum> start(size_t b) = 0;
  // Once every started sum has been waited for: completes the step (BARRIER as in
  // GradientReducer::finalize) and tells how it went.
  struct Finished {
    bool shared_memory = false;  // the sums were taken in shared memory
    bool held_fallback = false;  // a held view of the last means made this step use messages
  };
  virtual Finished finish_step(bool barrier) = 0;
  // After finish_step: the tensor holding bucket B's means (gradients become views of it).
  virtual chainer::Tensor means(size_t b) = 0;
  // Forgets this step's choice of buffers (the next step, or a restart of this one).
  virtual void end_step() = 0;
};

// Private buffers summed by COMM's start_sum, so a step's means stay where they are while the
// next step packs (double buffering leaves them in flight meanwhile). Each bucket keeps up to
// three buffers and packs into one that nobody else holds (no view of its means, no sum in
// flight), else into a fresh one; without double buffering that is the same buffer every step.
std::unique_ptr<BucketTransport> communicator_transport(std::shared_ptr<Communicator> comm,
                                                        std::vector<BucketLayout> buckets);

}  // namespace chainermn
