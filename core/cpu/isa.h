/// @file
/// The instruction sets the CPU kernels are compiled for, and the one this process uses: the
/// best that this CPU and its operating system support, read once from cpuid and xgetbv, or the
/// one environment variable CHAINER_CPU_ISA names (generic, avx2, avx512 or avx512_bf16). The library itself
/// is compiled for baseline x86-64; only the kernels of the chosen set run its instructions.
#pragma once
#include <string>
#include <vector>

namespace chainer::cpu {

/// An instruction set the CPU kernels are compiled for, from the most portable up.
enum class Isa {
  Generic,  ///< baseline x86-64 (SSE2): plain C++ loops and Eigen's matrix products
  Avx2,     ///< AVX2 with FMA and F16C (Intel Haswell, AMD Zen and later)
  Avx512,   ///< AVX-512 F, BW, VL and DQ (Intel Skylake-SP, AMD Zen 4 and later)
  /// also AVX512_BF16's bfloat16 dot products (Intel Cooper Lake and Sapphire Rapids, AMD Zen 4
  /// and later; oneDNN's avx512_core_bf16)
  Avx512Bf16
};

/// ISA's name: "generic", "avx2", "avx512" or "avx512_bf16", as CHAINER_CPU_ISA spells it.
const char* isa_name(Isa isa);

/// What a CPU offers the kernels.
struct CpuFeatures {
  std::string model;    ///< the CPU's brand string ("AMD EPYC 7763 64-Core Processor"); "" when it has none
  bool avx2 = false;    ///< AVX, AVX2, FMA and F16C, with the OS saving the YMM registers
  bool avx512 = false;  ///< also AVX-512 F, BW, VL and DQ, with the OS saving the opmask and ZMM registers
  bool avx512_bf16 = false;  ///< also AVX512_BF16 (cpuid leaf 7 subleaf 1, EAX bit 5)
};

/// This CPU's features, from cpuid and (for the registers the OS saves) xgetbv.
CpuFeatures cpu_features();

/// The instruction sets a CPU with FEATURES runs, most portable first (generic always).
std::vector<Isa> supported_isas(const CpuFeatures& features);

/// The instruction set for a CPU with FEATURES when CHAINER_CPU_ISA is REQUESTED (null or empty:
/// the best FEATURES support). Throws chainer::Error for a value other than generic, avx2, avx512
/// and avx512_bf16, and for a set the CPU lacks, naming the CPU and the sets it supports.
Isa choose_isa(const char* requested, const CpuFeatures& features);

/// The instruction set of the CPU kernels in this process: choose_isa with CHAINER_CPU_ISA and
/// this CPU's features, decided at the first call and kept (a bad CHAINER_CPU_ISA throws at
/// every call, the first kernel's included).
Isa isa();

/// The instruction set in use and the CPU, as the apps print it: "avx512 (AMD EPYC 9B45)"; when
/// CHAINER_CPU_ISA chose a lesser set, also the best one ("avx2 (AMD EPYC 9B45; CHAINER_CPU_ISA,
/// the CPU has avx512)").
std::string isa_description();

}  // namespace chainer::cpu
