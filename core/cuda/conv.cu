// libchainer_cudnn.so, the cuDNN plugin (core/cuda/cudnn_plugin.h): loaded by libchainer_cuda.so
// at the first convolution, linked with it for the compute stream, the caching allocator, the
// handle pool and our kernels. It exports chainer_cudnn_plugin(), the table of the functions below.
//
// 2-D convolutions through cuDNN's convolution API (cudnnConvolutionForward, BackwardData and
// BackwardFilter over tensor, filter and convolution descriptors; docs/design.md says why not
// the graph API). Groups (depthwise included) go to cudnnSetConvolutionGroupCount, dilation to
// the convolution descriptor. The algorithm is chosen once per shape (core/cuda/cudnn_algorithms.h:
// cuDNN's heuristic, deterministic algorithms only by default, timed when config::autotune);
// the workspace is a block of the caching allocator, taken for the call and given back at once
// (the allocator reuses blocks in stream order), so a captured step allocates from its graph's
// pool and nothing here calls cudaMalloc. The handle is the calling thread's for its current
// device (core/cuda/blas_handles.h), bound to the compute stream. Float16 and bfloat16 arrays are
// convolved with FP32 compute on the tensor cores (the types: conv_types in
// core/cuda/cudnn_algorithms.h); the bias is then added to the rounded output, which rounds the
// sum to the half type again (the CPU rounds once: the GPU's forward may differ by one half ulp).
//
// cuDNN makes out = (H + 2 pad - dilated kernel) / stride + 1, rounded down; cover_all's one
// more output row (or column) reads zeros past the image, so the image is then copied into a
// zero-padded one that makes the extra window whole (and the data gradient cropped back).
#include <cudnn.h>

#include <algorithm>
#include <string>

#include "core/util/config.h"
#include "core/device/cuda.h"
#include "core/cuda/blas_handles.h"
#include "core/cuda/common.cuh"
#include "core/cuda/cudnn_algorithms.h"
#include "core/cuda/cudnn_common.cuh"
#include "core/cuda/cudnn_plugin.h"
#include "core/cuda/kernels.h"
#include "core/cuda/runtime.h"

namespace chainer::cuda {

namespace {

// ---- Handles: one per (device, thread), created in relaxed capture mode (blas_handles.h) ----

cudnnHandle_t as_cudnn(BlasHandlePool::Handle handle) { return static_cast<cudnnHandle_t>(handle); }

class Cudnn final : public BlasHandlePool::Native {
 public:
  BlasHandlePool::Handle create() override {
    cudnnHandle_t handle = nullptr;
    CHAINER_CUDNN_CHECK(cudnnCreate(&handle));
    return handle;
  }
  void set_stream(BlasHandlePool::Handle handle, BlasHandlePool::Stream stream) override {
    CHAINER_CUDNN_CHECK(cudnnSetStream(as_cudnn(handle), static_cast<cudaStream_t>(stream)));
  }
  // cuDNN takes its workspace per call and its math type per convolution descriptor: the pool
  // (made with no workspace, asked for FP32 math) never calls these.
  void set_workspace(BlasHandlePool::Handle, void*, size_t) override {}
  void set_tf32(BlasHandlePool::Handle, bool) override {}
  std::shared_ptr<void> allocate_workspace(int, BlasHandlePool::Stream, size_t) override { return nullptr; }
  BlasHandlePool::CaptureMode exchange_capture_mode(BlasHandlePool::CaptureMode mode) override {
    cudaStreamCaptureMode m = mode == BlasHandlePool::CaptureMode::Relaxed       ? cudaStreamCaptureModeRelaxed
                              : mode == BlasHandlePool::CaptureMode::ThreadLocal ? cudaStreamCaptureModeThreadLocal
                                                                                 : cudaStreamCaptureModeGlobal;
    CHAINER_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&m));
    return m == cudaStreamCaptureModeRelaxed       ? BlasHandlePool::CaptureMode::Relaxed
           : m == cudaStreamCaptureModeThreadLocal ? BlasHandlePool::CaptureMode::ThreadLocal
                                                   : BlasHandlePool::CaptureMode::Global;
  }
};

cudnnHandle_t handle() {
  // Never destroyed, as the cuBLAS pool: at exit the CUDA runtime may already be gone.
  static BlasHandlePool* pool = new BlasHandlePool(std::make_unique<Cudnn>(), 0);
  return as_cudnn(pool->get(current_device_index(), compute_stream(), false));
}

ConvAlgorithmCache& algorithms() {
  static ConvAlgorithmCache* cache = new ConvAlgorithmCache();  // never destroyed: used until exit
  return *cache;
}

bool capturing() {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CHAINER_CUDA_CHECK(cudaStreamIsCapturing(compute_stream(), &status));
  return status != cudaStreamCaptureStatusNone;
}

// ---- Descriptors (TensorDescriptor: core/cuda/cudnn_common.cuh) ----

using FilterDescriptor = Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDescriptor =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;

cudnnMathType_t to_cudnn(ConvMath math) {
  switch (math) {
    case ConvMath::Fma: return CUDNN_FMA_MATH;
    case ConvMath::TensorOp: return CUDNN_TENSOR_OP_MATH;
    case ConvMath::Default: return CUDNN_DEFAULT_MATH;
  }
  return CUDNN_DEFAULT_MATH;
}

ConvMath from_cudnn(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_FMA_MATH: return ConvMath::Fma;
    case CUDNN_TENSOR_OP_MATH:
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return ConvMath::TensorOp;
    default: return ConvMath::Default;
  }
}

template <class Perf>
std::vector<ConvAlgorithm> to_algorithms(const Perf* perf, int count) {
  std::vector<ConvAlgorithm> out;
  for (int i = 0; i < count; ++i)
    out.push_back({.algo = int(perf[i].algo),
                   .supported = perf[i].status == CUDNN_STATUS_SUCCESS,
                   .workspace_bytes = perf[i].memory,
                   .deterministic = perf[i].determinism == CUDNN_DETERMINISTIC,
                   .math = from_cudnn(perf[i].mathType),
                   .time_ms = perf[i].time});
  return out;
}

std::array<int64_t, 4> dims(const Shape& s) { return {s[0], s[1], s[2], s[3]}; }

std::string shape_text(const std::array<int64_t, 4>& s) {
  return str("(", s[0], ", ", s[1], ", ", s[2], ", ", s[3], ")");
}

// The zero rows and columns to add after the image so that cuDNN's rounded-down output extents
// are G's (more only with cover_all; never fewer, the ops check the extents).
std::pair<int64_t, int64_t> extra_padding(int64_t h, int64_t w, const Conv2dGeometry& g) {
  const int64_t dkh = (g.kh - 1) * g.dy + 1, dkw = (g.kw - 1) * g.dx + 1;
  return {std::max<int64_t>(0, (g.out_h - 1) * g.sy + dkh - 2 * g.ph - h),
          std::max<int64_t>(0, (g.out_w - 1) * g.sx + dkw - 2 * g.pw - w)};
}

// X, or a copy with EXTRA zero rows and columns after the image.
Tensor pad_after(const Tensor& x, std::pair<int64_t, int64_t> extra) {
  if (extra.first == 0 && extra.second == 0) return x;
  Tensor padded = Tensor::zeros({x.size(0), x.size(1), x.size(2) + extra.first, x.size(3) + extra.second}, x.dtype(),
                                x.device());
  Tensor inner = padded.narrow(2, 0, x.size(2)).narrow(3, 0, x.size(3));
  copy(x, inner);
  return padded;
}

cudnnDataType_t to_cudnn(ConvDataType t) {
  switch (t) {
    case ConvDataType::Float: return CUDNN_DATA_FLOAT;
    case ConvDataType::Double: return CUDNN_DATA_DOUBLE;
    case ConvDataType::Half: return CUDNN_DATA_HALF;
    case ConvDataType::BFloat16: return CUDNN_DATA_BFLOAT16;
  }
  return CUDNN_DATA_FLOAT;
}

// The constants 1 and 0 as cuDNN's scaling factors for arrays of DTYPE (double for float64, float
// for the others: float32 and the half types).
struct Scale {
  float f1 = 1, f0 = 0;
  double d1 = 1, d0 = 0;
  DType dtype;
  const void* one() const { return dtype == DType::Float64 ? static_cast<const void*>(&d1) : &f1; }
  const void* zero() const { return dtype == DType::Float64 ? static_cast<const void*>(&d0) : &f0; }
};

// One convolution described to cuDNN: X (the image as cuDNN sees it, padded for cover_all), W
// and Y shapes, the geometry and the math type; then an algorithm chosen and run.
class Convolution {
 public:
  Convolution(ConvDirection direction, const Shape& x, const Shape& w, const Shape& y, const Conv2dGeometry& g,
              DType dtype, const char* what)
      : dtype_(dtype), what_(what) {
    const ConvTypes types = conv_types(what, dtype, allow_tf32());
    const cudnnDataType_t t = to_cudnn(types.data);
    x_type_ = t;
    CHAINER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, t, int(x[0]), int(x[1]), int(x[2]), int(x[3])));
    CHAINER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, t, int(y[0]), int(y[1]), int(y[2]), int(y[3])));
    CHAINER_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w_, t, CUDNN_TENSOR_NCHW, int(w[0]), int(w[1]), int(w[2]), int(w[3])));
    CHAINER_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv_, int(g.ph), int(g.pw), int(g.sy), int(g.sx), int(g.dy),
                                                        int(g.dx), CUDNN_CROSS_CORRELATION, to_cudnn(types.compute)));
    CHAINER_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv_, int(g.groups)));
    key_.device = current_device_index();
    key_.direction = direction;
    key_.dtype = int(dtype);
    key_.x = dims(x), key_.w = dims(w), key_.y = dims(y);
    key_.geometry = {g.kh, g.kw, g.sy, g.sx, g.ph, g.pw, g.dy, g.dx, g.groups};
    key_.math = types.math;
    key_.deterministic = config::cudnn_deterministic();
    // The heuristic and the benchmark see the math type asked for; the chosen one is set below.
    CHAINER_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, to_cudnn(key_.math)));
  }

  // Chooses the algorithm (BENCHMARK times the candidates with the call's arrays: it may write
  // the output) and sets its math type and workspace size.
  void choose(const std::function<std::vector<ConvAlgorithm>()>& heuristic,
              const std::function<std::vector<ConvAlgorithm>(void* workspace, size_t bytes)>& benchmark) {
    ConvAlgorithmCache& cache = algorithms();
    const ConvAlgorithmCache::Proposals proposals{
        .heuristic =
            [&] {
              RelaxedCapture relaxed;
              return heuristic();
            },
        .benchmark =
            [&](size_t limit) {
              std::shared_ptr<void> workspace = chainer_cuda_runtime()->allocate(key_.device, limit);
              return benchmark(workspace.get(), limit);
            }};
    const ConvAlgorithmCache::Mode mode{.benchmark = config::autotune(), .capturing = capturing()};
    const std::string what = str(what_, " on cuDNN (x ", shape_text(key_.x), ", W ", shape_text(key_.w), ", y ",
                                 shape_text(key_.y), ", ", dtype_name(dtype_), ")");
    chosen_ = cache.choose(key_, mode, proposals, what);
    CHAINER_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, to_cudnn(chosen_.math)));
  }

  // A block of BYTES for the call (none for 0), given back when the owner is dropped.
  std::shared_ptr<void> workspace(size_t bytes) const {
    return bytes == 0 ? nullptr : chainer_cuda_runtime()->allocate(key_.device, bytes);
  }

  DType dtype_;
  const char* what_;
  cudnnDataType_t x_type_ = CUDNN_DATA_FLOAT;  // the arrays' type
  TensorDescriptor x_, y_;
  FilterDescriptor w_;
  ConvDescriptor conv_;
  ConvKey key_;
  ConvAlgorithm chosen_;
  Scale scale_{.dtype = dtype_};
};

// Y = BIAS (or 0) for a convolution whose every window reads only zeros (an empty image or
// empty filters).
void fill_with_bias(const Tensor& b, Tensor& y) {
  if (!b.defined()) {
    fill(y, 0.0);
    return;
  }
  broadcast_copy(b.reshape({1, y.size(1), 1, 1}), y);
}

}  // namespace

// The table's entries: the kernel table's convolutions (core/ops/kernels.h), forwarded to by
// libchainer_cuda.so (core/cuda/runtime.cu).
namespace cudnn {

void convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y) {
  if (y.numel() == 0) return;
  if (x.numel() == 0 || W.numel() == 0) return fill_with_bias(b, y);
  const Tensor xs = pad_after(x, extra_padding(x.size(2), x.size(3), g));
  Convolution c(ConvDirection::Forward, xs.shape(), W.shape(), y.shape(), g, x.dtype(), "convolution_2d");
  cudnnHandle_t h = handle();
  c.choose(
      [&] {
        int count = 0, returned = 0;
        CHAINER_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count));
        std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(size_t(std::max(count, 1)));
        CHAINER_CUDNN_CHECK(
            cudnnGetConvolutionForwardAlgorithm_v7(h, c.x_, c.w_, c.conv_, c.y_, count, &returned, perf.data()));
        return to_algorithms(perf.data(), returned);
      },
      [&](void* workspace, size_t bytes) {
        int count = 0, returned = 0;
        CHAINER_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count));
        std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(size_t(std::max(count, 1)));
        CHAINER_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(h, c.x_, xs.raw_data(), c.w_, W.raw_data(), c.conv_,
                                                                   c.y_, y.raw_data(), count, &returned, perf.data(),
                                                                   workspace, bytes));
        return to_algorithms(perf.data(), returned);
      });
  const auto algo = cudnnConvolutionFwdAlgo_t(c.chosen_.algo);
  size_t bytes = 0;
  CHAINER_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, c.x_, c.w_, c.conv_, c.y_, algo, &bytes));
  const std::shared_ptr<void> workspace = c.workspace(bytes);
  CHAINER_CUDNN_CHECK(cudnnConvolutionForward(h, c.scale_.one(), c.x_, xs.raw_data(), c.w_, W.raw_data(), c.conv_,
                                              algo, workspace.get(), bytes, c.scale_.zero(), c.y_, y.raw_data()));
  count_library_launch();
  if (b.defined() && is_half(y.dtype())) {
    // Our add kernel (float arithmetic, rounded once): cuDNN documents cudnnAddTensor for half
    // but not for bfloat16.
    binary(BinaryOp::Add, y, b.reshape({1, y.size(1), 1, 1}), y);
  } else if (b.defined()) {
    TensorDescriptor bias;
    CHAINER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW, c.x_type_, 1, int(y.size(1)), 1, 1));
    CHAINER_CUDNN_CHECK(cudnnAddTensor(h, c.scale_.one(), bias, b.raw_data(), c.scale_.one(), c.y_, y.raw_data()));
    count_library_launch();
  }
}

void convolution_2d_grad_data(const Tensor& gy, const Tensor& W, const Conv2dGeometry& g, Tensor& gx) {
  if (gx.numel() == 0) return;
  if (gy.numel() == 0 || W.numel() == 0) return fill(gx, 0.0);
  const auto extra = extra_padding(gx.size(2), gx.size(3), g);
  Tensor gxs = extra.first == 0 && extra.second == 0
                   ? gx
                   : Tensor::empty({gx.size(0), gx.size(1), gx.size(2) + extra.first, gx.size(3) + extra.second},
                                   gx.dtype(), gx.device());
  Convolution c(ConvDirection::BackwardData, gxs.shape(), W.shape(), gy.shape(), g, gy.dtype(),
                "convolution_2d_grad_data");
  cudnnHandle_t h = handle();
  c.choose(
      [&] {
        int count = 0, returned = 0;
        CHAINER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count));
        std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(size_t(std::max(count, 1)));
        CHAINER_CUDNN_CHECK(
            cudnnGetConvolutionBackwardDataAlgorithm_v7(h, c.w_, c.y_, c.conv_, c.x_, count, &returned, perf.data()));
        return to_algorithms(perf.data(), returned);
      },
      [&](void* workspace, size_t bytes) {
        int count = 0, returned = 0;
        CHAINER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count));
        std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(size_t(std::max(count, 1)));
        CHAINER_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(h, c.w_, W.raw_data(), c.y_, gy.raw_data(),
                                                                        c.conv_, c.x_, gxs.raw_data(), count,
                                                                        &returned, perf.data(), workspace, bytes));
        return to_algorithms(perf.data(), returned);
      });
  const auto algo = cudnnConvolutionBwdDataAlgo_t(c.chosen_.algo);
  size_t bytes = 0;
  CHAINER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(h, c.w_, c.y_, c.conv_, c.x_, algo, &bytes));
  const std::shared_ptr<void> workspace = c.workspace(bytes);
  CHAINER_CUDNN_CHECK(cudnnConvolutionBackwardData(h, c.scale_.one(), c.w_, W.raw_data(), c.y_, gy.raw_data(), c.conv_,
                                                   algo, workspace.get(), bytes, c.scale_.zero(), c.x_,
                                                   gxs.raw_data()));
  count_library_launch();
  if (gxs.raw_data() != gx.raw_data()) copy(gxs.narrow(2, 0, gx.size(2)).narrow(3, 0, gx.size(3)), gx);
}

void convolution_2d_grad_filter(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW) {
  if (gW.numel() == 0) return;
  if (x.numel() == 0 || gy.numel() == 0) return fill(gW, 0.0);
  const Tensor xs = pad_after(x, extra_padding(x.size(2), x.size(3), g));
  Convolution c(ConvDirection::BackwardFilter, xs.shape(), gW.shape(), gy.shape(), g, x.dtype(),
                "convolution_2d_grad_filter");
  cudnnHandle_t h = handle();
  c.choose(
      [&] {
        int count = 0, returned = 0;
        CHAINER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count));
        std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(size_t(std::max(count, 1)));
        CHAINER_CUDNN_CHECK(
            cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, c.x_, c.y_, c.conv_, c.w_, count, &returned, perf.data()));
        return to_algorithms(perf.data(), returned);
      },
      [&](void* workspace, size_t bytes) {
        int count = 0, returned = 0;
        CHAINER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count));
        std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(size_t(std::max(count, 1)));
        CHAINER_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(h, c.x_, xs.raw_data(), c.y_, gy.raw_data(),
                                                                          c.conv_, c.w_, gW.raw_data(), count,
                                                                          &returned, perf.data(), workspace, bytes));
        return to_algorithms(perf.data(), returned);
      });
  const auto algo = cudnnConvolutionBwdFilterAlgo_t(c.chosen_.algo);
  size_t bytes = 0;
  CHAINER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, c.x_, c.y_, c.conv_, c.w_, algo, &bytes));
  const std::shared_ptr<void> workspace = c.workspace(bytes);
  CHAINER_CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, c.scale_.one(), c.x_, xs.raw_data(), c.y_, gy.raw_data(),
                                                     c.conv_, algo, workspace.get(), bytes, c.scale_.zero(), c.w_,
                                                     gW.raw_data()));
  count_library_launch();
}

void prepare_handle() { handle(); }

size_t library_version() { return cudnnGetVersion(); }

cudnnHandle_t handle() { return cuda::handle(); }

}  // namespace cudnn

}  // namespace chainer::cuda

extern "C" const chainer::cuda::CudnnPlugin* chainer_cudnn_plugin() {
  namespace cuda = chainer::cuda;
  static const cuda::CudnnPlugin plugin{.interface = cuda::kCudnnPluginInterface,
                                        .header_version = CUDNN_VERSION,
                                        .library_version = cuda::cudnn::library_version,
                                        .convolution_2d = cuda::cudnn::convolution_2d,
                                        .convolution_2d_grad_data = cuda::cudnn::convolution_2d_grad_data,
                                        .convolution_2d_grad_filter = cuda::cudnn::convolution_2d_grad_filter,
                                        .rnn_forward = cuda::cudnn::rnn_forward,
                                        .rnn_backward = cuda::cudnn::rnn_backward,
                                        .prepare_handle = cuda::cudnn::prepare_handle};
  return &plugin;
}
