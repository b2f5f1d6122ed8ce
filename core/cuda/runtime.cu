// The CUDA plugin's runtime: the real CUDA calls behind core/cuda/device_api.h, the kernel table,
// and the one DeviceRuntime (core/cuda/device_runtime.h, where the logic is) that
// chainer_cuda_runtime() returns and the kernel files reach through core/cuda/common.cuh. The
// table's convolutions load the cuDNN plugin at their first call (core/cuda/cudnn_plugin.h).
#include <cuda_runtime.h>
#include <cudnn_version.h>  // CUDNN_MAJOR only: the library the cuDNN plugin needs, for messages

#include "core/cuda/blas_handles.h"
#include "core/cuda/common.cuh"
#include "core/cuda/cudnn_plugin.h"
#include "core/cuda/device_api.h"
#include "core/cuda/device_runtime.h"
#include "core/cuda/kernels.h"
#include "core/cuda/runtime.h"

namespace chainer::cuda {

static_assert(int(cudaSuccess) == kDeviceSuccess && int(cudaErrorMemoryAllocation) == kErrorMemoryAllocation &&
              int(cudaErrorCudartUnloading) == kErrorCudartUnloading &&
              int(cudaErrorInsufficientDriver) == kErrorInsufficientDriver && int(cudaErrorNoDevice) == kErrorNoDevice &&
              int(cudaErrorInvalidResourceHandle) == kErrorInvalidResourceHandle &&
              int(cudaErrorNotReady) == kErrorNotReady &&
              int(cudaErrorStreamCaptureUnsupported) == kErrorStreamCaptureUnsupported &&
              int(cudaErrorStreamCaptureInvalidated) == kErrorStreamCaptureInvalidated &&
              int(cudaErrorStreamCaptureMerge) == kErrorStreamCaptureMerge &&
              int(cudaErrorStreamCaptureUnmatched) == kErrorStreamCaptureUnmatched &&
              int(cudaErrorStreamCaptureUnjoined) == kErrorStreamCaptureUnjoined &&
              int(cudaErrorStreamCaptureIsolation) == kErrorStreamCaptureIsolation &&
              int(cudaErrorStreamCaptureImplicit) == kErrorStreamCaptureImplicit &&
              int(cudaErrorCapturedEvent) == kErrorCapturedEvent &&
              int(cudaErrorStreamCaptureWrongThread) == kErrorStreamCaptureWrongThread);
// The capture's refusals are that range and no more: the next code, cudaErrorTimeout, is not one.
static_assert(kFirstStreamCaptureError == int(cudaErrorStreamCaptureUnsupported) &&
              kLastStreamCaptureError == int(cudaErrorStreamCaptureWrongThread) &&
              int(cudaErrorTimeout) == kLastStreamCaptureError + 1);
static_assert(int(cudaStreamCaptureModeGlobal) == DeviceApi::kCaptureGlobal &&
              int(cudaStreamCaptureModeThreadLocal) == DeviceApi::kCaptureThreadLocal &&
              int(cudaStreamCaptureModeRelaxed) == DeviceApi::kCaptureRelaxed);

namespace {

cudaStream_t as_stream(DeviceApi::Stream s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(DeviceApi::Event e) { return static_cast<cudaEvent_t>(e); }

// Each call is the CUDA function of the same name.
class CudaApi final : public DeviceApi {
 public:
  int get_device_count(int* count) override { return cudaGetDeviceCount(count); }
  int driver_get_version(int* version) override { return cudaDriverGetVersion(version); }
  int runtime_get_version(int* version) override { return cudaRuntimeGetVersion(version); }
  int get_device(int* device) override { return cudaGetDevice(device); }
  int set_device(int device) override { return cudaSetDevice(device); }
  int get_device_properties(int device, DeviceProperties* p) override {
    cudaDeviceProp prop{};
    const cudaError_t status = cudaGetDeviceProperties(&prop, device);
    if (status != cudaSuccess) return status;
    p->name = prop.name;
    p->major = prop.major;
    p->minor = prop.minor;
    p->total_memory_bytes = prop.totalGlobalMem;
    p->multiprocessors = prop.multiProcessorCount;
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device) == cudaSuccess) p->pci_bus_id = bus;
    else cudaGetLastError();  // the bus id is optional
    return cudaSuccess;
  }
  int get_last_error() override { return cudaGetLastError(); }
  const char* get_error_name(int status) override { return cudaGetErrorName(cudaError_t(status)); }
  const char* get_error_string(int status) override { return cudaGetErrorString(cudaError_t(status)); }

  int malloc(void** ptr, size_t bytes) override { return cudaMalloc(ptr, bytes); }
  int free(void* ptr) override { return cudaFree(ptr); }
  int host_alloc(void** ptr, size_t bytes) override { return cudaHostAlloc(ptr, bytes, cudaHostAllocDefault); }
  int host_free(void* ptr) override { return cudaFreeHost(ptr); }
  int memset_async(void* ptr, int value, size_t bytes, Stream stream) override {
    return cudaMemsetAsync(ptr, value, bytes, as_stream(stream));
  }
  int memcpy_async(void* dst, const void* src, size_t bytes, Copy kind, Stream stream) override {
    const cudaMemcpyKind k = kind == Copy::host_to_device   ? cudaMemcpyHostToDevice
                             : kind == Copy::device_to_host ? cudaMemcpyDeviceToHost
                                                            : cudaMemcpyDeviceToDevice;
    return cudaMemcpyAsync(dst, src, bytes, k, as_stream(stream));
  }
  int memcpy_peer_async(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
                        Stream stream) override {
    return cudaMemcpyPeerAsync(dst, dst_device, src, src_device, bytes, as_stream(stream));
  }

  int stream_create(Stream* stream) override {
    return cudaStreamCreateWithFlags(reinterpret_cast<cudaStream_t*>(stream), cudaStreamNonBlocking);
  }
  int stream_synchronize(Stream stream) override { return cudaStreamSynchronize(as_stream(stream)); }
  int stream_wait_event(Stream stream, Event event) override {
    return cudaStreamWaitEvent(as_stream(stream), as_event(event), 0);
  }
  int event_create(Event* event) override {
    return cudaEventCreateWithFlags(reinterpret_cast<cudaEvent_t*>(event), cudaEventDisableTiming);
  }
  int event_record(Event event, Stream stream) override { return cudaEventRecord(as_event(event), as_stream(stream)); }
  int event_query(Event event) override { return cudaEventQuery(as_event(event)); }
  int event_synchronize(Event event) override { return cudaEventSynchronize(as_event(event)); }
  int event_destroy(Event event) override { return cudaEventDestroy(as_event(event)); }

  int thread_exchange_stream_capture_mode(CaptureMode* mode) override {
    auto m = cudaStreamCaptureMode(*mode);
    const cudaError_t status = cudaThreadExchangeStreamCaptureMode(&m);
    *mode = CaptureMode(m);
    return status;
  }
  int stream_begin_capture(Stream stream) override {
    return cudaStreamBeginCapture(as_stream(stream), cudaStreamCaptureModeThreadLocal);
  }
  int stream_end_capture(Stream stream, Graph* graph) override {
    return cudaStreamEndCapture(as_stream(stream), reinterpret_cast<cudaGraph_t*>(graph));
  }
  int graph_instantiate(GraphExec* exec, Graph graph) override {
    return cudaGraphInstantiate(reinterpret_cast<cudaGraphExec_t*>(exec), static_cast<cudaGraph_t>(graph), 0);
  }
  int graph_destroy(Graph graph) override { return cudaGraphDestroy(static_cast<cudaGraph_t>(graph)); }
  int graph_exec_destroy(GraphExec exec) override { return cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec)); }
  int graph_launch(GraphExec exec, Stream stream) override {
    return cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), as_stream(stream));
  }
};

DeviceApi& cuda_api() {
  static CudaApi* api = new CudaApi;  // never destroyed, as the runtime that uses it
  return *api;
}

// The cuDNN plugin, beside this library, opened at the first convolution. Never destroyed: the
// convolutions may run during static destruction.
CudnnLoader& cudnn_loader() {
  static CudnnLoader* loader = new CudnnLoader(str("libcudnn.so.", CUDNN_MAJOR), [](std::string& why_not) {
    return open_cudnn_plugin(reinterpret_cast<const void*>(&chainer_cuda_runtime), "libchainer_cudnn.so", why_not);
  });
  return *loader;
}

const CudnnPlugin& cudnn(const char* op) { return cudnn_loader().get(op, current_device_index()); }

// Before a graph capture begins, on the capturing thread with DEVICE current: the thread's
// library handles for the device are made now. cublasCreate and cudnnCreate make CUDA calls that
// a capture forbids (the pools also switch to relaxed capture mode for them, but a handle made
// inside the capture would then take its cuBLAS workspace from the graph's private pool, tied to
// the graph's life). cuDNN is prepared only when some convolution has loaded it: a step without
// convolutions must not need libcudnn.
void prepare_capture(int device) {
  CHAINER_ASSERT(current_device_index() == device, "prepare_capture: cuda:", device, " is not the current device");
  prepare_blas_handle();
  if (const CudnnPlugin* p = cudnn_loader().loaded()) p->prepare_handle();
}

}  // namespace

// The kernel table's convolutions: the cuDNN plugin's, loaded once.
void convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y) {
  cudnn("convolution_2d").convolution_2d(x, W, b, g, y);
}
void convolution_2d_grad_data(const Tensor& gy, const Tensor& W, const Conv2dGeometry& g, Tensor& gx) {
  cudnn("convolution_2d_grad_data").convolution_2d_grad_data(gy, W, g, gx);
}
void convolution_2d_grad_filter(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW) {
  cudnn("convolution_2d_grad_filter").convolution_2d_grad_filter(x, gy, g, gW);
}

// The kernel table's recurrent stacks: the cuDNN plugin's too. Without cuDNN, rnn_available says
// so and nn/functions/n_step_rnn.cpp composes the stacks of the kernels of this library.
bool rnn_available() { return cudnn_loader().try_get() != nullptr; }
void rnn_forward(const RnnGeometry& g, const Tensor& x, const Tensor& hx, const Tensor& cx,
                 const std::vector<Tensor>& weights, bool for_backward, Tensor& y, Tensor& hy, Tensor& cy,
                 Tensor& reserve) {
  cudnn("rnn_forward").rnn_forward(g, x, hx, cx, weights, for_backward, y, hy, cy, reserve);
}
void rnn_backward(const RnnGeometry& g, const Tensor& x, const Tensor& hx, const Tensor& cx,
                  const std::vector<Tensor>& weights, const Tensor& y, Tensor& reserve, const Tensor& gy,
                  const Tensor& ghy, const Tensor& gcy, Tensor& gx, Tensor& ghx, Tensor& gcx,
                  std::vector<Tensor>& gweights) {
  cudnn("rnn_backward").rnn_backward(g, x, hx, cx, weights, y, reserve, gy, ghy, gcy, gx, ghx, gcx, gweights);
}

namespace {

const Kernels kernel_table{
#define CHAINER_KERNEL(RETURN, NAME, PARAMETERS) .NAME = cuda::NAME,
#include "core/ops/kernel_list.def"
};

// The plugin's runtime. Never destroyed: tensors may outlive static destruction, and the device
// state must not be torn down after the CUDA runtime has shut down (device_runtime.h).
DeviceRuntime& the_runtime() {
  static DeviceRuntime* runtime = new DeviceRuntime(cuda_api(), kernel_table, {}, prepare_capture);
  return *runtime;
}

}  // namespace

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  throw_device_error(cuda_api(), int(status), call, file, line);
}

cudaStream_t compute_stream() { return as_stream(the_runtime().compute_stream()); }
void count_launch() { the_runtime().count_launch(); }
int current_device_index() { return the_runtime().current_device(); }
DeviceErrorRecord* device_error_record() { return the_runtime().device_error_record(); }
std::shared_ptr<void> upload(const void* src, size_t bytes) { return the_runtime().upload(src, bytes); }
const void* step_scalars(size_t bytes, std::function<void(void* host)> fill) {
  return the_runtime().step_scalars(bytes, std::move(fill));
}

}  // namespace chainer::cuda

extern "C" chainer::cuda::Runtime* chainer_cuda_runtime() { return &chainer::cuda::the_runtime(); }
// The kernel list this plugin's table was compiled from (core/ops/kernels.h, kKernelListHash).
extern "C" uint64_t chainer_cuda_kernel_list() { return chainer::kKernelListHash; }
