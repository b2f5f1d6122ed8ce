// The CPU kernel families: every kernel source of core/cpu/ is compiled once per instruction set
// of core/cpu/isa.h, each copy for its own target and in its own namespace (chainer::cpu::generic,
// ::avx2, ::avx512; core/meson.build), and each family fills a kernel table of core/ops/kernels.h.
// The avx512_bf16 family is the avx512 family's kernels but for its own matrix products and
// bfloat16 convolutions (gemm.cpp and conv_bf16.cpp compiled with AVX512_BF16; core/cpu/kernels.h
// says how).
// This is the one place that chooses among them: kernel_table() is the table of the family of
// isa(), looked up once. No kernel tests the CPU itself.
#pragma once
#include <string>

#include "core/cpu/isa.h"
#include "core/tensor/float16.h"
#include "core/ops/kernels.h"

namespace chainer::cpu {

// One family: its instruction set, its kernel table, and what its matrix products run.
struct KernelFamily {
  Isa isa;
  const Kernels* kernels;
  // Which path its gemm takes: "eigen" (the generic family, or CHAINER_GEMM=eigen),
  // "packed-avx2", "packed-avx512" or "packed-avx512_bf16".
  const char* (*gemm_backend)();
  // Its packed GEMM's blocking as text, "KC 256, CW 128" ("Eigen's" where it has none).
  std::string (*gemm_blocking)();
  // The conversions of whole float16 arrays behind chainer::widen and narrow (core/tensor/float16.h).
  void (*widen_half)(const float16* src, float* dst, int64_t n);
  void (*narrow_half)(const float* src, float16* dst, int64_t n);
};

// Each family's, defined by its kernel_table.cpp.
namespace generic {
const KernelFamily& kernel_family();
}
namespace avx2 {
const KernelFamily& kernel_family();
}
namespace avx512 {
const KernelFamily& kernel_family();
}
namespace avx512_bf16 {
const KernelFamily& kernel_family();
}

// The family compiled for ISA.
const KernelFamily& kernel_family_for(Isa isa);
// The family in use: isa()'s.
const KernelFamily& kernel_family();

// Makes kernel_table() return TABLE instead of the family's (null: the family's again). For tests
// that wrap every kernel (tests/nn/functions/test_function_cases.cpp counts which kernels the
// function cases reach); set it while no op runs on another thread.
void set_kernel_table(const Kernels* table);

// The family in use's gemm_backend() and gemm_blocking() (the benchmarks print them).
const char* gemm_backend();
std::string gemm_blocking();

}  // namespace chainer::cpu
