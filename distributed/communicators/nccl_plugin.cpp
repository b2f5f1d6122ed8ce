// libchainermn_nccl.so: the NCCL collective backend (distributed/communicators/nccl_backend.h).
// Built only where CUDA and NCCL are found; libchainermn loads it at first use. The logic is
// NcclCollectives (nccl_collectives.h, in libchainermn, tested on the host against a fake);
// this file gives it the real CUDA runtime and NCCL calls and adapts it to CollectiveBackend.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <vector>

#include "core/cuda/runtime.h"
#include "core/util/error.h"
#include "distributed/communicators/nccl_backend.h"
#include "distributed/communicators/nccl_collectives.h"
#include "distributed/runtime/mpi_check.h"
#include "distributed/runtime/mpi_wait.h"

// The two calls newer than the rest (ncclGetLastError: NCCL 2.13, ncclCommInitRankConfig: 2.14.3)
// are weak references, so that the plugin still loads with an older libnccl (the loader binds
// every symbol at dlopen, RTLD_NOW) and says which versions are loaded and needed
// (check_nccl_version, nccl_api.h) instead of "undefined symbol".
#pragma weak ncclGetLastError
#pragma weak ncclCommInitRankConfig

namespace chainermn::nccl {

using chainer::DType;
using chainer::str;
using chainer::Tensor;

namespace {

static_assert(NcclApi::kCudaSuccess == int(cudaSuccess) && NcclApi::kCudaErrorNotReady == int(cudaErrorNotReady));
static_assert(NcclApi::kNcclSuccess == int(ncclSuccess) && NcclApi::kNcclInProgress == int(ncclInProgress));
static_assert(sizeof(NcclApi::UniqueId) == sizeof(ncclUniqueId));

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

cudaStream_t S(NcclApi::Stream s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t E(NcclApi::Event e) { return static_cast<cudaEvent_t>(e); }
ncclComm_t C(NcclApi::Comm c) { return static_cast<ncclComm_t>(c); }

// Each method is the library function of its name (nccl_api.h).
class CudaNcclApi final : public NcclApi {
 public:
  explicit CudaNcclApi(int device) : device_(device) {}

  int cudaSetDevice(int device) override { return ::cudaSetDevice(device); }
  int cudaStreamCreateWithFlags(Stream* stream) override {
    cudaStream_t s = nullptr;
    const cudaError_t e = ::cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    *stream = s;
    return e;
  }
  int cudaStreamDestroy(Stream stream) override { return ::cudaStreamDestroy(S(stream)); }
  int cudaStreamQuery(Stream stream) override { return ::cudaStreamQuery(S(stream)); }
  int cudaStreamWaitEvent(Stream stream, Event event) override { return ::cudaStreamWaitEvent(S(stream), E(event), 0); }
  int cudaEventCreateWithFlags(Event* event) override {
    cudaEvent_t e = nullptr;
    const cudaError_t r = ::cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    *event = e;
    return r;
  }
  int cudaEventRecord(Event event, Stream stream) override { return ::cudaEventRecord(E(event), S(stream)); }
  int cudaEventQuery(Event event) override { return ::cudaEventQuery(E(event)); }
  int cudaEventDestroy(Event event) override { return ::cudaEventDestroy(E(event)); }
  int cudaMemcpyAsync(void* dst, const void* src, size_t bytes, Stream stream) override {
    return ::cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S(stream));
  }
  int cudaGetLastError() override { return ::cudaGetLastError(); }
  std::string cuda_error_text(int code) override {
    const auto e = cudaError_t(code);
    return str(cudaGetErrorName(e), ": ", cudaGetErrorString(e));
  }

  int ncclGetVersion(int* version) override { return ::ncclGetVersion(version); }
  int ncclGetUniqueId(UniqueId* id) override {
    ncclUniqueId u{};
    const ncclResult_t r = ::ncclGetUniqueId(&u);
    std::memcpy(id->bytes, &u, sizeof u);
    return r;
  }
  int ncclCommInitRankConfig(Comm* comm, int nranks, const UniqueId& id, int rank) override {
    // The backend checked the version first (NcclPlugin::backend).
    if (!&::ncclCommInitRankConfig)
      throw chainer::InternalError("ncclCommInitRankConfig is missing from a libnccl that passed the version check");
    ncclUniqueId u{};
    std::memcpy(&u, id.bytes, sizeof u);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t c = nullptr;
    const ncclResult_t r = ::ncclCommInitRankConfig(&c, nranks, u, rank, &config);
    *comm = c;
    return r;
  }
  int ncclCommGetAsyncError(Comm comm, int* state) override {
    ncclResult_t s = ncclSuccess;
    const ncclResult_t r = ::ncclCommGetAsyncError(C(comm), &s);
    *state = s;
    return r;
  }
  int ncclCommAbort(Comm comm) override { return ::ncclCommAbort(C(comm)); }
  int ncclCommDestroy(Comm comm) override { return ::ncclCommDestroy(C(comm)); }
  int ncclAllReduce(const void* send, void* recv, size_t count, DType type, Comm comm, Stream stream) override {
    return ::ncclAllReduce(send, recv, count, nccl_type(type), ncclSum, C(comm), S(stream));
  }
  int ncclReduce(const void* send, void* recv, size_t count, DType type, int root, Comm comm, Stream stream) override {
    return ::ncclReduce(send, recv, count, nccl_type(type), ncclSum, root, C(comm), S(stream));
  }
  int ncclBroadcast(const void* send, void* recv, size_t count, DType type, int root, Comm comm,
                    Stream stream) override {
    return ::ncclBroadcast(send, recv, count, nccl_type(type), root, C(comm), S(stream));
  }
  int ncclReduceScatter(const void* send, void* recv, size_t recv_count, DType type, Comm comm,
                        Stream stream) override {
    return ::ncclReduceScatter(send, recv, recv_count, nccl_type(type), ncclSum, C(comm), S(stream));
  }
  int ncclAllGather(const void* send, void* recv, size_t send_count, DType type, Comm comm, Stream stream) override {
    return ::ncclAllGather(send, recv, send_count, nccl_type(type), C(comm), S(stream));
  }
  std::string nccl_error_text(int code, Comm comm) override {
    const char* last = &::ncclGetLastError ? ::ncclGetLastError(C(comm)) : nullptr;
    return str(::ncclGetErrorString(ncclResult_t(code)), last && *last ? str(" (", last, ")") : std::string());
  }

  Stream compute_stream() override { return chainer::cuda::detail::runtime(device_).native_stream(device_); }
  std::shared_ptr<void> allocate(size_t bytes) override {
    return chainer::cuda::detail::runtime(device_).allocate(device_, bytes);
  }

 private:
  int device_;
};

// NcclCollectives as a CollectiveBackend on the tensors of one device.
class NcclBackend final : public CollectiveBackend {
 public:
  NcclBackend(std::unique_ptr<NcclApi> api, MPI_Comm comm, int device, int rank, int size)
      : device_(device),
        nccl_(std::move(api), device, rank, size, [comm](NcclApi::UniqueId& id) {
          CHAINERMN_MPI_CHECK(mpi::bcast(id.bytes, int(sizeof id.bytes), MPI_BYTE, 0, comm));
        }) {}
  int rank() const override { return nccl_.rank(); }
  int size() const override { return nccl_.size(); }

  void reduce(Tensor& buf, int root) const override { nccl_.reduce(span(buf), root); }
  void allreduce(Tensor& buf) const override { nccl_.allreduce(span(buf)); }
  void bcast(Tensor& buf, int root) const override { nccl_.bcast(span(buf), root); }
  void reduce_scatter(Tensor& buf, const std::vector<int64_t>& shares) const override {
    nccl_.reduce_scatter(span(buf), shares);
  }
  void allgather(Tensor& buf, const std::vector<int64_t>& shares) const override { nccl_.allgather(span(buf), shares); }
  std::unique_ptr<PendingSum> start_allreduce(Tensor& buf) const override {
    return nccl_.start_allreduce(span(buf), buf.storage());
  }

 private:
  DeviceSpan span(Tensor& buf) const {
    if (!buf.device().is_cuda() || buf.device().index != device_)
      throw chainer::InternalError(str("NCCL backend for cuda:", device_, " given a buffer on ", buf.device().str()));
    if (!buf.is_contiguous()) throw chainer::InternalError("NCCL backend given a buffer that is not contiguous");
    return DeviceSpan{buf.raw_data(), buf.numel(), buf.dtype()};
  }

  int device_;
  mutable NcclCollectives nccl_;
};

class NcclPlugin final : public Plugin {
 public:
  int version() override {
    int v = 0;
    return ::ncclGetVersion(&v) == ncclSuccess ? v : 0;
  }
  int header_version() override { return NCCL_VERSION_CODE; }
  std::string unavailable_reason() override {
    CudaNcclApi api(0);  // the version query uses no device
    if (std::string old = nccl_version_problem(api, NCCL_VERSION_CODE); !old.empty()) return old;
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) return str("no CUDA device can be used (", cudaGetErrorString(e), ")");
    if (n == 0) return "no CUDA device is present";
    return "";
  }
  std::unique_ptr<CollectiveBackend> backend(MPI_Comm comm, int device) override {
    int rank = 0, size = 1;
    CHAINERMN_MPI_CHECK(MPI_Comm_rank(comm, &rank));
    CHAINERMN_MPI_CHECK(MPI_Comm_size(comm, &size));
    auto api = std::make_unique<CudaNcclApi>(device);
    check_nccl_version(*api, NCCL_VERSION_CODE, "NCCL communicator");
    return std::make_unique<NcclBackend>(std::move(api), comm, device, rank, size);
  }
};

}  // namespace

}  // namespace chainermn::nccl

extern "C" chainermn::nccl::Plugin* chainermn_nccl_plugin() {
  static chainermn::nccl::NcclPlugin plugin;
  return &plugin;
}
