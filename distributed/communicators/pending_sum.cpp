#include "distributed/communicators/pending_sum.h"

#include <algorithm>
#include <vector>

#include "core/device/cuda.h"
#include "distributed/runtime/chunked_transfer.h"
#include "distributed/runtime/mpi_library.h"
#include "distributed/runtime/mpi_check.h"
#include "distributed/runtime/mpi_wait.h"
#include "distributed/runtime/mpi_runtime.h"

namespace chainermn {

using chainer::Tensor;

namespace {

class FinishedSum final : public PendingSum {
 public:
  bool test() override { return true; }
  void wait() override {}
};

class MpiSum final : public PendingSum {
 public:
  MpiSum(Tensor& buf, MPI_Comm comm) : buf_(buf), host_(mpi_accessible(buf)) {
    const size_t item = host_.itemsize();
    const int64_t per_chunk = int64_t(std::max<size_t>(1, detail::max_chunk_bytes() / item));
    const MPI_Datatype type = detail::mpi_datatype(host_.dtype());
    const MPI_Op sum = detail::mpi_sum_op(host_.dtype());  // our own for float16 and bfloat16
    char* base = static_cast<char*>(host_.raw_data());
    for (int64_t at = 0; at < host_.numel(); at += per_chunk) {
      MPI_Request r = MPI_REQUEST_NULL;
      CHAINERMN_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, base + size_t(at) * item, int(std::min(per_chunk, host_.numel() - at)),
                                         type, sum, comm, &r));
      requests_.push_back(r);
    }
  }
  ~MpiSum() override {
    // Requests must complete before the buffer goes; an abandoned sum is finished, not leaked.
    if (!requests_.empty() && mpi_is_running()) MPI_Waitall(int(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
  }
  bool test() override {
    if (requests_.empty()) return true;
    int done = 0;
    CHAINERMN_MPI_CHECK(MPI_Testall(int(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE));
    if (done) finish();
    return done != 0;
  }
  void wait() override {
    if (!requests_.empty()) CHAINERMN_MPI_CHECK(mpi::wait_all(int(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
    finish();
  }

 private:
  void finish() {
    requests_.clear();
    if (!copied_back_ && host_.storage() != buf_.storage()) buf_.copy_(host_);
    copied_back_ = true;
  }
  Tensor buf_, host_;
  std::vector<MPI_Request> requests_;
  bool copied_back_ = false;
};

}  // namespace

Tensor mpi_accessible(const Tensor& buf, bool staged) {
  if (buf.device().is_cpu()) return buf;
  static const bool cuda_aware = mpi_cuda_aware().state == CudaAwareness::State::Yes;
  if (cuda_aware && !staged) {
    chainer::cuda::get_device(buf.device().index).synchronize();
    return buf;
  }
  return buf.to(chainer::Device{});
}

void mpi_allreduce_sum(Tensor& buf, MPI_Comm comm) {
  on_mpi_accessible(buf, [&](Tensor& t) { detail::allreduce_sum_chunked(t.raw_data(), t.numel(), t.dtype(), comm); });
}

std::unique_ptr<PendingSum> finished_sum() { return std::make_unique<FinishedSum>(); }

std::unique_ptr<PendingSum> start_mpi_sum(Tensor& buf, MPI_Comm comm) { return std::make_unique<MpiSum>(buf, comm); }

}  // namespace chainermn
