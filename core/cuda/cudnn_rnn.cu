// The recurrent stacks of the cuDNN plugin: the library kernels rnn_forward and rnn_backward
// (core/ops/kernel_list.def) through cuDNN's RNN API (cudnnRNNForward, cudnnRNNBackwardData_v8,
// cudnnRNNBackwardWeights_v8), as PyTorch's and Chainer's LSTMs run on CUDA.
//
// The sequences are packed (CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED): time-major, longest first,
// which is transpose_sequence's steps joined, so the inputs and outputs are used in place. cuDNN
// keeps the weights in one buffer of its own layout (the "weight space"): Chainer's matrices and
// biases are copied in by name (cuDNN's linear layer ids are Chainer's indices: LSTM i, f, a, o;
// GRU r, z, n; RNN input, recurrent; double biases are Chainer's b0 .. bn-1; pseudo-layer k is
// Chainer's layer * directions + direction), and the gradients copied out the same way, so the
// links' parameters and snapshots are the same on every device. The weight space travels in the
// reserve to the backward, which reads the weights from it again.
//
// Capture-safe, as the convolutions: the sequence lengths reach the device through upload (a
// stream-ordered copy), workspace, reserve and weight space are blocks of the caching allocator,
// and the v8 calls take the lengths on the device so that they never synchronize. Math: FMA for
// float32 (no TF32) unless cuda::allow_tf32, as the matrix products.
#include <cudnn.h>

#include <memory>
#include <tuple>
#include <vector>

#include "core/cuda/cudnn_common.cuh"
#include "core/cuda/cudnn_plugin.h"
#include "core/cuda/runtime.h"
#include "core/device/cuda.h"

namespace chainer::cuda::cudnn {

namespace {

using RnnDescriptor = Descriptor<cudnnRNNDescriptor_t, cudnnCreateRNNDescriptor, cudnnDestroyRNNDescriptor>;
using RnnDataDescriptor =
    Descriptor<cudnnRNNDataDescriptor_t, cudnnCreateRNNDataDescriptor, cudnnDestroyRNNDataDescriptor>;
using DropoutDescriptor =
    Descriptor<cudnnDropoutDescriptor_t, cudnnCreateDropoutDescriptor, cudnnDestroyDropoutDescriptor>;

cudnnRNNMode_t mode_of(RnnCell cell) {
  switch (cell) {
    case RnnCell::Lstm: return CUDNN_LSTM;
    case RnnCell::Gru: return CUDNN_GRU;
    case RnnCell::Tanh: return CUDNN_RNN_TANH;
    case RnnCell::Relu: return CUDNN_RNN_RELU;
  }
  return CUDNN_LSTM;
}

// The calling thread's dropout descriptor of ratio 0 for its current device: the RNN descriptor
// needs one, and dropout between layers runs outside (nn/functions/n_step_rnn.cpp uses these
// kernels only when no dropout applies). Made once: setting one up costs more than the call.
cudnnDropoutDescriptor_t no_dropout() {
  thread_local std::vector<std::unique_ptr<DropoutDescriptor>> per_device;
  const int device = current_device_index();
  if (per_device.size() <= size_t(device)) per_device.resize(size_t(device) + 1);
  if (!per_device[size_t(device)]) {
    auto d = std::make_unique<DropoutDescriptor>();
    CHAINER_CUDNN_CHECK(cudnnSetDropoutDescriptor(*d, handle(), 0.0f, nullptr, 0, 0));
    per_device[size_t(device)] = std::move(d);
  }
  return *per_device[size_t(device)];
}

size_t align(size_t bytes) { return (bytes + 255) / 256 * 256; }

// One call's descriptors and sizes, made on the host (microseconds) for geometry G.
struct Stack {
  RnnDescriptor rnn;
  RnnDataDescriptor x, y;
  TensorDescriptor h;  // hx, hy, cx, cy and their gradients: (layers * directions, B, U)
  size_t weight_bytes = 0, work_bytes = 0, reserve_bytes = 0;
  std::shared_ptr<void> lengths;  // the sequence lengths on the device (int32)
  int64_t per_layer = 0, count = 0;

  Stack(const RnnGeometry& g, DType dtype, cudnnForwardMode_t mode) {
    RelaxedCapture relaxed;  // host queries only, but nothing promises the capture mode allows them
    cudnnHandle_t hd = handle();
    const cudnnDataType_t t = dtype == DType::Float32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
    // float64 allows the default math only; float32 computes in FMA unless TF32 is allowed.
    const cudnnMathType_t math = dtype == DType::Float32 && !allow_tf32() ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
    CHAINER_CUDNN_CHECK(cudnnSetRNNDescriptor_v8(
        rnn, CUDNN_RNN_ALGO_STANDARD, mode_of(g.cell), CUDNN_RNN_DOUBLE_BIAS,
        g.directions == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, t, t, math,
        int32_t(g.in_size), int32_t(g.units), int32_t(g.units), int32_t(g.layers), no_dropout(),
        CUDNN_RNN_PADDED_IO_DISABLED));
    std::vector<int32_t> lens = g.lengths;  // cuDNN's argument is not const
    const int batch = int(lens.size());
    CHAINER_CUDNN_CHECK(cudnnSetRNNDataDescriptor(x, t, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, lens[0], batch,
                                                  int(g.in_size), lens.data(), nullptr));
    CHAINER_CUDNN_CHECK(cudnnSetRNNDataDescriptor(y, t, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, lens[0], batch,
                                                  int(g.units * g.directions), lens.data(), nullptr));
    count = g.layers * g.directions;
    per_layer = g.weights_per_layer();
    const int dims[3] = {int(count), batch, int(g.units)}, strides[3] = {batch * int(g.units), int(g.units), 1};
    CHAINER_CUDNN_CHECK(cudnnSetTensorNdDescriptor(h, t, 3, dims, strides));
    CHAINER_CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(hd, rnn, &weight_bytes));
    CHAINER_CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(hd, rnn, mode, x, &work_bytes, &reserve_bytes));
    lengths = upload(g.lengths.data(), g.lengths.size() * sizeof(int32_t));
  }

  std::shared_ptr<void> allocate(size_t bytes) const {
    return bytes == 0 ? nullptr : chainer_cuda_runtime()->allocate(current_device_index(), bytes);
  }

  // Copies every weight and bias of WEIGHTS (Chainer's order) into the weight space SPACE, or
  // when OUT the other way (the gradients from the gradient space).
  void copy_weights(void* space, std::vector<Tensor>& weights, bool out) const {
    cudnnHandle_t hd = handle();
    TensorDescriptor m, b;
    for (int64_t k = 0; k < count; ++k) {
      for (int64_t j = 0; j < per_layer; ++j) {
        void* m_addr = nullptr;
        void* b_addr = nullptr;
        CHAINER_CUDNN_CHECK(
            cudnnGetRNNWeightParams(hd, rnn, int32_t(k), weight_bytes, space, int32_t(j), m, &m_addr, b, &b_addr));
        Tensor& w = weights[size_t(k * 2 * per_layer + j)];
        Tensor& bias = weights[size_t(k * 2 * per_layer + per_layer + j)];
        for (auto [addr, desc, tensor] : {std::tuple{m_addr, (cudnnTensorDescriptor_t)m, &w},
                                          std::tuple{b_addr, (cudnnTensorDescriptor_t)b, &bias}}) {
          cudnnDataType_t type;
          int nd = 0, dims[8], strides[8];
          CHAINER_CUDNN_CHECK(cudnnGetTensorNdDescriptor(desc, 8, &type, &nd, dims, strides));
          int64_t elements = 1;
          for (int i = 0; i < nd; ++i) elements *= dims[i];
          CHAINER_ASSERT(addr && elements == tensor->numel(), "rnn: cuDNN's parameter ", j, " of pseudo-layer ", k,
                         " holds ", elements, " elements where ", tensor->numel(), " were expected");
          void* ours = tensor->raw_data();
          CHAINER_CUDA_CHECK(cudaMemcpyAsync(out ? ours : addr, out ? addr : ours, tensor->nbytes(),
                                             cudaMemcpyDeviceToDevice, compute_stream()));
        }
      }
    }
  }
};

}  // namespace

void rnn_forward(const RnnGeometry& g, const Tensor& x, const Tensor& hx, const Tensor& cx,
                 const std::vector<Tensor>& weights, bool for_backward, Tensor& y, Tensor& hy, Tensor& cy,
                 Tensor& reserve) {
  const cudnnForwardMode_t mode = for_backward ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE;
  const Stack s(g, x.dtype(), mode);
  const bool lstm = g.cell == RnnCell::Lstm;
  // Training: the reserve holds cuDNN's reserve, then the weight space, for the backward.
  std::shared_ptr<void> space_owner;
  void* space = nullptr;
  void* reserved = nullptr;
  if (for_backward) {
    reserve = Tensor::empty({int64_t(align(s.reserve_bytes) + s.weight_bytes)}, DType::UInt8, x.device());
    reserved = reserve.raw_data();
    space = static_cast<char*>(reserved) + align(s.reserve_bytes);
  } else {
    space_owner = s.allocate(s.weight_bytes);
    space = space_owner.get();
  }
  std::vector<Tensor> ws = weights;  // handles: the copies read them
  s.copy_weights(space, ws, false);
  const std::shared_ptr<void> work = s.allocate(s.work_bytes);
  CHAINER_CUDNN_CHECK(cudnnRNNForward(handle(), s.rnn, mode, static_cast<const int32_t*>(s.lengths.get()), s.x,
                                      x.raw_data(), s.y, y.raw_data(), s.h, hx.raw_data(), hy.raw_data(), s.h,
                                      lstm ? cx.raw_data() : nullptr, lstm ? cy.raw_data() : nullptr,
                                      s.weight_bytes, space, s.work_bytes, work.get(), for_backward ? s.reserve_bytes : 0,
                                      reserved));
}

void rnn_backward(const RnnGeometry& g, const Tensor& x, const Tensor& hx, const Tensor& cx,
                  const std::vector<Tensor>& weights, const Tensor& y, Tensor& reserve, const Tensor& gy,
                  const Tensor& ghy, const Tensor& gcy, Tensor& gx, Tensor& ghx, Tensor& gcx,
                  std::vector<Tensor>& gweights) {
  const Stack s(g, x.dtype(), CUDNN_FWD_MODE_TRAINING);
  const bool lstm = g.cell == RnnCell::Lstm;
  CHAINER_ASSERT(size_t(reserve.nbytes()) == align(s.reserve_bytes) + s.weight_bytes, "rnn_backward: a reserve of ",
                 reserve.nbytes(), " bytes where this stack's forward makes ", align(s.reserve_bytes) + s.weight_bytes);
  (void)weights;  // the forward's copy in the reserve is what cuDNN reads
  void* reserved = reserve.raw_data();
  void* space = static_cast<char*>(reserved) + align(s.reserve_bytes);
  const std::shared_ptr<void> work = s.allocate(s.work_bytes);
  const int32_t* lengths = static_cast<const int32_t*>(s.lengths.get());
  CHAINER_CUDNN_CHECK(cudnnRNNBackwardData_v8(handle(), s.rnn, lengths, s.y, y.raw_data(), gy.raw_data(), s.x,
                                              gx.raw_data(), s.h, hx.raw_data(), ghy.raw_data(), ghx.raw_data(), s.h,
                                              lstm ? cx.raw_data() : nullptr, lstm ? gcy.raw_data() : nullptr,
                                              lstm ? gcx.raw_data() : nullptr, s.weight_bytes, space, s.work_bytes,
                                              work.get(), s.reserve_bytes, reserved));
  if (gweights.empty()) return;
  // The weights' gradients are added to their space: it starts at zero.
  const std::shared_ptr<void> grads = s.allocate(s.weight_bytes);
  CHAINER_CUDA_CHECK(cudaMemsetAsync(grads.get(), 0, s.weight_bytes, compute_stream()));
  CHAINER_CUDNN_CHECK(cudnnRNNBackwardWeights_v8(handle(), s.rnn, CUDNN_WGRAD_MODE_ADD, lengths, s.x, x.raw_data(),
                                                 s.h, hx.raw_data(), s.y, y.raw_data(), s.weight_bytes, grads.get(),
                                                 s.work_bytes, work.get(), s.reserve_bytes, reserved));
  s.copy_weights(grads.get(), gweights, true);
}

}  // namespace chainer::cuda::cudnn
