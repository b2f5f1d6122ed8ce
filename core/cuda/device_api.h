// The CUDA runtime calls that the plugin's runtime logic (core/cuda/device_runtime.h) makes, as
// an interface: core/cuda/runtime.cu forwards each to the CUDA function of the same name
// (event_record to cudaEventRecord, ...), and tests/core/cuda/test_cuda_runtime.cpp answers them with a
// fake device (two devices, events that are not ready, a free that fails, a runtime that has
// shut down), so the logic runs and is tested on a machine without a GPU. An interface rather
// than a fake libcudart loaded by the tests: the logic is then plain C++ compiled into the
// test, a fake needs only these calls, and no loader tricks decide which library is used.
//
// Each call returns CUDA's status code (cudaError_t's value; 0 is success) and, as CUDA does,
// leaves a failure as the thread's last error until get_last_error() clears it. No CUDA type
// appears: streams, events and graphs are opaque pointers.
#pragma once
#include <cstddef>

#include "core/device/cuda.h"

namespace chainer::cuda {

// The codes the runtime logic tells apart: cudaError_t's values (runtime.cu checks they agree).
enum DeviceStatus : int {
  kDeviceSuccess = 0,
  kErrorMemoryAllocation = 2,
  kErrorCudartUnloading = 4,       // the CUDA runtime has shut down (the process is exiting)
  kErrorInsufficientDriver = 35,   // the installed driver is older than the runtime (or absent)
  kErrorNoDevice = 100,
  kErrorInvalidResourceHandle = 400,  // a stream or event of another device, say
  kErrorNotReady = 600,               // event_query: the work before the event is still running
  // What a stream capture refused (cudaErrorStreamCapture*, cudaErrorCapturedEvent): the capture
  // is over and the device stays usable, so the step can run eagerly instead.
  kErrorStreamCaptureUnsupported = 900,
  kErrorStreamCaptureInvalidated = 901,
  kErrorStreamCaptureMerge = 902,
  kErrorStreamCaptureUnmatched = 903,
  kErrorStreamCaptureUnjoined = 904,
  kErrorStreamCaptureIsolation = 905,
  kErrorStreamCaptureImplicit = 906,
  kErrorCapturedEvent = 907,
  kErrorStreamCaptureWrongThread = 908,
  kFirstStreamCaptureError = kErrorStreamCaptureUnsupported,
  kLastStreamCaptureError = kErrorStreamCaptureWrongThread,
};

// Whether STATUS is one of the capture's refusals above.
constexpr bool is_stream_capture_error(int status) {
  return status >= kFirstStreamCaptureError && status <= kLastStreamCaptureError;
}

class DeviceApi {
 public:
  using Stream = void*;     // cudaStream_t
  using Event = void*;      // cudaEvent_t
  using Graph = void*;      // cudaGraph_t
  using GraphExec = void*;  // cudaGraphExec_t
  // cudaStreamCaptureMode's values.
  enum CaptureMode : int { kCaptureGlobal = 0, kCaptureThreadLocal = 1, kCaptureRelaxed = 2 };
  enum class Copy { host_to_device, device_to_host, device_to_device };

  virtual ~DeviceApi() = default;

  // Devices, versions, errors.
  virtual int get_device_count(int* count) = 0;
  virtual int driver_get_version(int* version) = 0;   // 0 where no driver is installed
  virtual int runtime_get_version(int* version) = 0;
  virtual int get_device(int* device) = 0;  // the calling thread's current device
  virtual int set_device(int device) = 0;
  virtual int get_device_properties(int device, DeviceProperties* properties) = 0;
  virtual int get_last_error() = 0;  // returns the thread's last error and clears it
  virtual const char* get_error_name(int status) = 0;
  virtual const char* get_error_string(int status) = 0;

  // Memory. host_alloc: pinned host memory.
  virtual int malloc(void** ptr, size_t bytes) = 0;
  virtual int free(void* ptr) = 0;
  virtual int host_alloc(void** ptr, size_t bytes) = 0;
  virtual int host_free(void* ptr) = 0;  // PTR from host_alloc
  virtual int memset_async(void* ptr, int value, size_t bytes, Stream stream) = 0;
  virtual int memcpy_async(void* dst, const void* src, size_t bytes, Copy kind, Stream stream) = 0;
  virtual int memcpy_peer_async(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
                                Stream stream) = 0;

  // Streams and events, made on the current device. stream_create: a non-blocking stream;
  // event_create: an event without timing. An event must be recorded on a stream of its own device.
  virtual int stream_create(Stream* stream) = 0;
  virtual int stream_synchronize(Stream stream) = 0;
  virtual int stream_wait_event(Stream stream, Event event) = 0;
  virtual int event_create(Event* event) = 0;
  virtual int event_record(Event event, Stream stream) = 0;
  virtual int event_query(Event event) = 0;  // kErrorNotReady while the work before it runs
  virtual int event_synchronize(Event event) = 0;
  virtual int event_destroy(Event event) = 0;

  // Graph capture (thread-local mode) and replay.
  virtual int thread_exchange_stream_capture_mode(CaptureMode* mode) = 0;
  virtual int stream_begin_capture(Stream stream) = 0;
  virtual int stream_end_capture(Stream stream, Graph* graph) = 0;
  virtual int graph_instantiate(GraphExec* exec, Graph graph) = 0;
  virtual int graph_destroy(Graph graph) = 0;
  virtual int graph_exec_destroy(GraphExec exec) = 0;
  virtual int graph_launch(GraphExec exec, Stream stream) = 0;
};

}  // namespace chainer::cuda
