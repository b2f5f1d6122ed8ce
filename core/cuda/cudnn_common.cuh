// What the cuDNN plugin's files share (core/cuda/conv.cu, core/cuda/cudnn_rnn.cu): the check
// macro that names the call and file:line, descriptors as owning values, relaxed capture mode
// for host queries, and the calling thread's handle for its current device, bound to the compute stream.
#pragma once
#include <cudnn.h>

#include <vector>

#include "core/cuda/common.cuh"
#include "core/ops/op_types.h"
#include "core/util/error.h"

#define CHAINER_CUDNN_CHECK(call)                                                                    \
  do {                                                                                               \
    const cudnnStatus_t chainer_status_ = (call);                                                    \
    if (chainer_status_ != CUDNN_STATUS_SUCCESS)                                                     \
      throw ::chainer::Error(::chainer::str("cuDNN error: ", #call, " failed: ",                      \
                                            cudnnGetErrorString(chainer_status_), " at ", __FILE__, \
                                            ":", __LINE__));                                         \
  } while (0)

namespace chainer::cuda {

// A cuDNN descriptor, created with the object and destroyed with it.
template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class Descriptor {
 public:
  Descriptor() { CHAINER_CUDNN_CHECK(Create(&d_)); }
  ~Descriptor() { Destroy(d_); }  // only frees host memory; never throws
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  operator T() const { return d_; }

 private:
  T d_ = nullptr;
};
using TensorDescriptor = Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;

// Relaxed capture mode for the calling thread while it lives: cuDNN's heuristic queries are host
// calls, but nothing promises they make no call that the default capture mode forbids.
class RelaxedCapture {
 public:
  RelaxedCapture() { CHAINER_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode_)); }
  ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }  // restoring cannot fail
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

namespace cudnn {
// The calling thread's handle for its current device (conv.cu: one per device and thread,
// created in relaxed capture mode, core/cuda/blas_handles.h).
cudnnHandle_t handle();

// The recurrent stacks (cudnn_rnn.cu): the kernel table's rnn_forward and rnn_backward.
void rnn_forward(const RnnGeometry& g, const Tensor& x, const Tensor& hx, const Tensor& cx,
                 const std::vector<Tensor>& weights, bool for_backward, Tensor& y, Tensor& hy, Tensor& cy,
                 Tensor& reserve);
void rnn_backward(const RnnGeometry& g, const Tensor& x, const Tensor& hx, const Tensor& cx,
                  const std::vector<Tensor>& weights, const Tensor& y, Tensor& reserve, const Tensor& gy,
                  const Tensor& ghy, const Tensor& gcy, Tensor& gx, Tensor& ghx, Tensor& gcx,
                  std::vector<Tensor>& gweights);
}  // namespace cudnn

}  // namespace chainer::cuda
