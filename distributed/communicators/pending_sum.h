/// @file
/// A sum over a communicator's ranks that has been started and not yet waited for, as c10d's
/// Work: the gradient reducer starts one per bucket (Communicator::start_sum) while backward is
/// still running and waits for all of them at the end of the step.
#pragma once
#include <mpi.h>

#include <memory>

#include "core/tensor/tensor.h"

namespace chainermn {

/// A started sum over a communicator's ranks, to test or wait for (as c10d's Work).
class PendingSum {
 public:
  virtual ~PendingSum() = default;
  /// Whether the sum is complete; never blocks (for MPI it also lets the library progress).
  virtual bool test() = 0;
  /// Returns once the sum is in the buffer. For a device buffer that is in stream order: work
  /// queued afterwards on the device's compute stream sees the sum; the host need not have waited.
  virtual void wait() = 0;
};

/// A sum that was complete when it was started (a blocking algorithm, or one rank).
std::unique_ptr<PendingSum> finished_sum();

/// What MPI may be handed for BUF: BUF itself when it is in host memory, or in device memory and
/// MPI is CUDA-aware (distributed/runtime/mpi_library.h) and STAGED is false (after the device has
/// finished the work queued on it, since MPI does not know its streams); otherwise a host copy,
/// which the caller copies back into BUF (`buf.copy_`) when MPI wrote it.
chainer::Tensor mpi_accessible(const chainer::Tensor& buf, bool staged = false);
/// `FN(t)` on `mpi_accessible(BUF, STAGED)`, with t's values written back into BUF when t is a copy:
/// how an MPI call that writes BUF in place reaches device memory.
template <class Fn>
void on_mpi_accessible(chainer::Tensor& buf, Fn&& fn, bool staged = false) {
  chainer::Tensor t = mpi_accessible(buf, staged);
  fn(t);
  if (t.storage() != buf.storage()) buf.copy_(t);
}
/// The blocking in-place sum of BUF (flat, contiguous) over COMM, through on_mpi_accessible.
void mpi_allreduce_sum(chainer::Tensor& buf, MPI_Comm comm);

/// MPI_Iallreduce (sum, in place) of BUF (flat, contiguous, floating) over COMM, in chunks of at
/// most `detail::max_chunk_bytes()`, on `mpi_accessible(BUF)`: a staged device buffer is copied out
/// now and back, on the compute stream, by wait(). BUF's storage is kept alive until then.
std::unique_ptr<PendingSum> start_mpi_sum(chainer::Tensor& buf, MPI_Comm comm);

}  // namespace chainermn
