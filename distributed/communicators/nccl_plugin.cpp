// libchainermn_nccl.so: the NCCL collective backend (distributed/communicators/nccl_backend.h).
// Built only where CUDA and NCCL are found; libchainermn loads it at first use.
#include <cuda_runtime.h>
#include <nccl.h>

#include <vector>

#include "core/cuda/runtime.h"
#include "core/error.h"
#include "distributed/communicators/nccl_backend.h"
#include "distributed/mpi_check.h"
#include "distributed/mpi_wait.h"

namespace chainermn::nccl {

using chainer::DType;
using chainer::Error;
using chainer::str;
using chainer::Tensor;

namespace {

void check_nccl(ncclResult_t r, ncclComm_t comm, const char* call, const char* file, int line) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  const char* last = comm ? ncclGetLastError(comm) : ncclGetLastError(nullptr);
  throw Error(str(call, " failed at ", file, ":", line, ": ", ncclGetErrorString(r),
                  last && *last ? str(" (", last, ")") : std::string()));
}
void check_cuda(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return;
  throw Error(str(call, " failed at ", file, ":", line, ": ", cudaGetErrorName(e), ": ", cudaGetErrorString(e)));
}
#define CHAINERMN_NCCL_CHECK(call) check_nccl((call), nccl_, #call, __FILE__, __LINE__)
#define CHAINERMN_CUDA_CHECK(call) check_cuda((call), #call, __FILE__, __LINE__)

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::Float16: return ncclFloat16;
    case DType::BFloat16: return ncclBfloat16;
    case DType::Int32: return ncclInt32;
    case DType::Int64: return ncclInt64;
    case DType::UInt8: return ncclUint8;
  }
  throw chainer::InternalError("nccl_type: unknown dtype");
}

// A sum queued on the backend's stream; wait() orders the compute stream after it.
class QueuedSum final : public PendingSum {
 public:
  QueuedSum(cudaEvent_t done, cudaStream_t compute, Tensor keep) : done_(done), compute_(compute), keep_(std::move(keep)) {}
  ~QueuedSum() override {
    if (done_) cudaEventDestroy(done_);
  }
  bool test() override { return cudaEventQuery(done_) == cudaSuccess; }
  void wait() override { CHAINERMN_CUDA_CHECK(cudaStreamWaitEvent(compute_, done_, 0)); }

 private:
  cudaEvent_t done_;
  cudaStream_t compute_;
  Tensor keep_;  // the buffer lives until the compute stream is ordered after the sum
};

class NcclBackend final : public CollectiveBackend {
 public:
  NcclBackend(MPI_Comm comm, int device) : comm_(comm), device_(device) {
    CHAINERMN_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    CHAINERMN_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  ~NcclBackend() override {
    if (nccl_) ncclCommDestroy(nccl_);
    if (ready_) cudaEventDestroy(ready_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void reduce(Tensor& buf, int root) const override {
    run(buf, true, [&](void* p, ncclDataType_t t, cudaStream_t s) {
      CHAINERMN_NCCL_CHECK(ncclReduce(p, p, size_t(buf.numel()), t, ncclSum, root, nccl_, s));
    });
  }
  void allreduce(Tensor& buf) const override {
    run(buf, true, [&](void* p, ncclDataType_t t, cudaStream_t s) {
      CHAINERMN_NCCL_CHECK(ncclAllReduce(p, p, size_t(buf.numel()), t, ncclSum, nccl_, s));
    });
  }
  void bcast(Tensor& buf, int root) const override {
    run(buf, true, [&](void* p, ncclDataType_t t, cudaStream_t s) {
      CHAINERMN_NCCL_CHECK(ncclBroadcast(p, p, size_t(buf.numel()), t, root, nccl_, s));
    });
  }
  void reduce_scatter(Tensor& buf, const std::vector<int64_t>& shares) const override {
    per_share(buf, shares, [&](char* p, size_t n, ncclDataType_t t, int member, cudaStream_t s) {
      CHAINERMN_NCCL_CHECK(ncclReduce(p, p, n, t, ncclSum, member, nccl_, s));
    });
  }
  void allgather(Tensor& buf, const std::vector<int64_t>& shares) const override {
    per_share(buf, shares, [&](char* p, size_t n, ncclDataType_t t, int member, cudaStream_t s) {
      CHAINERMN_NCCL_CHECK(ncclBroadcast(p, p, n, t, member, nccl_, s));
    });
  }
  std::unique_ptr<PendingSum> start_allreduce(Tensor& buf) const override {
    cudaStream_t compute = run(buf, false, [&](void* p, ncclDataType_t t, cudaStream_t s) {
      CHAINERMN_NCCL_CHECK(ncclAllReduce(p, p, size_t(buf.numel()), t, ncclSum, nccl_, s));
    });
    cudaEvent_t done = nullptr;
    CHAINERMN_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CHAINERMN_CUDA_CHECK(cudaEventRecord(done, stream_));
    return std::make_unique<QueuedSum>(done, compute, buf);
  }

 private:
  // The NCCL communicator and the stream, at the first collective (every member is there).
  void ensure_started() const {
    if (nccl_) return;
    ncclUniqueId id{};
    if (rank_ == 0) CHAINERMN_NCCL_CHECK(ncclGetUniqueId(&id));
    CHAINERMN_MPI_CHECK(mpi::bcast(&id, int(sizeof id), MPI_BYTE, 0, comm_));
    CHAINERMN_CUDA_CHECK(cudaSetDevice(device_));
    CHAINERMN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CHAINERMN_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    ncclComm_t made = nullptr;
    check_nccl(ncclCommInitRank(&made, size_, id, rank_), nullptr, "ncclCommInitRank", __FILE__, __LINE__);
    nccl_ = made;
  }

  // Queues FN(data, type, stream) on the backend's stream after the compute stream's work; with
  // COMPUTE_WAITS the compute stream's later work waits for it. Returns the compute stream.
  template <class Fn>
  cudaStream_t run(Tensor& buf, bool compute_waits, Fn&& fn) const {
    if (!buf.device().is_cuda() || buf.device().index != device_)
      throw chainer::InternalError(str("NCCL backend for cuda:", device_, " given a buffer on ", buf.device().str()));
    auto compute = static_cast<cudaStream_t>(chainer::cuda::detail::runtime(device_).native_stream(device_));
    ensure_started();
    CHAINERMN_CUDA_CHECK(cudaEventRecord(ready_, compute));
    CHAINERMN_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
    fn(buf.raw_data(), nccl_type(buf.dtype()), stream_);
    if (compute_waits) {
      CHAINERMN_CUDA_CHECK(cudaEventRecord(ready_, stream_));
      CHAINERMN_CUDA_CHECK(cudaStreamWaitEvent(compute, ready_, 0));
    }
    return compute;
  }

  // One grouped call of FN per member's share of BUF.
  template <class Fn>
  void per_share(Tensor& buf, const std::vector<int64_t>& shares, Fn&& fn) const {
    run(buf, true, [&](void* p, ncclDataType_t t, cudaStream_t s) {
      char* at = static_cast<char*>(p);
      CHAINERMN_NCCL_CHECK(ncclGroupStart());
      for (int m = 0; m < size_; ++m) {
        fn(at, size_t(shares[size_t(m)]), t, m, s);
        at += shares[size_t(m)] * int64_t(buf.itemsize());
      }
      CHAINERMN_NCCL_CHECK(ncclGroupEnd());
    });
  }

  MPI_Comm comm_;
  int device_;
  int rank_ = 0, size_ = 1;
  mutable ncclComm_t nccl_ = nullptr;
  mutable cudaStream_t stream_ = nullptr;
  mutable cudaEvent_t ready_ = nullptr;
};

class NcclPlugin final : public Plugin {
 public:
  int version() override {
    int v = 0;
    return ncclGetVersion(&v) == ncclSuccess ? v : 0;
  }
  std::string unavailable_reason() override {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) return str("no CUDA device can be used (", cudaGetErrorString(e), ")");
    if (n == 0) return "no CUDA device is present";
    return "";
  }
  std::unique_ptr<CollectiveBackend> backend(MPI_Comm comm, int device) override {
    return std::make_unique<NcclBackend>(comm, device);
  }
};

}  // namespace

}  // namespace chainermn::nccl

extern "C" chainermn::nccl::Plugin* chainermn_nccl_plugin() {
  static chainermn::nccl::NcclPlugin plugin;
  return &plugin;
}
