// What the NCCL communicators (distributed/communicators/nccl_collectives.h) use of the device:
// the CUDA runtime and NCCL calls they make, the device's compute stream and scratch memory.
// The plugin, libchainermn_nccl.so, forwards each method to the library function of the same
// name (nccl_plugin.cpp); tests/distributed/test_nccl_logic.cpp scripts a fake one, so the communicators'
// logic (errors, waits, aborts, the padded shares) runs on a machine without a GPU. An interface
// rather than a fake libnccl/libcudart loaded in their place: a fake library would have to match
// every signature and symbol version of both, and a test could not script it per case.
//
// No CUDA or NCCL type appears here, so the logic compiles without their headers: streams,
// events and communicators are opaque handles, results are the libraries' int codes (0 is
// success for both; the two codes the logic acts on are named below, and the plugin checks them
// against the headers). Methods take only the arguments the communicators vary: streams are made
// non-blocking, events without timing, copies are device to device, every reduction is a sum.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/tensor/dtype.h"

namespace chainermn::nccl {

class NcclApi {
 public:
  using Stream = void*;  // cudaStream_t
  using Event = void*;   // cudaEvent_t
  using Comm = void*;    // ncclComm_t
  // ncclUniqueId: NCCL_UNIQUE_ID_BYTES, passed between the members through MPI.
  struct UniqueId {
    char bytes[128];
  };

  static constexpr int kCudaSuccess = 0;
  static constexpr int kCudaErrorNotReady = 600;  // cudaErrorNotReady: queued work has not completed
  static constexpr int kNcclSuccess = 0;
  static constexpr int kNcclInProgress = 7;  // ncclInProgress: a non-blocking communicator is still at it

  virtual ~NcclApi() = default;

  // ---- CUDA runtime (the calling thread's last error as the runtime keeps it)
  virtual int cudaSetDevice(int device) = 0;
  virtual int cudaStreamCreateWithFlags(Stream* stream) = 0;  // cudaStreamNonBlocking
  virtual int cudaStreamDestroy(Stream stream) = 0;
  virtual int cudaStreamQuery(Stream stream) = 0;
  virtual int cudaStreamWaitEvent(Stream stream, Event event) = 0;
  virtual int cudaEventCreateWithFlags(Event* event) = 0;  // cudaEventDisableTiming
  virtual int cudaEventRecord(Event event, Stream stream) = 0;
  virtual int cudaEventQuery(Event event) = 0;
  virtual int cudaEventDestroy(Event event) = 0;
  virtual int cudaMemcpyAsync(void* dst, const void* src, size_t bytes, Stream stream) = 0;  // device to device
  virtual int cudaGetLastError() = 0;  // and resets it to success
  virtual std::string cuda_error_text(int code) = 0;  // "cudaErrorX: description"

  // ---- NCCL (sums only)
  // The loaded libnccl's version, as NCCL_VERSION_CODE encodes it (22809 for 2.28.9).
  virtual int ncclGetVersion(int* version) = 0;
  virtual int ncclGetUniqueId(UniqueId* id) = 0;
  // With ncclConfig_t's blocking = 0: returns at once (kNcclInProgress), and
  // ncclCommGetAsyncError says when the communicator is ready.
  virtual int ncclCommInitRankConfig(Comm* comm, int nranks, const UniqueId& id, int rank) = 0;
  virtual int ncclCommGetAsyncError(Comm comm, int* state) = 0;
  virtual int ncclCommAbort(Comm comm) = 0;
  virtual int ncclCommDestroy(Comm comm) = 0;
  virtual int ncclAllReduce(const void* send, void* recv, size_t count, chainer::DType type, Comm comm,
                            Stream stream) = 0;
  virtual int ncclReduce(const void* send, void* recv, size_t count, chainer::DType type, int root, Comm comm,
                         Stream stream) = 0;
  virtual int ncclBroadcast(const void* send, void* recv, size_t count, chainer::DType type, int root, Comm comm,
                            Stream stream) = 0;
  virtual int ncclReduceScatter(const void* send, void* recv, size_t recv_count, chainer::DType type, Comm comm,
                                Stream stream) = 0;
  virtual int ncclAllGather(const void* send, void* recv, size_t send_count, chainer::DType type, Comm comm,
                            Stream stream) = 0;
  // ncclGetErrorString of CODE, then ncclGetLastError(COMM) in parentheses when it says more.
  virtual std::string nccl_error_text(int code, Comm comm) = 0;

  // ---- The device as libchainer_cuda.so runs it (core/cuda/runtime.h)
  virtual Stream compute_stream() = 0;  // the device's compute stream, where ops queue their kernels
  // BYTES of device memory from the caching allocator, for use on the compute stream.
  virtual std::shared_ptr<void> allocate(size_t bytes) = 0;
};

// The oldest libnccl the calls above work with: ncclCommInitRankConfig, ncclConfig_t and its
// blocking field (the non-blocking communicator, ncclInProgress) came in NCCL 2.14.3 (NVIDIA/nccl,
// tag v2.14.3-1: "non-blocking mode, new init function with config"; 2.13.4's nccl.h has none of
// them). A newer nccl.h's larger ncclConfig_t is fine for it: from 2.14.3 on, NCCL reads only the
// part of the struct its own version knows (it takes the smaller of the caller's size and its
// own).
constexpr int kMinNcclVersion = 21403;

// "2.28.9" from an NCCL version code: major * 10000 + minor * 100 + patch since NCCL 2.9,
// major * 1000 + minor * 100 + patch before.
std::string nccl_version_text(int code);
// Empty when API's libnccl is new enough for the calls above; otherwise why not, naming the
// loaded version, the oldest one that works and HEADER_VERSION (the nccl.h the plugin was compiled
// with). Also says so when ncclGetVersion itself fails. (Defined in nccl_backend.cpp.)
std::string nccl_version_problem(NcclApi& api, int header_version);
// Throws chainer::Error naming OP and nccl_version_problem's reason, if any.
void check_nccl_version(NcclApi& api, int header_version, const char* op);

}  // namespace chainermn::nccl
