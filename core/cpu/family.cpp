#include "core/cpu/family.h"

#include <atomic>

namespace chainer::cpu {

const KernelFamily& kernel_family_for(Isa isa) {
  switch (isa) {
    case Isa::Generic: return generic::kernel_family();
    case Isa::Avx2: return avx2::kernel_family();
    case Isa::Avx512: return avx512::kernel_family();
    case Isa::Avx512Bf16: return avx512_bf16::kernel_family();
  }
  return generic::kernel_family();
}

const KernelFamily& kernel_family() {
  static const KernelFamily& family = kernel_family_for(isa());
  return family;
}

namespace {
// The table kernel_table() returns: the family's unless a test set another.
std::atomic<const Kernels*>& table_in_use() {
  static std::atomic<const Kernels*> table{kernel_family().kernels};
  return table;
}
}  // namespace

const Kernels& kernel_table() { return *table_in_use().load(std::memory_order_acquire); }

void set_kernel_table(const Kernels* table) {
  table_in_use().store(table ? table : kernel_family().kernels, std::memory_order_release);
}

const char* gemm_backend() { return kernel_family().gemm_backend(); }

std::string gemm_blocking() { return kernel_family().gemm_blocking(); }

}  // namespace chainer::cpu
