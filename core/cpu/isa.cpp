// Reading the CPU's instruction sets. A set counts only when the OS saves its registers across
// context switches (XCR0, read by xgetbv once cpuid says the OS enabled it): a kernel using
// registers the OS does not save would see them corrupted, or fault.
#include "core/cpu/isa.h"

#include <cpuid.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/util/error.h"

namespace chainer::cpu {

namespace {
// XCR0: the register state the OS saves (bit 1 SSE, 2 AVX's upper YMM halves, 5 the AVX-512
// opmasks, 6 the upper ZMM halves of registers 0-15, 7 ZMM registers 16-31).
uint64_t xcr0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

std::string brand_string() {
  unsigned a, b, c, d;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000004u) return "";
  char text[49] = {};
  for (unsigned leaf = 0; leaf < 3; ++leaf) {
    __get_cpuid(0x80000002u + leaf, &a, &b, &c, &d);
    const unsigned regs[4] = {a, b, c, d};
    std::memcpy(text + 16 * leaf, regs, 16);
  }
  std::string s(text);
  const size_t first = s.find_first_not_of(' '), last = s.find_last_not_of(' ');
  return first == std::string::npos ? "" : s.substr(first, last - first + 1);
}

std::string list(const std::vector<Isa>& isas) {
  std::string out;
  for (size_t i = 0; i < isas.size(); ++i)
    out += str(i == 0 ? "" : i + 1 == isas.size() ? " and " : ", ", isa_name(isas[i]));
  return out;
}

std::string cpu_name(const CpuFeatures& f) { return f.model.empty() ? "this CPU" : str("this CPU (", f.model, ")"); }
}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Generic: return "generic";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
    case Isa::Avx512Bf16: return "avx512_bf16";
  }
  return "?";
}

CpuFeatures cpu_features() {
  CpuFeatures f;
  f.model = brand_string();
  unsigned a, b, c, d;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return f;
  const bool osxsave = c & bit_OSXSAVE, avx = c & bit_AVX, fma = c & bit_FMA, f16c = c & bit_F16C;
  if (!osxsave || !avx) return f;
  const uint64_t saved = xcr0();
  const bool ymm_saved = (saved & 0x6) == 0x6, zmm_saved = (saved & 0xe6) == 0xe6;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return f;
  const bool avx2 = b & bit_AVX2;
  const bool avx512 = (b & bit_AVX512F) && (b & bit_AVX512BW) && (b & bit_AVX512VL) && (b & bit_AVX512DQ);
  f.avx2 = avx2 && fma && f16c && ymm_saved;
  f.avx512 = f.avx2 && avx512 && zmm_saved;
  // Subleaf 1 exists where subleaf 0's EAX (the highest subleaf) is at least 1.
  if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0) f.avx512_bf16 = f.avx512 && (a & (1u << 5));
  return f;
}

std::vector<Isa> supported_isas(const CpuFeatures& features) {
  std::vector<Isa> isas{Isa::Generic};
  if (features.avx2) isas.push_back(Isa::Avx2);
  if (features.avx512) isas.push_back(Isa::Avx512);
  if (features.avx512 && features.avx512_bf16) isas.push_back(Isa::Avx512Bf16);
  return isas;
}

Isa choose_isa(const char* requested, const CpuFeatures& features) {
  const std::vector<Isa> supported = supported_isas(features);
  if (!requested || !*requested) return supported.back();
  for (Isa isa : {Isa::Generic, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16}) {
    if (std::strcmp(requested, isa_name(isa)) != 0) continue;
    for (Isa s : supported)
      if (s == isa) return isa;
    throw Error(str("CHAINER_CPU_ISA is '", requested, "', but ", cpu_name(features), " supports only ",
                    list(supported)));
  }
  throw Error(str("CHAINER_CPU_ISA must be generic, avx2, avx512 or avx512_bf16 (or unset: the best this CPU supports), "
                  "not '",
                  requested, "'"));
}

Isa isa() {
  static const Isa chosen = choose_isa(std::getenv("CHAINER_CPU_ISA"), cpu_features());
  return chosen;
}

std::string isa_description() {
  const Isa in_use = isa();
  const CpuFeatures f = cpu_features();
  const Isa best = supported_isas(f).back();
  std::string out = isa_name(in_use);
  const std::string model = f.model.empty() ? "an unnamed CPU" : f.model;
  if (in_use == best) return str(out, " (", model, ")");
  return str(out, " (", model, "; CHAINER_CPU_ISA, the CPU has ", isa_name(best), ")");
}

}  // namespace chainer::cpu
