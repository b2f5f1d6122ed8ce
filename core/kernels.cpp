#include "core/kernels.h"

#include "core/cuda/runtime.h"

namespace chainer {

const Kernels& kernels_for(Device device) {
  if (device.is_cpu()) return cpu::kernel_table();
  return cuda::detail::runtime(device.index).kernels();
}

}  // namespace chainer
