// cuDNN as a plugin of the CUDA plugin: the convolutions (core/cuda/conv.cu) and the recurrent
// stacks (core/cuda/cudnn_rnn.cu) live in libchainer_cudnn.so, which libchainer_cuda.so opens at
// the first convolution or recurrent stack, so that a
// machine without libcudnn still runs everything else on its GPUs (docs/design.md says why, and
// why the cuDNN plugin links libchainer_cuda.so rather than being handed its functions).
// libchainer_cudnn.so exports chainer_cudnn_plugin(), which returns the table below;
// CudnnLoader loads it once, whatever the threads, and turns a failure into an error naming the
// convolution, the device, the library it needs and the dynamic loader's message. Plain C++
// with no CUDA type: tests/core/cuda/test_cudnn_loader.cpp runs the loader on the host.
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>

#include "core/ops/kernels.h"

namespace chainer::cuda {

// What libchainer_cudnn.so gives libchainer_cuda.so. Changed whenever the table changes, so a
// plugin left from another build is refused with a message rather than called wrongly.
constexpr int kCudnnPluginInterface = 2;

struct CudnnPlugin {
  int interface = 0;       // kCudnnPluginInterface of the build that made the plugin
  int header_version = 0;  // CUDNN_VERSION of the cudnn.h it was compiled with (91900 for 9.19.0)
  size_t (*library_version)() = nullptr;  // cudnnGetVersion(): the libcudnn loaded
  // The kernel table's entries (core/ops/kernels.h), for the calling thread's current device.
  void (*convolution_2d)(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g,
                         Tensor& y) = nullptr;
  void (*convolution_2d_grad_data)(const Tensor& gy, const Tensor& W, const Conv2dGeometry& g,
                                   Tensor& gx) = nullptr;
  void (*convolution_2d_grad_filter)(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g,
                                     Tensor& gW) = nullptr;
  void (*rnn_forward)(const RnnGeometry& g, const Tensor& x, const Tensor& hx, const Tensor& cx,
                      const std::vector<Tensor>& weights, bool for_backward, Tensor& y, Tensor& hy, Tensor& cy,
                      Tensor& reserve) = nullptr;
  void (*rnn_backward)(const RnnGeometry& g, const Tensor& x, const Tensor& hx, const Tensor& cx,
                       const std::vector<Tensor>& weights, const Tensor& y, Tensor& reserve, const Tensor& gy,
                       const Tensor& ghy, const Tensor& gcy, Tensor& gx, Tensor& ghx, Tensor& gcx,
                       std::vector<Tensor>& gweights) = nullptr;
  // Creates the calling thread's cuDNN handle for its current device now, if it has none: a
  // graph capture is about to begin, and cudnnCreate is no call to make while capturing.
  void (*prepare_handle)() = nullptr;
};

// Opens FILE from the folder of the library that holds ANCHOR (the cuDNN plugin lies beside
// libchainer_cuda.so, in the build tree as installed) and returns its table, checked for
// kCudnnPluginInterface; or nullptr with WHY_NOT set to the path and the dynamic loader's
// message; with CHAINER_CUDNN=0 in the environment it opens nothing and says so. Unlike core/util/plugin.h's loader it tries no other place: the message is the one that
// says why this file did not load (a libcudnn.so.9 that is missing, say), and a plugin of
// another build found by the loader's search would not match this one.
const CudnnPlugin* open_cudnn_plugin(const void* anchor, const char* file, std::string& why_not);

class CudnnLoader {
 public:
  // Returns the table, or nullptr with WHY_NOT set.
  using Open = std::function<const CudnnPlugin*(std::string& why_not)>;

  // LIBRARY names what the plugin needs, for the message ("libcudnn.so.9"); OPEN loads it.
  CudnnLoader(std::string library, Open open);
  CudnnLoader(const CudnnLoader&) = delete;
  CudnnLoader& operator=(const CudnnLoader&) = delete;

  // The plugin, loaded at the first call from any thread (the others wait for it). A load that
  // failed is not tried again: the loader's answer will not change while the process runs.
  // Throws chainer::Error naming OP, cuda:DEVICE, the library and why it could not be loaded.
  const CudnnPlugin& get(const char* op, int device);
  // The plugin, loaded as get() loads it, or nullptr when it cannot be: never throws.
  const CudnnPlugin* try_get();
  // The plugin when a call of get() has loaded it, else nullptr; never loads.
  const CudnnPlugin* loaded() const { return plugin_.load(std::memory_order_acquire); }
  // How many times OPEN was called (1 after the first get, whatever happened).
  int opens() const { return opens_.load(); }

 private:
  const std::string library_;
  const Open open_;
  std::once_flag once_;
  std::atomic<const CudnnPlugin*> plugin_{nullptr};
  std::atomic<int> opens_{0};
  std::string why_not_;  // written once, under once_
};

}  // namespace chainer::cuda

// libchainer_cudnn.so's entry point: its table, valid as long as the plugin stays loaded (it is
// never unloaded).
extern "C" const chainer::cuda::CudnnPlugin* chainer_cudnn_plugin();
