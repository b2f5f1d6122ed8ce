// This family's kernel table, and the family as the dispatch (core/cpu/family.h) sees it.
#include "core/cpu/kernels.h"

namespace chainer::cpu::CHAINER_ISA {

namespace {
// Constant-initialized (every entry a function's address): nothing of a family runs before the
// dispatch picks it, not even a static initializer, on a CPU that may lack its instructions.
constexpr Kernels kTable{
#define CHAINER_KERNEL(RETURN, NAME, PARAMETERS) .NAME = NAME,
#define CHAINER_LIBRARY_KERNEL(RETURN, NAME, PARAMETERS) .NAME = nullptr,  // none on the CPU
#include "core/ops/kernel_list.def"
};

// In the avx512_bf16 family, NAME is avx512's kernel but for gemm, batched_gemm and the
// convolutions, which the family defines again (core/cpu/kernels.h).
#if defined(CHAINER_ISA_AVX512_BF16)
constexpr Isa kIsa = Isa::Avx512Bf16;
#elif defined(CHAINER_ISA_AVX512)
constexpr Isa kIsa = Isa::Avx512;
#elif defined(CHAINER_ISA_AVX2)
constexpr Isa kIsa = Isa::Avx2;
#else
constexpr Isa kIsa = Isa::Generic;
#endif
constexpr KernelFamily kFamily{kIsa, &kTable, gemm_backend, gemm_blocking, widen_half, narrow_half};
}  // namespace

const KernelFamily& kernel_family() { return kFamily; }

}  // namespace chainer::cpu::CHAINER_ISA
