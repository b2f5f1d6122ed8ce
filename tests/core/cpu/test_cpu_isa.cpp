// The CPU's instruction sets and the choice of the kernel family (core/cpu/isa.h,
// core/cpu/family.h): the choice for CPUs of each kind and for every value of CHAINER_CPU_ISA,
// the refusals, this CPU's features against what Linux reports, and the family in use.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "core/cpu/family.h"
#include "core/cpu/isa.h"
#include "core/util/error.h"

using namespace chainer;
using cpu::Isa;

namespace {
const cpu::CpuFeatures kZen3{"AMD EPYC 7763 64-Core Processor", true, false};
const cpu::CpuFeatures kZen4{"AMD EPYC 9654 96-Core Processor", true, true, true};
const cpu::CpuFeatures kSkylake{"Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", true, true, false};
const cpu::CpuFeatures kOld{"Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz", false, false};
}  // namespace

TEST_CASE("cpu isa: unset or empty, CHAINER_CPU_ISA leaves the best set the CPU supports") {
  CHECK(cpu::choose_isa(nullptr, kZen4) == Isa::Avx512Bf16);
  CHECK(cpu::choose_isa("", kZen4) == Isa::Avx512Bf16);
  CHECK(cpu::choose_isa(nullptr, kSkylake) == Isa::Avx512);
  CHECK(cpu::choose_isa(nullptr, kZen3) == Isa::Avx2);
  CHECK(cpu::choose_isa(nullptr, kOld) == Isa::Generic);
  CHECK(cpu::supported_isas(kZen4) == std::vector<Isa>{Isa::Generic, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16});
  CHECK(cpu::supported_isas(kSkylake) == std::vector<Isa>{Isa::Generic, Isa::Avx2, Isa::Avx512});
  // AVX512_BF16 counts only with the rest of AVX-512 (and the OS saving its registers).
  CHECK(cpu::supported_isas(cpu::CpuFeatures{"", true, false, true}) == std::vector<Isa>{Isa::Generic, Isa::Avx2});
  CHECK(cpu::supported_isas(kZen3) == std::vector<Isa>{Isa::Generic, Isa::Avx2});
  CHECK(cpu::supported_isas(kOld) == std::vector<Isa>{Isa::Generic});
}

TEST_CASE("cpu isa: CHAINER_CPU_ISA chooses any set the CPU supports, by its exact name") {
  for (Isa isa : {Isa::Generic, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16})
    CHECK(cpu::choose_isa(cpu::isa_name(isa), kZen4) == isa);
  CHECK(std::string(cpu::isa_name(Isa::Generic)) == "generic");
  CHECK(std::string(cpu::isa_name(Isa::Avx2)) == "avx2");
  CHECK(std::string(cpu::isa_name(Isa::Avx512)) == "avx512");
  CHECK(std::string(cpu::isa_name(Isa::Avx512Bf16)) == "avx512_bf16");
  CHECK(cpu::choose_isa("generic", kOld) == Isa::Generic);
}

TEST_CASE("cpu isa: a set the CPU lacks is an error naming the CPU and the sets it supports") {
  CHECK_THROWS_WITH(cpu::choose_isa("avx512", kZen3),
                    "CHAINER_CPU_ISA is 'avx512', but this CPU (AMD EPYC 7763 64-Core Processor) supports only "
                    "generic and avx2");
  CHECK_THROWS_WITH(cpu::choose_isa("avx512_bf16", kSkylake),
                    "CHAINER_CPU_ISA is 'avx512_bf16', but this CPU (Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz) "
                    "supports only generic, avx2 and avx512");
  CHECK_THROWS_WITH(cpu::choose_isa("avx2", kOld), Catch::Contains("supports only generic") &&
                                                       Catch::Contains("E5-2670"));
  CHECK_THROWS_WITH(cpu::choose_isa("avx2", cpu::CpuFeatures{}), "CHAINER_CPU_ISA is 'avx2', but this CPU supports only generic");
}

TEST_CASE("cpu isa: any other value of CHAINER_CPU_ISA is an error naming it and the values expected") {
  for (const char* bad : {"AVX2", "avx-512", "avx512f", " avx2", "avx2 ", "sse2", "native", "1", "avx512bf16",
                          "avx512_core_bf16", "AVX512_BF16"})
    CHECK_THROWS_WITH(cpu::choose_isa(bad, kZen4),
                      std::string("CHAINER_CPU_ISA must be generic, avx2, avx512 or avx512_bf16 (or unset: the best "
                                  "this CPU supports), not '") + bad + "'");
}

TEST_CASE("cpu isa: this CPU's features agree with the flags Linux reports") {
  // Linux lists avx2 and the avx512 flags only where the OS saves their registers, as
  // cpu_features() requires of XCR0.
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      for (std::string w; words >> w;) flags.insert(w);
      break;
    }
  REQUIRE_FALSE(flags.empty());  // the tests run on Linux
  const auto has = [&](const char* f) { return flags.count(f) > 0; };
  const cpu::CpuFeatures f = cpu::cpu_features();
  CAPTURE(f.model);
  CHECK(f.avx2 == (has("avx") && has("avx2") && has("fma") && has("f16c")));
  CHECK(f.avx512 == (f.avx2 && has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512dq")));
  CHECK(f.avx512_bf16 == (f.avx512 && has("avx512_bf16")));
}

TEST_CASE("cpu isa: the description names the set in use and the CPU, and the best set when CHAINER_CPU_ISA chose a lesser one") {
  const std::string d = cpu::isa_description();
  const cpu::CpuFeatures f = cpu::cpu_features();
  CHECK(d.rfind(std::string(cpu::isa_name(cpu::isa())) + " (", 0) == 0);
  if (!f.model.empty()) CHECK_THAT(d, Catch::Contains(f.model));
  const Isa best = cpu::supported_isas(f).back();
  if (cpu::isa() != best)
    CHECK_THAT(d, Catch::EndsWith(std::string("; CHAINER_CPU_ISA, the CPU has ") + cpu::isa_name(best) + ")"));
  else
    CHECK_THAT(d, Catch::EndsWith(")") && !Catch::Contains("CHAINER_CPU_ISA"));
}

TEST_CASE("cpu isa: each family carries its own set's kernels") {
  for (Isa isa : cpu::supported_isas(cpu::cpu_features())) {
    const cpu::KernelFamily& family = cpu::kernel_family_for(isa);
    CHECK(family.isa == isa);
    CHECK(family.kernels != nullptr);
  }
  CHECK(cpu::kernel_family_for(Isa::Generic).kernels != cpu::kernel_family_for(Isa::Avx2).kernels);
  CHECK(cpu::kernel_family_for(Isa::Avx2).kernels != cpu::kernel_family_for(Isa::Avx512).kernels);
  CHECK(cpu::kernel_family_for(Isa::Avx512).kernels != cpu::kernel_family_for(Isa::Avx512Bf16).kernels);
}

// Every family's table holds every kernel of core/ops/kernel_list.def but the libraries' (none on
// the CPU), each its own family's code (reading the tables runs nothing, so this holds for sets
// the CPU lacks too).
TEST_CASE("cpu isa: every family's table has every listed kernel, compiled for its own set") {
  REQUIRE(kKernelCount >= 44);
  const Kernels& generic = *cpu::kernel_family_for(Isa::Generic).kernels;
  const Kernels& avx512 = *cpu::kernel_family_for(Isa::Avx512).kernels;
  for (Isa isa : {Isa::Generic, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16}) {
    const Kernels& table = *cpu::kernel_family_for(isa).kernels;
    for (size_t i = 0; i < kKernelCount; ++i) {
      INFO(cpu::isa_name(isa) << " family, kernel " << kKernelNames[i]);
      if (kKernelFromLibrary[i]) {
        CHECK(kernel_entry(table, i) == nullptr);
        continue;
      }
      CHECK(kernel_entry(table, i) != nullptr);
      if (isa != Isa::Generic) CHECK(kernel_entry(table, i) != kernel_entry(generic, i));
      // avx512_bf16 is avx512's kernels with its own matrix products and the bfloat16
      // convolutions lowered onto them (core/cpu/kernels.h).
      if (isa == Isa::Avx512Bf16) {
        const std::string name = kKernelNames[i];
        const bool own = name == "gemm" || name == "batched_gemm" || name.rfind("convolution_2d", 0) == 0;
        CHECK((kernel_entry(table, i) != kernel_entry(avx512, i)) == own);
      }
    }
  }
  CHECK(kernel_entry(generic, kKernelCount) == nullptr);  // past the list
}
