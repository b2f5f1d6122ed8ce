#include "core/cpu/family.h"

namespace chainer::cpu {

const KernelFamily& kernel_family_for(Isa isa) {
  switch (isa) {
    case Isa::Generic: return generic::kernel_family();
    case Isa::Avx2: return avx2::kernel_family();
    case Isa::Avx512: return avx512::kernel_family();
  }
  return generic::kernel_family();
}

const KernelFamily& kernel_family() {
  static const KernelFamily& family = kernel_family_for(isa());
  return family;
}

const Kernels& kernel_table() { return *kernel_family().kernels; }

const char* gemm_backend() { return kernel_family().gemm_backend(); }

std::string gemm_blocking() { return kernel_family().gemm_blocking(); }

}  // namespace chainer::cpu
